package replay

import (
	"math"
	"testing"
)

// Interface checks.
var (
	_ Budget           = NoBudget{}
	_ Budget           = (*FinagleBudget)(nil)
	_ Budget           = (*GRPCThrottle)(nil)
	_ PerRequestBudget = (*AWSQuota)(nil)
	_ Budget           = (*EnvoyBudget)(nil)
	_ Budget           = (*TokenBucket)(nil)
	_ Budget           = (*RatioBudget)(nil)
)

// countRetries counts how many retries b allows at time t before the first
// refusal (stopping at limit).
func countRetries(b Budget, t float64, limit int) int {
	n := 0
	for n < limit && b.Retry(t) {
		n++
	}
	return n
}

func TestBudgetNone(t *testing.T) {
	var b NoBudget
	for i := range 1000 {
		b.Result(float64(i), false, true)
		if !b.Retry(float64(i)) {
			t.Fatalf("NoBudget refused retry %d", i)
		}
	}
}

func TestBudgetFinagle(t *testing.T) {
	type step struct {
		at       float64
		requests int // deposits at this time
		try      int // retries asked for then
		want     int // retries allowed
	}
	tests := []struct {
		name  string
		ttl   float64
		min   int
		pct   float64
		steps []step
	}{
		{"defaults, no requests: reserve of 10/s·10s", 10, 10, 0.2,
			[]step{{0, 0, 1000, 100}, {1, 0, 1000, 0}}},
		{"defaults, 1000 requests: +20%", 10, 10, 0.2,
			[]step{{0, 1000, 1000, 300}}},
		// Slices start at the access that rotates them: after accesses at
		// 5 and 9.9 the withdrawals of 0 still count at 10.5 and expire
		// at 10.9, one slice after 9.9.
		{"withdrawals expire after ttl", 10, 10, 0.2,
			[]step{{0, 0, 1000, 100}, {5, 0, 1000, 0}, {9.9, 0, 1000, 0}, {10.5, 0, 1000, 0}, {10.9, 0, 1000, 100}}},
		{"withdrawals expire after ttl, no access between", 10, 10, 0.2,
			[]step{{0, 0, 1000, 100}, {9.9, 0, 1000, 0}, {10.5, 0, 1000, 0}, {10.9, 0, 1000, 100}}},
		// 1000 requests at 0 still count at 9.5 and are gone at 10.5,
		// when the 150 withdrawals of 9.5 still count (100 − 150 < 1);
		// by 20 those are gone too.
		{"deposits expire after ttl", 10, 10, 0.2,
			[]step{{0, 1000, 0, 0}, {9.5, 0, 150, 150}, {10.5, 0, 1000, 0}, {20, 0, 1000, 100}}},
		{"seed 003: ttl 10s, 5/s, 10%", 10, 5, 0.1,
			[]step{{0, 100, 1000, 60}}},
		{"percent only", 10, 0, 0.5,
			[]step{{0, 7, 1000, 3}, {1, 1, 1000, 1}}},
		{"percent 2: two retries per request", 1, 0, 2,
			[]step{{0, 3, 1000, 6}}},
		{"reserve only", 2, 5, 0,
			[]step{{0, 1000, 1000, 10}, {3, 0, 1000, 10}}},
		{"RetryBudget.Empty", 10, 0, 0,
			[]step{{0, 1000, 1000, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewFinagleBudget(tt.ttl, tt.min, tt.pct)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				for range s.requests {
					b.Request(s.at)
				}
				if got := countRetries(b, s.at, s.try); got != s.want {
					t.Fatalf("step %d (t=%v): %d retries allowed, want %d", i, s.at, got, s.want)
				}
			}
		})
	}
}

// Deposits at 9.5 s are still counted at 10.5 s: the adder's slices move
// with accesses, so entries live about ttl.
func TestBudgetFinagleSlices(t *testing.T) {
	b := DefaultFinagleBudget()
	if got := b.Balance(0); got != 100 {
		t.Fatalf("initial balance %d, want 100", got)
	}
	for range 500 {
		b.Request(0)
	}
	for range 500 {
		b.Request(9.5)
	}
	if got := b.Balance(9.6); got != 300 {
		t.Errorf("balance at 9.6: %d, want 300 (100 + 20%% of 1000)", got)
	}
	if got := b.Balance(10.6); got != 200 {
		t.Errorf("balance at 10.6: %d, want 200 (the deposits of 0 expired)", got)
	}
	if got := b.Balance(19); got != 200 {
		t.Errorf("balance at 19: %d, want 200", got)
	}
	if got := b.Balance(20.6); got != 100 {
		t.Errorf("balance at 20.6: %d, want 100 (all deposits expired)", got)
	}
}

