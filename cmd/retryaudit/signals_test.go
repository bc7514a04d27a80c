package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// otlpLine is one OTLP JSON request of one span, on one line.
const otlpLine = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},"scopeSpans":[{"spans":[` +
	`{"traceId":"83a9efd15c1c98a977e0711cc93ee28b","spanId":"e127af99e3b3e074","name":"GET","kind":2,` +
	`"startTimeUnixNano":"1706678909209712000","endTimeUnixNano":"1706678909219712000","status":{}}]}]}]}` + "\n"

// TestSignals interrupts the built binary while it reads: the first
// SIGINT must end it with exit code 130 within a second, whether its
// reader sees the cancellation (a stream that never ends) or is blocked
// where no context reaches (stdin that never sends). That a second SIGINT
// ends it at once is TestWatchInterrupts' (a wall-clock bound shorter than
// the grace failed under load: 1.035 s against 400 ms).
func TestSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildBinary(t, t.TempDir())
	for _, tc := range []struct {
		name   string
		args   []string
		feed   bool          // write an endless stream of requests to stdin
		within time.Duration // from the first signal to the exit
		busy   time.Duration // CPU time it must have used before the first signal
		// blocked: signal it only once a thread of it is blocked reading
		// stdin (an interrupt that comes before main has set up its
		// handler kills the process: exit code -1 within 17 ms, seen
		// under a load average of 26).
		blocked bool
	}{
		// A process that ignored the signal would run to the 10 s
		// timeout; 3 s leaves a loaded machine room to schedule it (a
		// 1 s bound failed at 1.14 s under a load average of 15).
		{"ingest of an endless stream", []string{"ingest", "-"}, true, 3 * time.Second, 0, false},
		{"audit of an endless stream", []string{"audit", "-q", "-"}, true, 3 * time.Second, 0, false},
		{"ingest blocked on stdin", []string{"ingest", "-"}, false, 3 * time.Second, 0, true},
		// Interrupted inside the event loop (reading and building the
		// model take under 0.3 s of CPU): an hour of simulated time at
		// 200 requests a second would run for minutes.
		{"replay in its event loop", []string{"replay", "--policy", "observed", "--rate", "200", "--duration", "3600s", "--max-events", "100000000",
			"../../samples/mixed/traces.otlp.jsonl.gz"}, false, 3 * time.Second, 500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(exe, tc.args...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var fed atomic.Int64
			if tc.feed {
				go func() {
					line := []byte(strings.Repeat(otlpLine, 64))
					for {
						n, err := stdin.Write(line)
						fed.Add(int64(n))
						if err != nil {
							return
						}
					}
				}()
			}
			defer stdin.Close()
			// Let it start and, when fed, read for a while.
			time.Sleep(300 * time.Millisecond)
			for deadline := time.Now().Add(10 * time.Second); tc.feed && fed.Load() < 4<<20 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			for deadline := time.Now().Add(20 * time.Second); cpuTime(cmd.Process.Pid) < tc.busy && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			for deadline := time.Now().Add(20 * time.Second); tc.blocked && !readingStdin(cmd.Process.Pid) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			sent := time.Now()
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("still running 10 s after SIGINT; stderr:\n%s", stderr.Bytes())
			}
			took := time.Since(sent)
			t.Logf("exited %s after the first SIGINT, code %d, having been fed %d bytes", took.Round(time.Millisecond), cmd.ProcessState.ExitCode(), fed.Load())
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit code %d, want 130; stderr:\n%s", code, stderr.Bytes())
			}
			if took > tc.within {
				t.Errorf("took %s to exit, want at most %s", took, tc.within)
			}
			if !strings.Contains(stderr.String(), "retryaudit: interrupted") {
				t.Errorf("stderr does not say it was interrupted:\n%s", stderr.Bytes())
			}
		})
	}
}

// readingStdin says whether a thread of the process is in a read(2) of
// file descriptor 0, from /proc/PID/task/*/syscall (syscall number 0 on
// x86-64 and the first argument; false where it cannot tell, and the
// 300 ms sleep before it is all the test waits).
func readingStdin(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), "0 0x0 ") {
			return true
		}
	}
	return false
}

// cpuTime is the user and system CPU time a running process has used, from
// /proc (0 when it cannot be read): how far it has got, whatever the load.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): utime and stime are the 12th and 13th, in clock ticks.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// TestWatchInterrupts drives the interrupt handler with its grace as a
// parameter, so each path is decided by the signals sent, not by how fast
// a loaded machine schedules a process: with an hour's grace only a second
// interrupt can end the run, and with none the first ends it; a run that
// finishes is never ended.
func TestWatchInterrupts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		grace    time.Duration
		signals  []os.Signal
		finishes bool // the run returns after the signals
		want     int  // the exit code, or -1 for no exit
	}{
		{"second interrupt", time.Hour, []os.Signal{os.Interrupt, os.Interrupt}, false, 130},
		{"grace runs out", 0, []os.Signal{syscall.SIGTERM}, false, 143},
		{"run stops in time", time.Hour, []os.Signal{os.Interrupt}, true, -1},
		{"no interrupt", 0, nil, true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			done := make(chan struct{})
			exited := make(chan int, 1)
			returned := make(chan struct{})
			var cancelled atomic.Bool
			var caught atomic.Int32
			go func() {
				watchInterrupts(sigs, done, func() { cancelled.Store(true) }, &caught, tc.grace, func(code int) { exited <- code })
				close(returned)
			}()
			for _, s := range tc.signals {
				sigs <- s
			}
			if tc.finishes {
				// The run returns once it has seen the cancellation.
				for deadline := time.Now().Add(10 * time.Second); len(tc.signals) > 0 && !cancelled.Load() && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				close(done)
			}
			select {
			case code := <-exited:
				if code != tc.want {
					t.Errorf("exit(%d), want %d", code, tc.want)
				}
			case <-returned:
				if tc.want >= 0 {
					t.Errorf("returned without exit(%d)", tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("neither exited nor returned in 10 s (want exit %d)", tc.want)
			}
			if len(tc.signals) > 0 && !cancelled.Load() {
				t.Error("the first interrupt did not cancel the run")
			}
			if want := len(tc.signals) > 0; want && caught.Load() == 0 {
				t.Error("the first interrupt's number was not recorded")
			}
			if !tc.finishes {
				close(done)
			}
		})
	}
}
