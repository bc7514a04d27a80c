package degrade

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// mustParseAll parses specs or fails the test.
func mustParseAll(t testing.TB, specs ...string) Schedule {
	t.Helper()
	s, err := ParseAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestActive(t *testing.T) {
	windowed := Fault{At: 10, For: 3}
	open := Fault{At: 10}
	tests := []struct {
		t             float64
		windowed, end bool
	}{
		{0, false, false},
		{9.999, false, false},
		{10, true, true},
		{12.999, true, true},
		{13, false, true}, // the end boundary is outside the window
		{1e9, false, true},
	}
	for _, tc := range tests {
		if got := windowed.Active(tc.t); got != tc.windowed {
			t.Errorf("at=10s,for=3s Active(%v) = %v", tc.t, got)
		}
		if got := open.Active(tc.t); got != tc.end {
			t.Errorf("at=10s,for=0s Active(%v) = %v", tc.t, got)
		}
	}
}

func TestEffect(t *testing.T) {
	none := Effect{Slow: 1}
	tests := []struct {
		name          string
		specs         []string
		caller, svc   string
		shard         int
		t             float64
		want          Effect
		approxProbs   bool // compare ErrorRate and Loss to within 1e-12
		wantNoneCheck bool
	}{
		// Windows.
		{name: "before", specs: []string{"outage:svc=db,at=10s,for=3s"}, svc: "db", t: 9.5, want: none},
		{name: "at the start", specs: []string{"outage:svc=db,at=10s,for=3s"}, svc: "db", t: 10, want: Effect{Fail: true, Slow: 1}},
		{name: "during", specs: []string{"outage:svc=db,at=10s,for=3s"}, svc: "db", t: 11, want: Effect{Fail: true, Slow: 1}},
		{name: "at the end boundary", specs: []string{"outage:svc=db,at=10s,for=3s"}, svc: "db", t: 13, want: none},
		{name: "after", specs: []string{"outage:svc=db,at=10s,for=3s"}, svc: "db", t: 100, want: none},
		{name: "until the end", specs: []string{"outage:svc=db,at=10s,for=0s"}, svc: "db", t: 1e6, want: Effect{Fail: true, Slow: 1}},
		{name: "other service", specs: []string{"outage:svc=db,at=10s,for=3s"}, svc: "api", t: 11, want: none},

		// Outage modes.
		{name: "mode=error", specs: []string{"outage:svc=db,at=0s,for=0s,mode=error"}, svc: "db", t: 1, want: Effect{Fail: true, Slow: 1}},
		{name: "mode=timeout", specs: []string{"outage:svc=db,at=0s,for=0s,mode=timeout"}, svc: "db", t: 1, want: Effect{NoAnswer: true, Slow: 1}},
		{name: "both modes overlap", specs: []string{"outage:svc=db,at=0s,for=0s,mode=error", "outage:svc=db,at=0s,for=0s,mode=timeout"}, svc: "db", t: 1, want: Effect{Fail: true, NoAnswer: true, Slow: 1}},

		// Combinations.
		{name: "two error rates", specs: []string{"error-rate:svc=db,at=0s,for=10s,p=0.5", "error-rate:svc=db,at=5s,for=10s,p=0.2"}, svc: "db", t: 6, want: Effect{ErrorRate: 0.6, Slow: 1}, approxProbs: true},
		{name: "two error rates, one over", specs: []string{"error-rate:svc=db,at=0s,for=10s,p=0.5", "error-rate:svc=db,at=5s,for=10s,p=0.2"}, svc: "db", t: 12, want: Effect{ErrorRate: 0.2, Slow: 1}, approxProbs: true},
		{name: "latency x and slow shard multiply, adds add", specs: []string{"latency:svc=db,at=0s,for=0s,x=3,add=100ms", "slow-shard:svc=db,at=0s,for=0s,shard=2,x=10", "latency:svc=db,at=0s,for=0s,add=50ms"}, svc: "db", shard: 2, t: 1, want: Effect{Slow: 30, Add: 0.15000000000000002}},
		{name: "mixed kinds", specs: []string{"error-rate:svc=db,at=0s,for=0s,p=0.1", "packet-loss:svc=db,at=0s,for=0s,p=0.2", "db-pool:svc=db,at=0s,for=0s,k=4", "latency:svc=db,at=0s,for=0s,add=1s"}, caller: "api", svc: "db", t: 1, want: Effect{ErrorRate: 0.1, Loss: 0.2, Slow: 1, Add: 1, Limit: 4}, approxProbs: true},

		// Slow shard hits only its shard.
		{name: "slow shard on its shard", specs: []string{"slow-shard:svc=db,at=0s,for=0s,shard=3,x=7"}, svc: "db", shard: 3, t: 1, want: Effect{Slow: 7}},
		{name: "slow shard on another shard", specs: []string{"slow-shard:svc=db,at=0s,for=0s,shard=3,x=7"}, svc: "db", shard: 4, t: 1, want: none},
		{name: "slow shard default shard 0", specs: []string{"slow-shard:svc=db,at=0s,for=0s"}, svc: "db", shard: 0, t: 1, want: Effect{Slow: 10}},

		// Packet loss: one edge vs every edge into the service.
		{name: "loss on every edge: api", specs: []string{"packet-loss:svc=db,at=0s,for=0s,p=0.3"}, caller: "api", svc: "db", t: 1, want: Effect{Loss: 0.3, Slow: 1}, approxProbs: true},
		{name: "loss on every edge: worker", specs: []string{"packet-loss:svc=db,at=0s,for=0s,p=0.3"}, caller: "worker", svc: "db", t: 1, want: Effect{Loss: 0.3, Slow: 1}, approxProbs: true},
		{name: "loss on one edge: that edge", specs: []string{"packet-loss:edge=api->db,at=0s,for=0s,p=0.3"}, caller: "api", svc: "db", t: 1, want: Effect{Loss: 0.3, Slow: 1}, approxProbs: true},
		{name: "loss on one edge: other caller", specs: []string{"packet-loss:edge=api->db,at=0s,for=0s,p=0.3"}, caller: "worker", svc: "db", t: 1, want: none},
		{name: "loss on one edge: the reverse edge", specs: []string{"packet-loss:edge=api->db,at=0s,for=0s,p=0.3"}, caller: "db", svc: "api", t: 1, want: none},
		{name: "loss edge and service combine", specs: []string{"packet-loss:edge=api->db,at=0s,for=0s,p=0.5", "packet-loss:svc=db,at=0s,for=0s,p=0.5"}, caller: "api", svc: "db", t: 1, want: Effect{Loss: 0.75, Slow: 1}, approxProbs: true},

		// db-pool.
		{name: "db-pool", specs: []string{"db-pool:svc=db,at=0s,for=10s,k=2"}, svc: "db", t: 1, want: Effect{Slow: 1, Limit: 2}},
		{name: "db-pool smallest wins", specs: []string{"db-pool:svc=db,at=0s,for=10s,k=5", "db-pool:svc=db,at=0s,for=10s,k=2", "db-pool:svc=db,at=0s,for=10s,k=3"}, svc: "db", t: 1, want: Effect{Slow: 1, Limit: 2}},
		{name: "db-pool over", specs: []string{"db-pool:svc=db,at=0s,for=10s,k=2"}, svc: "db", t: 10, want: none},

		// hot-partition acts only through PickShard.
		{name: "hot partition has no per-attempt effect", specs: []string{"hot-partition:svc=db,at=0s,for=0s"}, svc: "db", t: 1, want: none},
		{name: "empty schedule", svc: "db", t: 1, want: none},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParseAll(t, tc.specs...)
			got := s.Effect(tc.caller, tc.svc, tc.shard, tc.t)
			if tc.approxProbs {
				if math.Abs(got.ErrorRate-tc.want.ErrorRate) > 1e-12 || math.Abs(got.Loss-tc.want.Loss) > 1e-12 {
					t.Fatalf("Effect = %+v, want %+v", got, tc.want)
				}
				got.ErrorRate, got.Loss = tc.want.ErrorRate, tc.want.Loss
			}
			if got != tc.want {
				t.Fatalf("Effect = %+v, want %+v", got, tc.want)
			}
			if got.None() != (tc.want == none) {
				t.Errorf("None() = %v", got.None())
			}
		})
	}
}

