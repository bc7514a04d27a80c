package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/retryaudit/retryaudit/samples/synth"
)

// The peak resident set size every bomb must stay under, and the size at
// which the launcher kills a run so that a regression cannot exhaust the
// machine the tests run on.
const (
	bombRSSLimit = 1 << 30
	bombRSSKill  = 3 << 29
)

// rssLauncherEnv, when set, makes the test binary a launcher (see
// TestMain): it runs its arguments as a command, kills it past
// bombRSSKill, and writes the command's peak RSS in KiB to the file the
// variable names. A launcher is needed because Linux carries the RSS high
// water mark of the process that execs into a child's rusage, and the
// child of this large test process would report the test's memory.
const rssLauncherEnv = "RETRYAUDIT_RSS_OUT"

// launchMeasured is the launcher's main: it returns the command's exit code.
func launchMeasured(out string, argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	stop := make(chan struct{})
	killed := make(chan bool, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				killed <- false
				return
			case <-tick.C:
				if vmRSS(cmd.Process.Pid) > bombRSSKill {
					_ = cmd.Process.Kill()
					killed <- true
					return
				}
			}
		}
	}()
	_ = cmd.Wait()
	close(stop)
	maxKB := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	result := strconv.FormatInt(maxKB, 10)
	if <-killed {
		result += " killed"
	}
	if err := os.WriteFile(out, []byte(result), 0o644); err != nil {
		return 125
	}
	return cmd.ProcessState.ExitCode()
}

// vmRSS reads a process's resident set size in bytes from /proc.
func vmRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// buildBinary builds the command into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	exe := filepath.Join(dir, "retryaudit")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// writeBomb writes a generated input through a compressor into path.
func writeBomb(t *testing.T, path, compression string, gen func(w io.Writer) error) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var zw io.WriteCloser
	switch compression {
	case "gzip":
		zw, err = gzip.NewWriterLevel(f, gzip.BestSpeed)
	case "zstd":
		zw, err = zstd.NewWriter(f, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	}
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriterSize(zw, 1<<20)
	if err := gen(bw); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// repeat writes b n times.
func repeat(w io.Writer, b []byte, n int) error {
	for range n {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// bytesField appends protobuf field num holding a message of size bytes
// whose content the caller writes after it.
func bytesField(b []byte, num protowire.Number, size int) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.BytesType), uint64(size))
}

// emptyAttrSpan writes one OTLP request holding one span with n empty
// attributes (two bytes each): 5e7 of them took 6–8 GB in pdata.
func emptyAttrSpan(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		var head []byte
		head = bytesField(head, 1, 16)
		head = append(head, bytes.Repeat([]byte{1}, 16)...)
		head = bytesField(head, 2, 8)
		head = append(head, bytes.Repeat([]byte{2}, 8)...)
		spanSize := len(head) + 2*n
		scopeSize := protowire.SizeTag(2) + protowire.SizeVarint(uint64(spanSize)) + spanSize
		rsSize := protowire.SizeTag(2) + protowire.SizeVarint(uint64(scopeSize)) + scopeSize
		var pre []byte
		pre = bytesField(pre, 1, rsSize)
		pre = bytesField(pre, 2, scopeSize)
		pre = bytesField(pre, 2, spanSize)
		if _, err := w.Write(append(pre, head...)); err != nil {
			return err
		}
		return repeat(w, []byte{9<<3 | 2, 0}, n)
	}
}

// distinctNames writes a length-prefixed OTLP protobuf stream of n spans
// whose name, peer and status message are all distinct: every string the
// Set interns is new.
func distinctNames(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		const perRequest = 512
		str := func(b []byte, num protowire.Number, s string) []byte {
			return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
		}
		for first := 0; first < n; first += perRequest {
			var scope []byte
			for i := first; i < min(n, first+perRequest); i++ {
				sp := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bytes.Repeat([]byte{7}, 16))
				sp = protowire.AppendTag(sp, 2, protowire.BytesType)
				sp = protowire.AppendBytes(sp, protowire.AppendFixed64(nil, uint64(i+1)))
				sp = str(sp, 5, fmt.Sprintf("op-%012d", i))
				sp = protowire.AppendVarint(protowire.AppendTag(sp, 6, protowire.VarintType), 3)
				sp = protowire.AppendFixed64(protowire.AppendTag(sp, 7, protowire.Fixed64Type), 1_700_000_000_000_000_000)
				sp = protowire.AppendFixed64(protowire.AppendTag(sp, 8, protowire.Fixed64Type), 1_700_000_000_001_000_000)
				kv := str(nil, 1, "peer.service")
				kv = protowire.AppendBytes(protowire.AppendTag(kv, 2, protowire.BytesType), str(nil, 1, fmt.Sprintf("peer-%012d", i)))
				sp = protowire.AppendBytes(protowire.AppendTag(sp, 9, protowire.BytesType), kv)
				sp = protowire.AppendBytes(protowire.AppendTag(sp, 15, protowire.BytesType), str(nil, 2, fmt.Sprintf("msg-%012d", i)))
				scope = protowire.AppendBytes(protowire.AppendTag(scope, 2, protowire.BytesType), sp)
			}
			rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), scope)
			req := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
			if _, err := w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(req)))); err != nil {
				return err
			}
			if _, err := w.Write(req); err != nil {
				return err
			}
		}
		return nil
	}
}

// zipkinTags writes one Zipkin v2 span with n distinct empty tags: 10^7
// of them took 986 MiB while encoding/json built their map.
func zipkinTags(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		if _, err := io.WriteString(w, `[{"traceId":"83a9efd15c1c98a977e0711cc93ee28b","id":"e127af99e3b3e074","name":"x",`+
			`"timestamp":1706678909209712,"duration":10,"localEndpoint":{"serviceName":"a"},"tags":{"0":""`); err != nil {
			return err
		}
		b := make([]byte, 0, 32)
		for i := 1; i < n; i++ {
			b = append(strconv.AppendInt(append(b[:0], `,"`...), int64(i), 36), `":""`...)
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "}}]")
		return err
	}
}

