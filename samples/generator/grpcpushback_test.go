package main

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestGRPCPushbackScenario runs grpc-pushback with one root request per
// case end to end and holds its files, its truth and the traces to each
// other: every attempt grpc-go's retryPolicy made is a CLIENT span of its
// own, as many as the truth counts; the waits after a pushback are the
// truth's pushback waits and last at least the 400ms the server asked for;
// the wait after a pushback restarts the backoff (25ms ±20%, not the
// 100ms the third retry would wait); and the refused call made one attempt.
func TestGRPCPushbackScenario(t *testing.T) {
	jsonl, tr := runShortGRPC(t, grpcPushback(), func(ctx context.Context, sc Scenario, out string) error {
		_, _, err := runGRPCPushback(ctx, sc, out, false)
		return err
	})
	if len(tr.Edges) != 1 {
		t.Fatalf("truth edges %+v", tr.Edges)
	}
	e := tr.Edges[0]
	// One call of each case: 2 pushed back, 1 exhausting 5 attempts.
	if !e.ExhaustedInTraces || !e.HonoursRetryAfter || e.RetryAfterCaptured || e.RetryAfterWaits != 2 ||
		!slices.Equal(e.RetriedCodes, []string{"RESOURCE_EXHAUSTED", "UNAVAILABLE"}) {
		t.Errorf("truth %+v", e)
	}

	// The attempts of each call: the catalog CLIENT spans under one
	// gateway SERVER span, in start order.
	calls := map[pcommon.SpanID][]rpcSpan{}
	for _, s := range rpcSpans(jsonl) {
		if s.kind == ptrace.SpanKindClient && s.method == catalogMethod[1:] {
			calls[s.parent] = append(calls[s.parent], s)
		}
	}
	attempts, pushbacks, refusedCalls := 0, 0, 0
	for _, c := range calls {
		slices.SortFunc(c, func(a, b rpcSpan) int { return cmp.Compare(a.start, b.start) })
		attempts += len(c)
		if len(c) == 1 && c[0].code == "RESOURCE_EXHAUSTED" {
			refusedCalls++
		}
		for i := 1; i < len(c); i++ {
			wait := time.Duration(c[i].start - c[i-1].end)
			if c[i-1].code != "RESOURCE_EXHAUSTED" {
				continue
			}
			pushbacks++
			if wait < 400*time.Millisecond {
				t.Errorf("a wait of %v after a 400ms pushback", wait)
			}
			if i+1 < len(c) {
				if next := time.Duration(c[i+1].start - c[i].end); next > 80*time.Millisecond {
					t.Errorf("the wait after a pushback is %v: the backoff did not start over", next)
				}
			}
		}
	}
	if attempts != e.Attempts || pushbacks != e.RetryAfterWaits || refusedCalls != 1 {
		t.Errorf("traces hold %d attempts, %d pushback waits, %d refused calls; truth %d and %d, want 1 refused",
			attempts, pushbacks, refusedCalls, e.Attempts, e.RetryAfterWaits)
	}
}
