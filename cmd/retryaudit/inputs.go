package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/ingest/remote"
)

// inputFlags are the flags of every command that reads traces: from files,
// or from a running backend when an input is a URL; and the bounds on what
// reading may hold in memory (README, "Limits").
type inputFlags struct {
	maxDocMiB          int64
	maxSpans           int
	maxAttrs           int
	service, operation string
	since, until       string
	lookback           time.Duration
	limitTraces        int
	timeout            time.Duration

	now func() time.Time // the clock relative times count from (tests fix it)
}

// Defaults of a search of a backend.
const (
	defaultLookback    = time.Hour
	defaultLimitTraces = 100
)

func (f *inputFlags) bind(fs *pflag.FlagSet) {
	fs.Int64Var(&f.maxDocMiB, "max-document", ingest.DefaultMaxDocumentBytes>>20, "largest single document (JSON file, line or protobuf message) to hold in memory, in `MiB`")
	fs.IntVar(&f.maxSpans, "max-spans", ingest.DefaultMaxSpans, "most spans to read over all inputs; more is an error")
	fs.IntVar(&f.maxAttrs, "max-attributes", ingest.DefaultMaxAttributes, "most attributes (Jaeger: tags) of one span, resource, event or link; more is an error")
	fs.StringVar(&f.service, "service", "", "keep traces with a span of `SERVICE` (a backend URL searches it)")
	fs.StringVar(&f.operation, "operation", "", "keep traces with a span named `NAME` (of --service, when given)")
	fs.StringVar(&f.since, "since", "", "keep traces starting at or after `TIME` (RFC 3339, or a duration ago: 2h)")
	fs.StringVar(&f.until, "until", "", "keep traces starting before `TIME` (RFC 3339, or a duration ago)")
	fs.DurationVar(&f.lookback, "lookback", 0, "keep traces starting within `DURATION` before --until (a backend URL: default 1h)")
	fs.IntVar(&f.limitTraces, "limit-traces", 0, "keep the `N` most recent traces (a backend URL: default 100 per search)")
	fs.DurationVar(&f.timeout, "timeout", remote.DefaultTimeout, "give up on a backend request after `DURATION`")
}

func (f *inputFlags) validate() error {
	if f.maxDocMiB <= 0 || f.maxDocMiB > 1<<20 {
		return usageError{fmt.Errorf("--max-document %d: want a size in MiB from 1 to 1048576", f.maxDocMiB)}
	}
	if f.maxSpans <= 0 {
		return usageError{fmt.Errorf("--max-spans %d: want a positive number of spans, e.g. --max-spans 5000000", f.maxSpans)}
	}
	if f.maxAttrs <= 0 {
		return usageError{fmt.Errorf("--max-attributes %d: want a positive number, e.g. --max-attributes 5000", f.maxAttrs)}
	}
	if f.limitTraces < 0 {
		return usageError{fmt.Errorf("--limit-traces %d: want a positive number", f.limitTraces)}
	}
	if f.lookback < 0 || f.timeout <= 0 {
		return usageError{fmt.Errorf("--lookback and --timeout want positive durations")}
	}
	if f.lookback > 0 && f.since != "" {
		return usageError{fmt.Errorf("--lookback and --since both set the start of the window: give one")}
	}
	_, _, err := f.window(false)
	return err
}

// window resolves --since, --until and --lookback to Unix nanoseconds (0
// when unbounded). search gives a backend search its defaults: until now,
// a lookback of an hour.
func (f *inputFlags) window(search bool) (since, until int64, err error) {
	now := time.Now
	if f.now != nil {
		now = f.now
	}
	t0 := now()
	parse := func(flag, v string) (int64, error) {
		if v == "" {
			return 0, nil
		}
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return t0.Add(-d).UnixNano(), nil
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return 0, usageError{fmt.Errorf("--%s %q: want an RFC 3339 time (2026-11-30T10:00:00Z) or a duration ago (2h)", flag, v)}
		}
		return t.UnixNano(), nil
	}
	if since, err = parse("since", f.since); err != nil {
		return 0, 0, err
	}
	if until, err = parse("until", f.until); err != nil {
		return 0, 0, err
	}
	if search && until == 0 {
		until = t0.UnixNano()
	}
	lookback := f.lookback
	if search && lookback == 0 && since == 0 {
		lookback = defaultLookback
	}
	if lookback > 0 {
		end := until
		if end == 0 {
			end = t0.UnixNano()
		}
		since = end - int64(lookback)
	}
	if since != 0 && until != 0 && since >= until {
		return 0, 0, usageError{fmt.Errorf("the window from --since/--lookback to --until is empty")}
	}
	return since, until, nil
}