func TestBudgetFinagleValidate(t *testing.T) {
	tests := []struct {
		ttl float64
		min int
		pct float64
		ok  bool
	}{
		{10, 10, 0.2, true},
		{1, 0, 1000, true},
		{60.5, 1, 0, true}, // Finagle checks whole seconds
		{0.9, 10, 0.2, false},
		{61, 10, 0.2, false},
		{10, -1, 0.2, false},
		{10, 10, -0.1, false},
		{10, 10, 1000.1, false},
	}
	for _, tt := range tests {
		if _, err := NewFinagleBudget(tt.ttl, tt.min, tt.pct); (err == nil) != tt.ok {
			t.Errorf("NewFinagleBudget(%v, %v, %v): %v, want ok=%v", tt.ttl, tt.min, tt.pct, err, tt.ok)
		}
	}
}

func TestBudgetGRPCScript(t *testing.T) {
	g, err := NewGRPCThrottle(10, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	// Each step: n results (ok or failed), then the expected tokens and
	// whether a retry is allowed (tokens > 5).
	steps := []struct {
		n      int
		ok     bool
		tokens float64
		retry  bool
	}{
		{0, true, 10, true},
		{4, false, 6, true},
		{1, false, 5, false}, // 5 is not above maxTokens/2
		{1, true, 5.1, true},
		{1, false, 4.1, false},
		{9, true, 5.0, false},
		{1, true, 5.1, true},
		{20, false, 0, false}, // floor at 0
		{50, true, 5.0, false},
		{1, true, 5.1, true},
		{100, true, 10, true}, // cap at maxTokens
	}
	for i, s := range steps {
		for range s.n {
			g.Result(float64(i), s.ok, !s.ok)
		}
		if got := g.Tokens(); got != s.tokens {
			t.Fatalf("step %d: tokens %v, want %v", i, got, s.tokens)
		}
		for range 3 { // retries cost nothing
			if got := g.Retry(float64(i)); got != s.retry {
				t.Fatalf("step %d: Retry = %v, want %v", i, got, s.retry)
			}
		}
	}
}

// With maxTokens 10 and tokenRatio 0.1 the balance point is a failure share
// of 1/11 ≈ 9.1% of attempts.
func TestBudgetGRPCThreshold(t *testing.T) {
	tests := []struct {
		name     string
		fail, of int // fail attempts out of every `of`, spread evenly
		always   bool
	}{
		{"8% keeps allowing", 2, 25, true},
		{"9% keeps allowing", 9, 100, true},
		{"9.5% ends up refusing", 19, 200, false},
		{"10% ends up refusing", 1, 10, false},
		{"20% ends up refusing", 1, 5, false},
	}
	const attempts = 20000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := NewGRPCThrottle(10, 0.1)
			allowedLate := 0
			for i := range attempts {
				// Attempt i fails when the running count of failures
				// ⌊(i+1)·fail/of⌋ steps up: evenly spread.
				failed := (i+1)*tt.fail/tt.of > i*tt.fail/tt.of
				g.Result(float64(i), !failed, false)
				allowed := g.Retry(float64(i))
				if tt.always && !allowed {
					t.Fatalf("attempt %d: retry refused at %v tokens", i, g.Tokens())
				}
				if i >= attempts/2 && allowed {
					allowedLate++
				}
			}
			if !tt.always && allowedLate > 0 {
				t.Errorf("%d retries allowed in the second half, want 0 (tokens %v)", allowedLate, g.Tokens())
			}
		})
	}
}