func TestShards(t *testing.T) {
	s := mustParseAll(t,
		"slow-shard:svc=db,at=0s,for=1s,shards=16",
		"hot-partition:svc=db,at=5s,for=1s,shards=4",
		"hot-partition:svc=cache,at=5s,for=1s",
		"outage:svc=api,at=0s,for=1s",
	)
	for svc, want := range map[string]int{"db": 16, "cache": 8, "api": 1, "other": 1} {
		if got := s.Shards(svc); got != want {
			t.Errorf("Shards(%q) = %d, want %d", svc, got, want)
		}
	}
}

// shardCounts draws n values of u from a seeded PCG and counts the shards
// PickShard picks.
func shardCounts(s Schedule, svc string, t float64, n int) []int {
	r := rand.New(rand.NewPCG(7, 11))
	counts := make([]int, s.Shards(svc))
	for range n {
		counts[s.PickShard(svc, t, r.Float64())]++
	}
	return counts
}

func TestPickShardUniform(t *testing.T) {
	const n = 100000
	s := mustParseAll(t, "hot-partition:svc=db,at=10s,for=5s,shards=8,zipf=1.2")
	for _, at := range []float64{0, 9.99, 15, 100} { // outside the window
		counts := shardCounts(s, "db", at, n)
		want := float64(n) / float64(len(counts))
		chi2 := 0.0
		for k, c := range counts {
			if math.Abs(float64(c)-want) > 0.05*want {
				t.Errorf("t=%v: shard %d got %d of %d, want %.0f ± 5%%", at, k, c, n, want)
			}
			chi2 += (float64(c) - want) * (float64(c) - want) / want
		}
		// 7 degrees of freedom: P(χ² > 24.32) = 0.001.
		if chi2 > 24.32 {
			t.Errorf("t=%v: χ² = %.2f over %v, want ≤ 24.32", at, chi2, counts)
		}
	}
	// Without shard faults, every attempt goes to shard 0.
	if k := s.PickShard("api", 12, 0.99); k != 0 {
		t.Errorf("PickShard on an unsharded service = %d", k)
	}
}

