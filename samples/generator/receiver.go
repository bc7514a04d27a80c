package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// receiver is a minimal OTLP/HTTP trace receiver on 127.0.0.1: it accepts
// protobuf ExportTraceServiceRequests on /v1/traces and keeps them in arrival
// order.
type receiver struct {
	srv *http.Server
	url string

	mu       sync.Mutex
	requests []ptrace.Traces
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{url: "http://" + ln.Addr().String() + "/v1/traces"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", rc.export)
	rc.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go rc.srv.Serve(ln)
	return rc, nil
}

func (rc *receiver) export(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "unsupported content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" {
		http.Error(w, "unsupported content encoding "+enc, http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// ExportTraceServiceRequest and TracesData share one wire format.
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.requests = append(rc.requests, td)
	rc.mu.Unlock()
	// An empty body is an empty ExportTraceServiceResponse: full success.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// stop closes the receiver and returns what it received.
func (rc *receiver) stop() []ptrace.Traces {
	rc.srv.Close()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.requests
}

// writeOTLP writes the requests in the OpenTelemetry Collector file
// exporter's two layouts: JSON, one request per line, and protobuf, each
// request preceded by its length as a 4-byte big-endian integer.
func writeOTLP(jsonlPath, binpbPath string, requests []ptrace.Traces) error {
	var jm ptrace.JSONMarshaler
	var pm ptrace.ProtoMarshaler
	return writeFiles(map[string]func(w io.Writer) error{
		jsonlPath: func(w io.Writer) error {
			for _, td := range requests {
				b, err := jm.MarshalTraces(td)
				if err != nil {
					return err
				}
				if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
					return err
				}
			}
			return nil
		},
		binpbPath: func(w io.Writer) error {
			for _, td := range requests {
				b, err := pm.MarshalTraces(td)
				if err != nil {
					return err
				}
				if err := binary.Write(w, binary.BigEndian, uint32(len(b))); err != nil {
					return err
				}
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// writeFiles creates each file and fills it through a buffered writer,
// gzip-compressed where the name ends in ".gz". The gzip header carries no
// name and no time, so only the content decides the bytes.
func writeFiles(files map[string]func(io.Writer) error) error {
	for path, fill := range files {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		bw := bufio.NewWriter(f)
		if strings.HasSuffix(path, ".gz") {
			var zw *gzip.Writer
			zw, err = gzip.NewWriterLevel(bw, gzip.BestCompression)
			if err == nil {
				err = fill(zw)
				if cerr := zw.Close(); err == nil {
					err = cerr
				}
			}
		} else {
			err = fill(bw)
		}
		if err == nil {
			err = bw.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// capture starts a receiver, has start bring a mesh up that exports to
// it, sends the root requests with the drive start returns, shuts the mesh
// down with its stop (which flushes the spans) and returns the export
// requests the receiver got, with the summary's first lines for roots
// root requests.
func capture(ctx context.Context, roots int, start func(otlpURL string) (drive func() (string, error), stop func(context.Context) error, err error)) ([]ptrace.Traces, string, error) {
	rc, err := startReceiver()
	if err != nil {
		return nil, "", err
	}
	drive, stop, err := start(rc.url)
	if err != nil {
		return nil, "", err
	}
	answers, err := drive()
	if err != nil {
		return nil, "", err
	}
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := stop(stopCtx); err != nil {
		return nil, "", err
	}
	requests := rc.stop()
	return requests, exportSummary(roots, answers, requests), nil
}

// exportSummary is the first lines every scenario prints: its root
// requests, how they were answered, and the spans the receiver got.
func exportSummary(roots int, answers any, requests []ptrace.Traces) string {
	return fmt.Sprintf("  %d root requests, answers %v\n  %d spans in %d OTLP export requests\n", roots, answers, spanCount(requests), len(requests))
}

// spanCount is how many spans the export requests carry.
func spanCount(requests []ptrace.Traces) int {
	spans := 0
	for _, td := range requests {
		spans += td.SpanCount()
	}
	return spans
}

// writeSample writes a scenario's three trace files and its truth.json
// (whatever truth type the scenario has) into dir, creating it.
func writeSample(dir string, requests []ptrace.Traces, t any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeOTLP(filepath.Join(dir, fileOTLPJSON), filepath.Join(dir, fileOTLPProto), requests); err != nil {
		return err
	}
	if err := writeJaeger(filepath.Join(dir, fileJaeger), requests); err != nil {
		return err
	}
	return writeTruth(filepath.Join(dir, fileTruth), t)
}
