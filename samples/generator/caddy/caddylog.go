package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
)

// captureModule is the log writer module that keeps Caddy's log in
// memory (captured) for caddyTries to read after the run.
const captureModule = "caddymesh_capture"

func init() {
	caddy.RegisterModule(captureWriter{})
}

// captured is Caddy's whole log of the run, JSON lines.
var captured logBuffer

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) Close() error { return nil }

func (b *logBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// captureWriter is a caddy.WriterOpener that writes to captured.
type captureWriter struct{}

func (captureWriter) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "caddy.logging.writers." + captureModule, New: func() caddy.Module { return new(captureWriter) }}
}

func (captureWriter) String() string                      { return captureModule }
func (captureWriter) WriterKey() string                   { return captureModule }
func (captureWriter) OpenWriter() (io.WriteCloser, error) { return &captured, nil }

// caddyTries reads the "upstream roundtrip" lines of Caddy's JSON log,
// one a try (reverse_proxy's reverseProxy logs each round trip, failed
// dials included), and lists them by the item of the request's URI
// (/items/{id}), in log order.
func caddyTries(logs []byte) (map[string][]try, error) {
	tries := map[string][]try{}
	sc := bufio.NewScanner(bytes.NewReader(logs))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var l struct {
			Msg      string `json:"msg"`
			Upstream string `json:"upstream"`
			Status   int    `json:"status"`
			Error    string `json:"error"`
			Request  struct {
				URI string `json:"uri"`
			} `json:"request"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("caddy log line %d: %w", line, err)
		}
		if l.Msg != "upstream roundtrip" {
			continue
		}
		item, ok := strings.CutPrefix(l.Request.URI, "/items/")
		if !ok || l.Upstream == "" || (l.Status == 0) == (l.Error == "") {
			return nil, fmt.Errorf("caddy log line %d: a round trip without item, upstream, or exactly one of status and error: %s", line, sc.Bytes())
		}
		tries[item] = append(tries[item], try{Upstream: l.Upstream, Status: l.Status, Error: l.Error})
	}
	return tries, sc.Err()
}