func TestPickShardZipf(t *testing.T) {
	const n = 100000
	tests := []struct {
		specs  []string
		shards int
		skew   float64
	}{
		{[]string{"hot-partition:svc=db,at=10s,for=5s"}, 8, 1.2},
		{[]string{"hot-partition:svc=db,at=10s,for=5s,shards=32,zipf=0.8"}, 32, 0.8},
		{[]string{"hot-partition:svc=db,at=10s,for=5s,shards=4,zipf=2.5"}, 4, 2.5},
		// The slow shard sets the shard count; the hot partition skews all of them.
		{[]string{"hot-partition:svc=db,at=10s,for=5s,shards=4,zipf=1.5", "slow-shard:svc=db,at=0s,for=0s,shards=16"}, 16, 1.5},
		// Overlapping hot partitions: the larger exponent.
		{[]string{"hot-partition:svc=db,at=10s,for=5s,zipf=1.1", "hot-partition:svc=db,at=0s,for=0s,zipf=1.9"}, 8, 1.9},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.specs, " "), func(t *testing.T) {
			s := mustParseAll(t, tc.specs...)
			if got := s.Shards("db"); got != tc.shards {
				t.Fatalf("Shards = %d, want %d", got, tc.shards)
			}
			pmf := ZipfPMF(tc.shards, tc.skew)
			counts := shardCounts(s, "db", 12, n)
			share0 := float64(counts[0]) / n
			if math.Abs(share0-pmf[0]) > 0.02*pmf[0] {
				t.Errorf("shard 0 share %.4f, want %.4f ± 2%%", share0, pmf[0])
			}
			for k, c := range counts {
				if share := float64(c) / n; math.Abs(share-pmf[k]) > 0.005 {
					t.Errorf("shard %d share %.4f, want %.4f ± 0.005", k, share, pmf[k])
				}
				if k > 0 && pmf[k] > pmf[k-1] {
					t.Errorf("pmf not decreasing at %d", k)
				}
			}
		})
	}
}