// oneDocument writes one OTLP JSON request of about size bytes, made of
// span (JSON text) over and over.
func oneDocument(span string, size int) func(io.Writer) error {
	return func(w io.Writer) error {
		if _, err := io.WriteString(w, `{"resourceSpans":[{"resource":{},"scopeSpans":[{"spans":[`+span); err != nil {
			return err
		}
		if err := repeat(w, []byte(","+span), size/(len(span)+1)); err != nil {
			return err
		}
		_, err := io.WriteString(w, `]}]}]}`)
		return err
	}
}

// TestBombMemory runs the built binary on generated inputs of every shape
// that exhausted memory or the stack (issue 12) and measures its peak RSS
// with the kernel's rusage: each must end with an error naming the input
// and a position, never a crash, under bombRSSLimit.
func TestBombMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates bombs of up to 2.5 GB decompressed")
	}
	dir := t.TempDir()
	exe := buildBinary(t, dir)
	span := `{"traceId":"83a9efd15c1c98a977e0711cc93ee28b","spanId":"e127af99e3b3e074","name":"GET /items/{id}","kind":3,` +
		`"startTimeUnixNano":"1706678909209712000","endTimeUnixNano":"1706678909219712000",` +
		`"attributes":[{"key":"http.request.method","value":{"stringValue":"GET"}},{"key":"url.full","value":{"stringValue":"http://inventory:8080/items/42"}}],"status":{}}`
	var stream bytes.Buffer
	if err := synth.WriteProtoStream(&stream, synth.Requests(4*synth.SpansPerRequest, 1)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, compression string
		gen               func(io.Writer) error
		want              string // in the error; "" for an input that must decode
	}{
		{"JSON arrayValue nested 1e6 deep (28 MB)", "gzip", func(w io.Writer) error {
			const depth = 1_000_000
			if _, err := io.WriteString(w, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"x","value":`); err != nil {
				return err
			}
			if err := repeat(w, []byte(`{"arrayValue":{"values":[`), depth); err != nil {
				return err
			}
			return repeat(w, []byte(`]}}`), depth)
		}, "levels of nesting"},
		{"5e7 empty attributes in one protobuf span (100 MB)", "gzip", emptyAttrSpan(50_000_000), "attributes"},
		{"protobuf stream of 1e7 spans (2.5 GB)", "zstd", func(w io.Writer) error {
			return repeat(w, stream.Bytes(), 10_000_000/(4*synth.SpansPerRequest))
		}, "spans (raise it with --max-spans)"},
		{`1.1 GB of {"resourceSpans":[`, "gzip", func(w io.Writer) error {
			return repeat(w, []byte(`{"resourceSpans":[`), 1_100_000_000/len(`{"resourceSpans":[`))
		}, "exceeds"},
		{"2e6 spans of distinct names, peers and messages", "zstd", distinctNames(2_000_000), "bytes of distinct strings and links"},
		{"a Zipkin span of 1.2e7 distinct tags (132 MB)", "gzip", zipkinTags(12_000_000), "tags in one span"},
		{"a valid 120 MB document with base64 ids (pdata's fallback)", "gzip", oneDocument(strings.NewReplacer(
			`"83a9efd15c1c98a977e0711cc93ee28b"`, `"g6nv0VwcmKl34HEcyT7iiw=="`, `"e127af99e3b3e074"`, `"4SevmeOz4HQ="`).Replace(span), 120_000_000), ""},
		{"a valid 1.05 GB document", "gzip", oneDocument(span, 1_050_000_000), "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "bomb")
			writeBomb(t, path, tc.compression, tc.gen)
			defer os.Remove(path)
			rssFile := filepath.Join(dir, "rss")
			cmd := exec.Command(os.Args[0], exe, "ingest", path)
			cmd.Env = append(os.Environ(), rssLauncherEnv+"="+rssFile)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			elapsed := time.Since(start)
			measured, rerr := os.ReadFile(rssFile)
			if rerr != nil {
				t.Fatalf("no measurement: %v (%v)\n%s", rerr, err, stderr.Bytes())
			}
			fields := strings.Fields(string(measured))
			kb, _ := strconv.ParseInt(fields[0], 10, 64)
			t.Logf("peak RSS %d MiB in %s: %s", kb>>10, elapsed.Round(time.Millisecond), strings.TrimSpace(stderr.String()))
			if len(fields) > 1 {
				t.Fatalf("killed past %d MiB", bombRSSKill>>20)
			}
			if kb<<10 >= bombRSSLimit {
				t.Errorf("peak RSS %d MiB, want under %d MiB", kb>>10, bombRSSLimit>>20)
			}
			msg := stderr.String()
			if tc.want == "" { // valid input: it must be read whole
				if err != nil {
					t.Errorf("failed: %v\n%.2000s", err, msg)
				}
				return
			}
			if code := cmd.ProcessState.ExitCode(); code != exitFailure {
				t.Errorf("exit code %d, want %d", code, exitFailure)
			}
			if strings.Contains(msg, "fatal error") || strings.Contains(msg, "panic") {
				t.Fatalf("crashed:\n%.2000s", msg)
			}
			if !strings.Contains(msg, "retryaudit: ingest "+path+": ") || !strings.Contains(msg, "offset ") && !strings.Contains(msg, "line ") {
				t.Errorf("error names no input and position: %s", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not say %q", msg, tc.want)
			}
		})
	}
}
