package main

import (
	"github.com/schollz/progressbar/v3"
)

// progress draws a bar on stderr when stderr is a terminal and --quiet is
// off; otherwise every method does nothing.
type progress struct {
	bar *progressbar.ProgressBar
}

func newProgress(io *streams, quiet bool, total int64, what string, bytes bool) *progress {
	if quiet || !io.errIsTTY() {
		return &progress{}
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(io.Err),
		progressbar.OptionSetDescription(what),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100_000_000), // 100 ms
		progressbar.OptionSetWidth(30),
	}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowCount())
	}
	return &progress{bar: progressbar.NewOptions64(total, opts...)}
}

func (p *progress) set(n int64) {
	if p.bar != nil {
		_ = p.bar.Set64(n)
	}
}

func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// setTotal moves the bar to n of a total that may have grown.
func (p *progress) setTotal(n, total int64) {
	if p.bar != nil {
		if total > 0 {
			p.bar.ChangeMax64(total)
		}
		_ = p.bar.Set64(n)
	}
}
