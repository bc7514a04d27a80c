package replay

import (
	"encoding/json"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
)

// TestRetryAfterReaches: where RetryAfterReaches says no Retry-After
// reaches api → svc, flipping the edge's HonorRetryAfter gives the same
// run, byte for byte; where it says one may, the flip changes the run
// (each such case is built so that a Retry-After does arrive), so the rule
// cannot claim an edge deaf that hears. api → svc retries after 5 ms, far
// under the 1 s of a fault's Retry-After, so honouring one always acts.
func TestRetryAfterReaches(t *testing.T) {
	mixRA := Mix{Fail: 0.1, RetryAfter: 0.3}
	tests := []struct {
		name   string
		edit   func(m *Model)
		faults degrade.Schedule
		want   bool
	}{
		{name: "no fault, no failure model", want: false},
		{name: "a fault on the callee's callee only", faults: schedule("outage:svc=db,at=5s,for=5s,mode=error"), want: false},
		{name: "a slow shard on the callee", faults: schedule("slow-shard:svc=svc,at=5s,for=5s,shard=0,x=10"), want: false},
		{name: "a hung callee", faults: schedule("outage:svc=svc,at=5s,for=5s,mode=timeout"), want: false},
		{name: "a callee failing after the work", faults: schedule("outage:svc=svc,at=5s,for=5s,mode=error-after-work"), want: false},
		{name: "a fault on the callee", faults: schedule("outage:svc=svc,at=5s,for=5s,mode=error"), want: true},
		{name: "an error-rate fault on the callee", faults: schedule("error-rate:svc=svc,at=5s,for=5s,p=0.3"), want: true},
		{
			name: "the callee sheds retries",
			edit: func(m *Model) {
				m.Services[1].Workers, m.Services[1].ShedRetriesAt = 1, 1
				m.Services[1].Ops[0].Time = Exponential{MeanS: 0.04}
				m.Edges[0].Fail = &Failures{First: Mix{Fail: 0.3}, Retry: Mix{Fail: 0.3}, Propagate: 1}
			},
			want: true,
		},
		{
			name: "the callee's queue is bounded",
			edit: func(m *Model) {
				m.Services[1].Workers, m.Services[1].QueueCap = 1, 1
				m.Services[1].Ops[0].Time = Exponential{MeanS: 0.04}
			},
			want: true,
		},
		{
			name: "failures without a Retry-After mix",
			edit: func(m *Model) {
				m.Edges[0].Fail = &Failures{First: Mix{Fail: 0.2}, Retry: Mix{Fail: 0.2}, Propagate: 1, RetryAfter: 1}
			},
			want: false,
		},
		{
			name: "Retry-After answers with no Retry-After to send",
			edit: func(m *Model) {
				m.Edges[0].Fail = &Failures{First: mixRA, Retry: mixRA, Propagate: 1}
			},
			want: false,
		},
		{
			name: "Retry-After answers on first attempts",
			edit: func(m *Model) {
				m.Edges[0].Fail = &Failures{First: mixRA, Propagate: 1, RetryAfter: 1}
			},
			want: true,
		},
		{
			name: "Retry-After answers on second attempts only",
			edit: func(m *Model) {
				m.Edges[0].Fail = &Failures{First: Mix{Fail: 0.5}, Retry: Mix{Fail: 0.5}, RetryBy: []Mix{mixRA}, Propagate: 1, RetryAfter: 1}
			},
			want: true,
		},
		{
			name: "Retry-After answers in a failure episode",
			edit: func(m *Model) {
				m.Edges[0].Fail = &Failures{Propagate: 1, RetryAfter: 1, Incidents: []Episode{{Start: 5, End: 10, First: mixRA, Retry: mixRA}}}
			},
			faults: degrade.Schedule{{Kind: degrade.Observed}},
			want:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := func(honor bool) []byte {
				m := chain()
				m.Edges[0].Policy = Policy{MaxAttempts: 3, Backoff: Backoff{Kind: BackoffConstant, Base: 0.005}, HonorRetryAfter: honor}
				if tt.edit != nil {
					tt.edit(m)
				}
				if got := m.RetryAfterReaches(0, tt.faults); got != tt.want {
					t.Fatalf("RetryAfterReaches = %v, want %v", got, tt.want)
				}
				r := mustRun(t, m, tt.faults, RunConfig{Seed: 7, Duration: 20})
				b, err := json.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			if same := string(run(false)) == string(run(true)); same == tt.want {
				t.Errorf("runs with and without HonorRetryAfter the same: %v; want %v", same, !tt.want)
			}
		})
	}
}
