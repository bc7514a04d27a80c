package replay

import (
	"errors"
	"math"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
)

// fuzzModel builds a small model from fuzz bytes: up to 4 services (each
// calling only later ones, so the graph has no cycle), their workers,
// service times, queue bounds, thrash and cancellation, each edge's
// policy, the client's limit on requests in flight, the count of clients
// it applies to each of, and each edge's limit on requests out.
func fuzzModel(data []byte) *Model {
	at := 0
	next := func(n int) int {
		if n <= 0 {
			return 0
		}
		b := 0
		if at < len(data) {
			b = int(data[at])
			at++
		}
		return b % n
	}
	n := 1 + next(4)
	m := &Model{Rate: float64(1 + next(200)), ClientDeadline: float64(next(4)) * 0.5, RootPropagate: next(2) == 1}
	if next(3) == 0 {
		m.Hop = Exponential{MeanS: 0.001 * float64(1+next(5))}
	}
	for i := range n {
		svc := Service{Name: string(rune('a' + i)), Workers: 1 + next(8), QueueCap: next(3) * 5, ShedRetriesAt: next(2) * 4,
			CancelProb: float64(next(5)) / 4, CancelRunning: next(2) == 1, Thrash: float64(next(3)) / 4}
		var d Dist = Exponential{MeanS: 0.001 * float64(1+next(20))}
		if next(2) == 0 {
			d = LogNormal{Median: 0.005, Sigma: 0.3}
		}
		svc.Ops = []Op{{Name: "op", Time: d, Parallel: next(2) == 1}}
		m.Services = append(m.Services, svc)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if next(2) == 0 {
				continue
			}
			p := Policy{MaxAttempts: 1 + next(4), PerTryTimeout: 0.01 * float64(next(30)), Deadline: 0.1 * float64(next(10)),
				Propagate: next(2) == 1, HonorRetryAfter: next(2) == 1, HedgeAfter: 0.005 * float64(next(3))}
			p.Backoff = Backoff{Kind: []BackoffKind{BackoffImmediate, BackoffConstant, BackoffExponential}[next(3)], Base: 0.01, Multiplier: 2, Cap: 0.2,
				Jitter: []JitterKind{JitterNone, JitterFull, JitterEqual, JitterDecorrelated}[next(4)]}
			switch next(4) {
			case 1:
				p.Budget = BudgetSpec{Kind: BudgetRatio, Ratio: 0.1, Window: 10}
			case 2:
				p.Budget = BudgetSpec{Kind: BudgetBreaker, Ratio: 0.1, Window: 1, Min: 10}
			case 3:
				p.Breaker = BreakerConfig{ConsecutiveFailures: 3, OpenFor: 0.5}
			}
			m.Edges = append(m.Edges, Edge{Caller: i, CallerOp: 0, Callee: j, CalleeOp: 0, Prob: float64(1+next(4)) / 4, Repeat: 1 + next(2), Idempotent: true, Policy: p})
			m.Services[i].Ops[0].Calls = append(m.Services[i].Ops[0].Calls, len(m.Edges)-1)
		}
	}
	m.Entry = []Entry{{Service: 0, Op: 0, Weight: 1}}
	m.MaxInflight = next(3) * 5 // read last, so older corpus entries keep their meaning
	m.OpenClients = next(4)     // then the clients, for the same reason
	for i := range m.Edges {
		m.Edges[i].Policy.MaxRequests = next(3) * 2 // and then the edges' limits on requests out
	}
	return m
}

// FuzzRun runs arbitrary small models under arbitrary fault specs within a
// small event budget: no panic, and every result keeps its invariants.
func FuzzRun(f *testing.F) {
	f.Add([]byte{3, 100, 1, 0, 4, 2, 1, 1, 2, 0, 1, 1, 3, 5, 1, 1, 1, 2, 3}, "outage:svc=b,at=3s,for=1s,mode=hang", uint64(1))
	f.Add([]byte{2, 50, 0, 2, 1, 3, 0, 0, 1, 0, 0, 2, 4, 2}, "slow-shard:svc=b,at=2s,for=3s,shards=4,x=20", uint64(2))
	f.Add([]byte{4, 200, 3, 1, 7, 7, 7, 7, 7, 7, 7, 7}, "packet-loss:svc=c,at=3s,for=2s,p=0.3", uint64(3))
	f.Add([]byte{1, 10}, "error-rate:svc=a,at=0s,for=0s,p=0.5,mode=error-after-work", uint64(4))
	f.Add([]byte{2, 80, 1}, "slow-replica:svc=b,at=4s,for=2s,replicas=3,x=100", uint64(5))
	f.Fuzz(func(t *testing.T, data []byte, spec string, seed uint64) {
		m := fuzzModel(data)
		var faults degrade.Schedule
		if flt, err := degrade.Parse(spec); err == nil {
			if flt.At > 20 || flt.For > 20 {
				return
			}
			faults = degrade.Schedule{flt}
		}
		r, err := Run(m, faults, RunConfig{Seed: seed, Duration: 8, Drain: 2, MaxJudge: 10, MaxEvents: 200_000})
		if err != nil {
			if errors.Is(err, ErrEventBudget) || faults.Check([]string{"a", "b", "c", "d"}[:len(m.Services)]) != nil {
				return
			}
			t.Fatalf("model %v, faults %v: %v", data, faults, err)
		}
		if !(r.Availability >= 0 && r.Availability <= 1) || r.WastedS > r.WorkS*(1+1e-9)+1e-9 || r.WorkS < 0 || math.IsNaN(r.P99MS) {
			t.Fatalf("availability %v, wasted %v of %v s, p99 %v", r.Availability, r.WastedS, r.WorkS, r.P99MS)
		}
		if r.Metastable != (r.Verdict == VerdictCollapsed) || r.Metastable && r.RecoveryS != nil || r.Verdict == VerdictRecovered && r.RecoveryS == nil {
			t.Fatalf("verdict %s, metastable %v, recovery %v", r.Verdict, r.Metastable, r.RecoveryS)
		}
		if r.Succeeded > r.RootRequests {
			t.Fatalf("%d succeeded of %d", r.Succeeded, r.RootRequests)
		}
	})
}