func TestBudgetGRPCValidate(t *testing.T) {
	tests := []struct {
		max, ratio float64
		ok         bool
	}{
		{10, 0.1, true},
		{1000, 1, true},
		{0, 0.1, false},
		{1001, 0.1, false},
		{10, 0, false},
		{10, -1, false},
		{10, 0.0001, false}, // below A6's 3 decimals
	}
	for _, tt := range tests {
		if _, err := NewGRPCThrottle(tt.max, tt.ratio); (err == nil) != tt.ok {
			t.Errorf("NewGRPCThrottle(%v, %v): %v, want ok=%v", tt.max, tt.ratio, err, tt.ok)
		}
	}
}

func TestBudgetAWSExhaustion(t *testing.T) {
	tests := []struct {
		name    string
		timeout bool
		want    int
	}{
		{"timeouts cost 10", true, 50},
		{"errors cost 5", false, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/Budget", func(t *testing.T) {
			q := NewAWSQuota()
			n := 0
			for ; n < 1000; n++ {
				q.Result(0, false, tt.timeout)
				q.Done(0, n > 0)
				if !q.Retry(0) {
					break
				}
			}
			if n != tt.want || q.Capacity() != 0 {
				t.Errorf("%d retries before refusal, capacity %d; want %d and 0", n, q.Capacity(), tt.want)
			}
		})
		t.Run(tt.name+"/RetryFor", func(t *testing.T) {
			q := NewAWSQuota()
			n := 0
			for ; n < 1000; n++ {
				if _, ok := q.RetryFor(0, tt.timeout); !ok {
					break
				}
			}
			if n != tt.want || q.Capacity() != 0 {
				t.Errorf("%d retries before refusal, capacity %d; want %d and 0", n, q.Capacity(), tt.want)
			}
		})
	}
}

func TestBudgetAWSRefunds(t *testing.T) {
	q := NewAWSQuota()
	expect := func(step string, want int) {
		t.Helper()
		if got := q.Capacity(); got != want {
			t.Fatalf("%s: capacity %d, want %d", step, got, want)
		}
	}
	// Per-request accounting, two requests interleaved.
	costA, _ := q.RetryFor(0, true) // A's first attempt timed out
	costB, _ := q.RetryFor(0, false)
	expect("two retries", 485)
	costA2, _ := q.RetryFor(1, false) // A's retry failed too: retry again
	expect("third retry", 480)
	q.ResultFor(2, true, costB) // B's retry succeeds: refund 5
	expect("B refunded", 485)
	q.ResultFor(2, true, costA2) // A's last retry paid 5, not 10
	expect("A refunded its last retry", 490)
	if costA != 10 || costB != 5 || costA2 != 5 {
		t.Fatalf("costs %d %d %d, want 10 5 5", costA, costB, costA2)
	}
	q.ResultFor(3, false, 0)
	expect("a failed first attempt gives nothing", 490)
	for i := range 9 {
		q.ResultFor(4, true, 0)
		expect("first-attempt success", 491+i)
	}
	q.ResultFor(4, true, 0)
	q.ResultFor(4, true, 0)
	expect("capped at 500", 500)
	q.ResultFor(4, true, 10)
	expect("refund capped at 500", 500)

	// A timeout retry needs 10: refused at 5, while a 5 still passes.
	for range 49 {
		q.RetryFor(5, true)
	}
	expect("49 timeout retries", 10)
	q.RetryFor(5, false)
	if _, ok := q.RetryFor(5, true); ok {
		t.Fatalf("timeout retry allowed with capacity 5")
	}
	if c, ok := q.RetryFor(5, false); !ok || c != 5 {
		t.Fatalf("error retry refused with capacity 5")
	}
	expect("drained", 0)
}

// The Budget interface, one request at a time, matches botocore.
func TestBudgetAWSSequential(t *testing.T) {
	q := NewAWSQuota()
	type attempt struct {
		ok, timeout bool
	}
	// Each request: its attempts in order; the capacity after it.
	reqs := []struct {
		attempts []attempt
		want     int
	}{
		{[]attempt{{true, false}}, 500},                                 // first-attempt success, capped
		{[]attempt{{false, true}, {true, false}}, 500},                  // pay 10, refund 10
		{[]attempt{{false, true}, {false, false}, {true, false}}, 490},  // pay 10 and 5, refund 5
		{[]attempt{{false, false}, {false, false}, {false, true}}, 480}, // pay 5 and 5, no refund
		{[]attempt{{true, false}}, 481},
		{[]attempt{{false, true}, {true, false}}, 481},
	}
	for i, r := range reqs {
		q.Request(float64(i))
		for n, a := range r.attempts {
			if n > 0 && !q.Retry(float64(i)) {
				t.Fatalf("request %d: retry %d refused", i, n)
			}
			q.Result(float64(i), a.ok, a.timeout)
			q.Done(float64(i), n > 0)
		}
		if got := q.Capacity(); got != r.want {
			t.Fatalf("request %d: capacity %d, want %d", i, got, r.want)
		}
	}
}