// read decodes the named inputs ("-" is stdin, a URL a backend), then keeps
// the traces the filter flags select. progress, when not nil, is told how
// many bytes have been read so far over all files.
func (f *inputFlags) read(ctx context.Context, io *streams, names []string, progress func(read int64)) (*ingest.Set, error) {
	opts := ingest.Options{MaxDocumentBytes: f.maxDocMiB << 20, Limits: ingest.Limits{MaxSpans: f.maxSpans, MaxAttributes: f.maxAttrs}}
	if progress != nil {
		var before, current int64
		var last string
		opts.Progress = func(name string, read, _ int64) {
			if name != last {
				before += current
				last, current = name, 0
			}
			current = read
			progress(before + current)
		}
	}
	set := ingest.NewSet()
	var files []string
	flush := func() error {
		err := set.ReadFiles(ctx, files, io.In, opts)
		files = files[:0]
		return err
	}
	fetched := false
	for _, name := range names {
		if !remote.IsURL(name) {
			files = append(files, name)
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		if err := f.fetch(ctx, io, set, name, opts); err != nil {
			return nil, err
		}
		fetched = true
	}
	if err := flush(); err != nil {
		return nil, err
	}
	since, until, err := f.window(false)
	if err != nil {
		return nil, err
	}
	filter := ingest.Filter{Service: f.service, Operation: f.operation, Since: since, Until: until,
		MaxTraces: f.limitTraces, Unique: fetched}
	if !filter.IsZero() {
		if kept, _ := set.Apply(filter); kept == 0 {
			return nil, fmt.Errorf("no trace matches %s", f.describe())
		}
	}
	return set, nil
}

// fetch searches the backend at rawURL with the filter flags.
func (f *inputFlags) fetch(ctx context.Context, io *streams, set *ingest.Set, rawURL string, opts ingest.Options) error {
	since, until, err := f.window(true)
	if err != nil {
		return err
	}
	limit := f.limitTraces
	if limit == 0 {
		limit = defaultLimitTraces
	}
	q := remote.Query{Service: f.service, Operation: f.operation,
		Start: time.Unix(0, since), End: time.Unix(0, until), Limit: limit}
	bar := newProgress(io, false, -1, "fetch", false)
	defer bar.done()
	ropts := remote.Options{Timeout: f.timeout, Decode: ingest.Options{MaxDocumentBytes: opts.MaxDocumentBytes, Limits: opts.Limits},
		Progress: func(done, total int) { bar.setTotal(int64(done), int64(total)) }}
	return remote.Fetch(ctx, set, rawURL, q, ropts)
}

// describe names the filter flags set, for messages.
func (f *inputFlags) describe() string {
	s := ""
	add := func(flag, v string) {
		if v != "" {
			if s != "" {
				s += " "
			}
			s += "--" + flag + " " + v
		}
	}
	add("service", f.service)
	add("operation", f.operation)
	add("since", f.since)
	add("until", f.until)
	if f.lookback > 0 {
		add("lookback", f.lookback.String())
	}
	if s == "" {
		return "the inputs"
	}
	return s
}

// inputBytes is the total size of the named regular files (directories,
// stdin and URLs count 0), the length of an ingest progress bar.
func inputBytes(names []string) int64 {
	var total int64
	for _, name := range names {
		if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
			total += st.Size()
		}
	}
	return total
}