// TestPickShardInverseCDF checks the exact map: u below a CDF step gives the
// lower shard, u at the step the next one, and the map never decreases.
func TestPickShardInverseCDF(t *testing.T) {
	s := mustParseAll(t, "hot-partition:svc=db,at=0s,for=0s,shards=5,zipf=1")
	pmf := ZipfPMF(5, 1)
	cum := 0.0
	for k := range 4 {
		cum += pmf[k]
		if got := s.PickShard("db", 1, math.Nextafter(cum, 0)*(1-1e-12)); got != k {
			t.Errorf("just below cdf[%d]: shard %d, want %d", k, got, k)
		}
		if got := s.PickShard("db", 1, cum*(1+1e-12)); got != k+1 {
			t.Errorf("just above cdf[%d]: shard %d, want %d", k, got, k+1)
		}
	}
	for _, tc := range []struct {
		u    float64
		want int
	}{{0, 0}, {-1, 0}, {math.NaN(), 0}, {math.Nextafter(1, 0), 4}, {1, 4}, {5, 4}} {
		if got := s.PickShard("db", 1, tc.u); got != tc.want {
			t.Errorf("PickShard(u=%v) = %d, want %d", tc.u, got, tc.want)
		}
	}
	uniform := mustParseAll(t, "slow-shard:svc=db,at=0s,for=0s,shards=5")
	for _, u := range []float64{math.Nextafter(1, 0), 1, 7} {
		if got := uniform.PickShard("db", 1, u); got != 4 {
			t.Errorf("uniform PickShard(u=%v) = %d, want 4", u, got)
		}
	}
	prev := 0
	for i := range 10001 {
		k := s.PickShard("db", 1, float64(i)/10001)
		if k < prev {
			t.Fatalf("PickShard decreased at u=%v", float64(i)/10001)
		}
		prev = k
	}
}

func TestTrigger(t *testing.T) {
	tests := []struct {
		specs      []string
		start, end float64
		ok         bool
	}{
		{nil, 0, 0, false},
		{[]string{"outage:svc=db,at=10s,for=3s"}, 10, 13, true},
		{[]string{"outage:svc=db,at=10s,for=3s", "latency:svc=api,at=5s,for=2s,add=1s"}, 5, 13, true},
		{[]string{"outage:svc=db,at=10s,for=30s", "latency:svc=api,at=20s,for=2s,add=1s"}, 10, 40, true},
		{[]string{"outage:svc=db,at=10s,for=3s", "error-rate:svc=api,at=20s,for=0s,p=0.1"}, 10, math.Inf(1), true},
		// A background fault (the whole run) is not part of the trigger...
		{[]string{"error-rate:svc=db,at=0s,for=0s,p=0.01", "outage:svc=db,at=5s,for=500ms"}, 5, 5.5, true},
		// ...unless it is all there is.
		{[]string{"error-rate:svc=db,at=0s,for=0s,p=0.01"}, 0, math.Inf(1), true},
	}
	for _, tc := range tests {
		start, end, ok := mustParseAll(t, tc.specs...).Trigger()
		if start != tc.start || end != tc.end || ok != tc.ok {
			t.Errorf("%v: Trigger() = %v, %v, %v; want %v, %v, %v", tc.specs, start, end, ok, tc.start, tc.end, tc.ok)
		}
	}
}