func TestBudgetEnvoy(t *testing.T) {
	tests := []struct {
		name   string
		pct    float64
		min    int
		active int
		limit  int // before any retry
		want   int // concurrent retries allowed
	}{
		{"10 active: the floor of 3", 20, 3, 10, 3, 3},
		{"no traffic: the floor", 20, 3, 0, 3, 3},
		// ⌊0.2·100⌋ = 20, and each admitted retry is itself active:
		// 23 < ⌊0.2·123⌋ = 24 passes, 24 < ⌊0.2·124⌋ = 24 does not.
		{"100 active", 20, 3, 100, 20, 24},
		{"80 active", 20, 3, 80, 16, 19}, // 19 < ⌊0.2·99⌋ = 19 fails
		{"floor 0, 4 active", 25, 0, 4, 1, 1},
		{"floor 0, no traffic", 20, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewEnvoyBudget(tt.pct, tt.min)
			if err != nil {
				t.Fatal(err)
			}
			for range tt.active {
				e.Request(0)
			}
			if got := e.Limit(); got != tt.limit {
				t.Errorf("Limit() = %d, want %d", got, tt.limit)
			}
			if got := countRetries(e, 0, 1000); got != tt.want {
				t.Fatalf("%d concurrent retries allowed, want %d", got, tt.want)
			}
			if tt.want == 0 {
				return
			}
			e.Done(1, true) // one retry finishes: one more fits
			if !e.Retry(1) || e.Retry(1) {
				t.Errorf("after one retry finished: want exactly one more retry")
			}
		})
	}
}

func TestBudgetEnvoyLifecycle(t *testing.T) {
	e, _ := NewEnvoyBudget(EnvoyDefaultBudgetPercent, EnvoyDefaultMinRetryConcurrency)
	for range 10 {
		e.Request(0)
	}
	for range 10 { // every first attempt fails
		e.Result(1, false, false)
		e.Done(1, false)
	}
	if got := countRetries(e, 1, 100); got != 3 {
		t.Fatalf("%d retries with nothing else active, want 3", got)
	}
	for range 3 {
		e.Done(2, true)
	}
	if e.active != 0 || e.retries != 0 {
		t.Fatalf("after everything finished: active %d, retries %d; want 0, 0", e.active, e.retries)
	}
	e.Done(3, true) // a stray Done does not go negative
	if e.active != 0 || e.retries != 0 {
		t.Fatalf("stray Done: active %d, retries %d", e.active, e.retries)
	}
	if _, err := NewEnvoyBudget(101, 3); err == nil {
		t.Errorf("budget_percent 101 accepted")
	}
	if _, err := NewEnvoyBudget(20, -1); err == nil {
		t.Errorf("min_retry_concurrency -1 accepted")
	}
}

func TestBudgetTokenBucket(t *testing.T) {
	b, err := NewTokenBucket(TokenBucketDefaultMax, TokenBucketDefaultRatio)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		successes int
		want      int // retries then allowed
		tokens    float64
	}{
		{0, 10, 0},
		{9, 0, 0.9},
		{1, 1, 0}, // 10 successes: exactly one retry
		{10, 1, 0},
		{25, 2, 0.5},
		{500, 10, 0}, // capped at 10
	}
	for i, s := range steps {
		for range s.successes {
			b.Result(float64(i), true, false)
		}
		b.Result(float64(i), false, true) // failures do nothing
		if got := countRetries(b, float64(i), 100); got != s.want {
			t.Fatalf("step %d: %d retries, want %d", i, got, s.want)
		}
		if got := b.Tokens(); got != s.tokens {
			t.Fatalf("step %d: %v tokens, want %v", i, got, s.tokens)
		}
	}
	if _, err := NewTokenBucket(0.5, 0.1); err == nil {
		t.Errorf("max 0.5 accepted")
	}
	if _, err := NewTokenBucket(10, -0.1); err == nil {
		t.Errorf("ratio -0.1 accepted")
	}
}