func TestServices(t *testing.T) {
	s := mustParseAll(t,
		"outage:svc=db,at=10s,for=3s",
		"packet-loss:edge=web->cache,at=1s,for=1s,p=0.1",
		"latency:svc=db,at=1s,for=1s,add=1s",
		"error-rate:svc=api,at=1s,for=1s,p=0.1",
	)
	if got, want := s.Services(), []string{"api", "cache", "db", "web"}; !slices.Equal(got, want) {
		t.Errorf("Services() = %v, want %v", got, want)
	}
	if got := Schedule(nil).Services(); len(got) != 0 {
		t.Errorf("empty Services() = %v", got)
	}
}

func TestParseAll(t *testing.T) {
	s, err := ParseAll(nil)
	if err != nil || len(s) != 0 {
		t.Fatalf("ParseAll(nil) = %v, %v", s, err)
	}
	s, err = ParseAll([]string{"outage:svc=db,at=10s,for=3s", "latency:svc=api,at=5s,for=2s,x=2"})
	if err != nil || len(s) != 2 || s[0].Kind != Outage || s[1].Kind != Latency {
		t.Fatalf("ParseAll = %+v, %v", s, err)
	}
	s, err = ParseAll([]string{"outage:svc=db,at=10s", "outage:svc=db,at=1s,for=1s", "crash:svc=db"})
	if err == nil || s != nil {
		t.Fatalf("ParseAll with bad specs = %+v, %v", s, err)
	}
	msg := err.Error()
	for _, w := range []string{`degrade "outage:svc=db,at=10s": missing for=`, `degrade "crash:svc=db": unknown kind "crash"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
	var se *SpecError
	if !errors.As(err, &se) {
		t.Errorf("errors.As(%v, *SpecError) failed", err)
	}
}

func TestObserved(t *testing.T) {
	f, err := Parse("observed")
	if err != nil || f.Kind != Observed || f.String() != "observed" || f.Validate() != nil {
		t.Fatalf("Parse(observed) = %+v, %v", f, err)
	}
	if _, err := Parse("observed:svc=db"); err == nil {
		t.Errorf("observed with keys parsed")
	}
	out, err := Parse("outage:svc=db,at=10s,for=5s")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		s        Schedule
		observed bool
		trigger  bool
	}{
		{Schedule{f}, true, false},
		{Schedule{f, out}, true, true},
		{Schedule{out}, false, true},
	}
	for _, c := range cases {
		_, end, ok := c.s.Trigger()
		if c.s.Observed() != c.observed || ok != c.trigger || ok && end != 15 {
			t.Errorf("%v: Observed %v, Trigger %v end %g", c.s, c.s.Observed(), ok, end)
		}
		if e := c.s.Effect("", "db", 0, 1); !e.None() {
			t.Errorf("%v: effect at 1s %+v, want none", c.s, e)
		}
	}
}

// TestCheck: a fault on a service the model lacks names the ones it has;
// a slow replica cannot share a service with shards.
func TestCheck(t *testing.T) {
	services := []string{"api", "db"}
	for _, tc := range []struct {
		specs []string
		want  string
	}{
		{[]string{"outage:svc=db,at=1s,for=1s", "slow-replica:svc=api,at=1s,for=1s"}, ""},
		{[]string{"outage:svc=dbx,at=1s,for=1s"}, `no service "dbx"; it has api, db`},
		{[]string{"packet-loss:edge=web->db,at=1s,for=1s,p=0.1"}, `no service "web"`},
		{[]string{"slow-shard:svc=db,at=1s,for=1s", "slow-replica:svc=db,at=1s,for=1s"}, "cannot apply to one service together"},
	} {
		err := mustParseAll(t, tc.specs...).Check(services)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: Check = %v, want %q", tc.specs, err, tc.want)
		}
	}
}

// TestEffectModes: error-after-work and hang are effects of their own.
func TestEffectModes(t *testing.T) {
	s := mustParseAll(t, "outage:svc=db,at=0s,for=10s,mode=error-after-work", "error-rate:svc=api,at=0s,for=10s,p=0.2,mode=error-after-work",
		"outage:svc=cache,at=0s,for=10s,mode=hang", "slow-replica:svc=web,at=0s,for=10s,replicas=4,replica=2,x=3")
	if e := s.Effect("", "db", 0, 1); !e.FailAfterWork || e.Fail {
		t.Errorf("db: %+v", e)
	}
	if e := s.Effect("", "api", 0, 1); e.ErrorAfterWork != 0.2 || e.ErrorRate != 0 {
		t.Errorf("api: %+v", e)
	}
	if e := s.Effect("", "cache", 0, 1); !e.NoAnswer {
		t.Errorf("cache: %+v", e)
	}
	if e := s.Effect("", "web", 2, 1); e.Slow != 3 || s.Replicas("web") != 4 || s.Shards("web") != 1 {
		t.Errorf("web: %+v, %d replicas", e, s.Replicas("web"))
	}
}

// TestVariesNextChange checks the promise the simulator's effect cache
// relies on, for every kind's example alone and all of them together:
// where Varies is false, Effect is the same for every caller and shard,
// and it stays the same from t until NextChange.
func TestVariesNextChange(t *testing.T) {
	var all []string
	cases := map[string][]string{}
	for _, k := range Kinds() {
		spec := strings.Replace(k.Example(), "at=10s", "at=2s", 1)
		cases[string(k)] = []string{spec}
		all = append(all, spec)
	}
	cases["all"] = all
	for name, specs := range cases {
		s := mustParseAll(t, specs...)
		for _, svc := range s.Services() {
			for _, at := range []float64{0, 1.5, 2, 2.5, 7, 11.999, 12, 30, 45, 1e4} {
				base := s.Effect("", svc, 0, at)
				varies := s.Varies(svc, at)
				same := true
				for _, caller := range []string{"", "api", "worker", "edge"} {
					for shard := range 8 {
						same = same && s.Effect(caller, svc, shard, at) == base
					}
				}
				if !varies && !same {
					t.Errorf("%s: %s at %gs: Varies is false, yet Effect depends on the caller or shard", name, svc, at)
				}
				next := s.NextChange(svc, at)
				if !(next > at) {
					t.Errorf("%s: %s at %gs: NextChange %g is not later", name, svc, at, next)
				}
				for _, later := range []float64{at + (min(next, at+100)-at)/2, math.Nextafter(min(next, at+100), 0)} {
					if s.Effect("", svc, 0, later) != base || s.Varies(svc, later) != varies {
						t.Errorf("%s: %s: the effect at %gs differs from that at %gs, before NextChange %g", name, svc, later, at, next)
					}
				}
			}
		}
	}
}

// TestFailsFast: every kind's example, in every mode it takes, fails
// attempts on arrival in Effect (Fail, or an ErrorRate) exactly when
// FailsFast says so, on every shard and from any caller.
func TestFailsFast(t *testing.T) {
	for _, k := range kindOrder {
		modes := []string{""}
		if slices.Contains(kindInfos[k].keys, "mode") {
			modes = append(modes, ",mode="+ModeError, ",mode="+ModeTimeout, ",mode="+ModeAfterWork)
		}
		for _, mode := range modes {
			example, _, _ := strings.Cut(kindInfos[k].example, ",mode=")
			spec := string(k) + ":" + example + mode
			t.Run(spec, func(t *testing.T) {
				f, err := Parse(spec)
				if err != nil {
					if mode == ",mode="+ModeTimeout && k != Outage {
						return // error-rate has no timeout mode
					}
					t.Fatal(err)
				}
				got := false
				for shard := range 8 {
					for _, caller := range []string{"", "api", "other"} {
						svc := f.Service
						if svc == "" {
							svc = "db" // packet loss on an edge: its callee
						}
						e := Schedule{f}.Effect(caller, svc, shard, f.At+1)
						got = got || e.Fail || e.ErrorRate > 0
					}
				}
				if got != f.FailsFast() {
					t.Errorf("Effect fails on arrival: %v; FailsFast: %v", got, f.FailsFast())
				}
			})
		}
	}
}