func TestBudgetRatio(t *testing.T) {
	type step struct {
		at    float64
		calls int
		try   int // retries asked for
		want  int // retries allowed
	}
	tests := []struct {
		name   string
		ratio  float64
		window float64
		steps  []step
	}{
		// retries < 0.1·100: retries 0…9 pass, the 11th is refused.
		{"100 calls", 0.1, 10, []step{{0, 100, 1000, 10}, {9.9, 0, 1000, 0}}},
		{"calls and retries expire", 0.1, 10, []step{{0, 100, 1000, 10}, {10, 0, 1000, 0}, {10.5, 100, 1000, 10}}},
		// The calls of 0 are gone at 10.1 but the retries of 5 count
		// until 15.
		{"retries outlive calls", 0.1, 10, []step{{0, 100, 0, 0}, {5, 0, 1000, 10}, {10.1, 100, 1000, 0}, {15, 0, 1000, 10}}},
		{"float product 0.1·30", 0.1, 10, []step{{0, 30, 1000, 3}}},
		{"lifetime counters", 0.1, 0, []step{{0, 30, 1000, 3}, {1000, 10, 1000, 1}, {5000, 0, 1000, 0}}},
		{"ratio 0", 0, 10, []step{{0, 1000, 1000, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRatioBudget(tt.ratio, tt.window)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				for range s.calls {
					r.Request(s.at)
				}
				if got := countRetries(r, s.at, s.try); got != s.want {
					c, n := r.Counts(s.at)
					t.Fatalf("step %d (t=%v): %d retries, want %d (window: %d calls, %d retries)", i, s.at, got, s.want, c, n)
				}
			}
		})
	}
	if _, err := NewRatioBudget(-1, 10); err == nil {
		t.Errorf("ratio -1 accepted")
	}
	if _, err := NewRatioBudget(0.1, -1); err == nil {
		t.Errorf("window -1 accepted")
	}
}

// The sliding window compacts its queue without losing events.
func TestBudgetRatioLongRun(t *testing.T) {
	r, _ := NewRatioBudget(0.5, 2)
	for i := range 100000 {
		now := float64(i) / 100 // 100 calls per second
		r.Request(now)
		r.Retry(now)
		if i >= 300 {
			// 200, or 201 when t − 2 rounds just below an event's time.
			if c, _ := r.Counts(now); c != 200 && c != 201 {
				t.Fatalf("t=%v: %d calls in the window, want 200", now, c)
			}
		}
	}
	if len(r.calls.ts) > 4096 {
		t.Errorf("queue holds %d times for a window of 200", len(r.calls.ts))
	}
}

// TestRetryBreaker: retries go while under 10% of the last second's
// attempts failed, and stop above it; first attempts are not its business.
func TestRetryBreaker(t *testing.T) {
	b, err := NewRetryBreaker(0.1, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		b.Result(float64(i)*0.01, false, false)
	}
	if !b.Retry(0.1) {
		t.Error("refused with fewer results than the minimum")
	}
	for i := range 91 {
		b.Result(0.1+float64(i)*0.001, true, false)
	}
	if !b.Retry(0.2) {
		t.Error("9 failures in 100: refused under 10%")
	}
	b.Result(0.2, false, false)
	b.Result(0.2, false, false)
	if b.Retry(0.2) {
		t.Error("11 failures in 102: allowed over 10%")
	}
	if !b.Retry(1.5) {
		t.Error("the failures left the window, yet refused")
	}
	for _, bad := range [][2]float64{{0, 1}, {1.5, 1}, {0.1, 0}, {0.1, math.Inf(1)}} {
		if _, err := NewRetryBreaker(bad[0], bad[1], 0); err == nil {
			t.Errorf("NewRetryBreaker(%v, %v) accepted", bad[0], bad[1])
		}
	}
}
