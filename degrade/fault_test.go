package degrade

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want Fault
		str  string // canonical String()
	}{
		{
			name: "slow-shard defaults",
			spec: "slow-shard:svc=db,at=10s,for=30s",
			want: Fault{Kind: SlowShard, Service: "db", At: 10, For: 30, Shards: 8, Shard: 0, Factor: 10},
			str:  "slow-shard:svc=db,at=10s,for=30s,shards=8,shard=0,x=10",
		},
		{
			name: "slow-shard all keys, any order",
			spec: "slow-shard:x=4.5,shard=15,for=1m30s,shards=16,at=250ms,svc=db",
			want: Fault{Kind: SlowShard, Service: "db", At: 0.25, For: 90, Shards: 16, Shard: 15, Factor: 4.5},
			str:  "slow-shard:svc=db,at=250ms,for=1m30s,shards=16,shard=15,x=4.5",
		},
		{
			name: "hot-partition defaults",
			spec: "hot-partition:svc=cache,at=5s,for=10s",
			want: Fault{Kind: HotPartition, Service: "cache", At: 5, For: 10, Shards: 8, Skew: 1.2},
			str:  "hot-partition:svc=cache,at=5s,for=10s,shards=8,zipf=1.2",
		},
		{
			name: "hot-partition all keys",
			spec: "hot-partition:svc=cache,at=5s,for=10s,shards=4,zipf=2",
			want: Fault{Kind: HotPartition, Service: "cache", At: 5, For: 10, Shards: 4, Skew: 2},
			str:  "hot-partition:svc=cache,at=5s,for=10s,shards=4,zipf=2",
		},
		{
			name: "packet-loss into a service",
			spec: "packet-loss:svc=db,at=10s,for=30s,p=0.2",
			want: Fault{Kind: PacketLoss, Service: "db", At: 10, For: 30, Loss: 0.2},
			str:  "packet-loss:svc=db,at=10s,for=30s,p=0.2",
		},
		{
			name: "packet-loss on one edge",
			spec: "packet-loss:edge=api->db,at=10s,for=30s,p=1",
			want: Fault{Kind: PacketLoss, Service: "db", Caller: "api", At: 10, For: 30, Loss: 1},
			str:  "packet-loss:edge=api->db,at=10s,for=30s,p=1",
		},
		{
			name: "db-pool",
			spec: "db-pool:svc=postgres,at=1s,for=2s,k=2",
			want: Fault{Kind: DBPool, Service: "postgres", At: 1, For: 2, Limit: 2},
			str:  "db-pool:svc=postgres,at=1s,for=2s,k=2",
		},
		{
			name: "outage default mode",
			spec: "outage:svc=db,at=10s,for=3s",
			want: Fault{Kind: Outage, Service: "db", At: 10, For: 3, Mode: "error"},
			str:  "outage:svc=db,at=10s,for=3s,mode=error",
		},
		{
			name: "outage mode=timeout, until the end",
			spec: "outage:svc=db,at=10s,for=0s,mode=timeout",
			want: Fault{Kind: Outage, Service: "db", At: 10, For: 0, Mode: "timeout"},
			str:  "outage:svc=db,at=10s,for=0s,mode=timeout",
		},
		{
			name: "error-rate",
			spec: "error-rate:svc=payments,at=0s,for=1h,p=0.3",
			want: Fault{Kind: ErrorRate, Service: "payments", At: 0, For: 3600, Rate: 0.3, Mode: ModeError},
			str:  "error-rate:svc=payments,at=0s,for=1h0m0s,p=0.3",
		},
		{
			name: "latency add",
			spec: "latency:svc=db,at=10s,for=30s,add=200ms",
			want: Fault{Kind: Latency, Service: "db", At: 10, For: 30, Add: 0.2},
			str:  "latency:svc=db,at=10s,for=30s,add=200ms",
		},
		{
			name: "latency x",
			spec: "latency:svc=db,at=10s,for=30s,x=3",
			want: Fault{Kind: Latency, Service: "db", At: 10, For: 30, Factor: 3},
			str:  "latency:svc=db,at=10s,for=30s,x=3",
		},
		{
			name: "latency add and x",
			spec: "latency:x=2,add=1.5s,svc=db,at=10s,for=30s",
			want: Fault{Kind: Latency, Service: "db", At: 10, For: 30, Add: 1.5, Factor: 2},
			str:  "latency:svc=db,at=10s,for=30s,add=1.5s,x=2",
		},
		{
			name: "spaces and case are tolerated",
			spec: " Outage : SVC = db , at = 10s , for = 3s , mode = Timeout ",
			want: Fault{Kind: Outage, Service: "db", At: 10, For: 3, Mode: "timeout"},
			str:  "outage:svc=db,at=10s,for=3s,mode=timeout",
		},
		{
			name: "names with dots, slashes, colons and inner spaces",
			spec: "error-rate:svc=payments.v2/eu-west:8080 blue,at=1s,for=1s,p=0",
			want: Fault{Kind: ErrorRate, Service: "payments.v2/eu-west:8080 blue", At: 1, For: 1, Rate: 0, Mode: ModeError},
			str:  "error-rate:svc=payments.v2/eu-west:8080 blue,at=1s,for=1s,p=0",
		},
		{
			name: "nanosecond durations",
			spec: "outage:svc=db,at=1.000000001s,for=1ns",
			want: Fault{Kind: Outage, Service: "db", At: 1.000000001, For: 1e-9, Mode: "error"},
			str:  "outage:svc=db,at=1.000000001s,for=1ns,mode=error",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.spec)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.spec, err)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q)\n got %+v\nwant %+v", tc.spec, got, tc.want)
			}
			if s := got.String(); s != tc.str {
				t.Errorf("String() = %q, want %q", s, tc.str)
			}
			back, err := Parse(got.String())
			if err != nil || back != got {
				t.Errorf("Parse(String()) = %+v, %v; want %+v", back, err, got)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	const (
		outageForm  = "want outage:svc=NAME,at=DURATION,for=DURATION[,mode=error|timeout|error-after-work]"
		slowForm    = "want slow-shard:svc=NAME,at=DURATION,for=DURATION[,shards=N][,shard=I][,x=K]"
		hotForm     = "want hot-partition:svc=NAME,at=DURATION,for=DURATION[,shards=N][,zipf=S]"
		lossForm    = "want packet-loss:svc=NAME|edge=CALLER->CALLEE,at=DURATION,for=DURATION,p=PROB"
		poolForm    = "want db-pool:svc=NAME,at=DURATION,for=DURATION,k=N"
		errRateForm = "want error-rate:svc=NAME,at=DURATION,for=DURATION,p=PROB"
		latencyForm = "want latency:svc=NAME,at=DURATION,for=DURATION[,add=DURATION][,x=K] (add= or x= required)"
	)
	tests := []struct {
		spec string
		want []string // substrings of the message
	}{
		// The example of the brief, exactly.
		{"outage:svc=db,at=10s", []string{`degrade "outage:svc=db,at=10s": missing for=; ` + outageForm}},
		{"outage:at=10s,for=3s", []string{"missing svc=", outageForm}},
		{"outage", []string{"missing svc=, at=, for=", outageForm}},
		{"outage:", []string{"missing svc=, at=, for=", outageForm}},
		{"outage:svc=db,at=10s,for=3s,mode=crash", []string{"mode=crash: want error (fast-fail), timeout (hang) or error-after-work", outageForm}},
		{"outage:svc=db,at=10s,for=3s,p=0.1", []string{"unknown key p= for outage", outageForm}},
		{"outage:svc=db,at=10s,for=3s,bogus=1", []string{"unknown key bogus= for outage", outageForm}},
		{"outage:svc=db,at=10s,for=3s,at=4s", []string{"duplicate key at=", outageForm}},
		{"outage:svc=db,SVC=api,at=10s,for=3s", []string{"duplicate key svc=", outageForm}},
		{"outage:svc=db,at=10s,for=3s,", []string{`"" is not KEY=VALUE`, outageForm}},
		{"outage:svc=db,at,for=3s", []string{`"at" is not KEY=VALUE`, outageForm}},
		{"outage:svc=,at=10s,for=3s", []string{"empty svc=", outageForm}},
		{"outage:svc=a=b,at=10s,for=3s", []string{`cannot contain "=" or "->"`, outageForm}},
		{"outage:svc=a\x01b,at=10s,for=3s", []string{"control characters", outageForm}},
		{"outage:svc=\xff,at=10s,for=3s", []string{"not valid UTF-8", outageForm}},
		{"outage:svc=db,at=10,for=3s", []string{"at=10: not a duration", outageForm}},
		{"outage:svc=db,at=-1s,for=3s", []string{"at=-1s: out of range", outageForm}},
		{"outage:svc=db,at=1s,for=9000h", []string{"for=9000h: out of range [0s,8760h0m0s]", outageForm}},
		{"outage:svc=db,at=1s,for=3s,edge=a->db", []string{"unknown key edge= for outage", outageForm}},

		{"slow-shard:svc=db,at=1s,for=1s,shard=8", []string{"shard=8: out of range [0,8)", slowForm}},
		{"slow-shard:svc=db,at=1s,for=1s,shards=4,shard=-1", []string{"shard=-1: out of range [0,4)", slowForm}},
		{"slow-shard:svc=db,at=1s,for=1s,shards=0", []string{"shards=0: out of range [1,1024]", slowForm}},
		{"slow-shard:svc=db,at=1s,for=1s,shards=2000", []string{"shards=2000: out of range [1,1024]", slowForm}},
		{"slow-shard:svc=db,at=1s,for=1s,shards=two", []string{"shards=two: not an integer", slowForm}},
		{"slow-shard:svc=db,at=1s,for=1s,x=0.5", []string{"x=0.5: out of range [1,1e+06]", slowForm}},
		{"slow-shard:svc=db,at=1s,for=1s,x=NaN", []string{"x=NaN: not a finite number", slowForm}},
		{"slow-shard:svc=db,at=1s,for=1s,x=Inf", []string{"x=Inf: not a finite number", slowForm}},
		{"slow-shard:svc=db,at=1s,for=1s,zipf=2", []string{"unknown key zipf= for slow-shard", slowForm}},

		{"hot-partition:svc=db,at=1s,for=1s,zipf=0", []string{"zipf=0: want a finite exponent > 0", hotForm}},
		{"hot-partition:svc=db,at=1s,for=1s,zipf=-1", []string{"zipf=-1: want a finite exponent > 0", hotForm}},
		{"hot-partition:svc=db,at=1s,for=1s,shard=1", []string{"unknown key shard= for hot-partition", hotForm}},

		{"packet-loss:svc=db,at=1s,for=1s", []string{"missing p=", lossForm}},
		{"packet-loss:at=1s,for=1s,p=0.1", []string{"missing svc= or edge=", lossForm}},
		{"packet-loss:svc=db,edge=api->db,at=1s,for=1s,p=0.1", []string{"svc= and edge= exclude each other", lossForm}},
		{"packet-loss:edge=api,at=1s,for=1s,p=0.1", []string{"edge=api: want CALLER->CALLEE", lossForm}},
		{"packet-loss:edge=->db,at=1s,for=1s,p=0.1", []string{"edge=->db: want CALLER->CALLEE", lossForm}},
		{"packet-loss:edge=a->b->c,at=1s,for=1s,p=0.1", []string{`cannot contain "=" or "->"`, lossForm}},
		{"packet-loss:svc=db,at=1s,for=1s,p=1.5", []string{"p=1.5: out of range [0,1]", lossForm}},
		{"packet-loss:svc=db,at=1s,for=1s,p=-0.1", []string{"p=-0.1: out of range [0,1]", lossForm}},
		{"packet-loss:svc=db,at=1s,for=1s,p=20%", []string{"p=20%: not a finite number", lossForm}},

		{"db-pool:svc=db,at=1s,for=1s", []string{"missing k=", poolForm}},
		{"db-pool:svc=db,at=1s,for=1s,k=0", []string{"k=0: want an integer > 0", poolForm}},
		{"db-pool:svc=db,at=1s,for=1s,k=1.5", []string{"k=1.5: not an integer", poolForm}},

		{"error-rate:svc=db,at=1s,for=1s", []string{"missing p=", errRateForm}},
		{"error-rate:svc=db,at=1s,for=1s,p=2", []string{"p=2: out of range [0,1]", errRateForm}},

		{"latency:svc=db,at=1s,for=1s", []string{"missing add= or x=", latencyForm}},
		{"latency:svc=db,at=1s,for=1s,add=0s", []string{"add=0s: want a duration > 0", latencyForm}},
		{"latency:svc=db,at=1s,for=1s,add=-5ms", []string{"add=-5ms: out of range", latencyForm}},
		{"latency:svc=db,at=1s,for=1s,x=0", []string{"x=0: out of range [1,1e+06]", latencyForm}},

		{"crash:svc=db,at=1s,for=1s", []string{
			`degrade "crash:svc=db,at=1s,for=1s": unknown kind "crash"; want KIND:KEY=VALUE,... with KIND one of `,
			"slow-shard (e.g. slow-shard:svc=db,at=10s,for=30s,shard=3,x=10)",
			"hot-partition (e.g. hot-partition:",
			"packet-loss (e.g. packet-loss:edge=api->db,",
			"db-pool (e.g. db-pool:",
			"outage (e.g. outage:",
			"error-rate (e.g. error-rate:",
			"latency (e.g. latency:svc=db,at=10s,for=30s,add=200ms)",
		}},
		{"", []string{"missing kind", "with KIND one of slow-shard (e.g."}},
		{"svc=db,at=1s,for=1s", []string{`unknown kind "svc=db,at=1s,for=1s"`, "with KIND one of"}},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			f, err := Parse(tc.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tc.spec, f)
			}
			if f != (Fault{}) {
				t.Errorf("Parse(%q) returned %+v with its error, want the zero Fault", tc.spec, f)
			}
			var se *SpecError
			if !errors.As(err, &se) || se.Spec != tc.spec {
				t.Errorf("error %T %v: want a *SpecError for the spec", err, err)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error\n  %s\ndoes not contain\n  %s", msg, w)
				}
			}
		})
	}
}

// TestKinds checks every kind's form and example: the example parses, and
// its String round-trips.
func TestKinds(t *testing.T) {
	if len(Kinds()) != 8 {
		t.Fatalf("Kinds() = %v", Kinds())
	}
	for _, k := range Kinds() {
		if !strings.HasPrefix(k.Form(), string(k)+":svc=NAME") {
			t.Errorf("%s: Form() = %q", k, k.Form())
		}
		f, err := Parse(k.Example())
		if err != nil || f.Kind != k {
			t.Errorf("%s: Example() %q: %+v, %v", k, k.Example(), f, err)
		}
	}
	if Kind("nope").Form() != "" || Kind("nope").Example() != "" {
		t.Error("unknown kind has a form or example")
	}
}

func TestValidate(t *testing.T) {
	ok := Fault{Kind: DBPool, Service: "db", At: 1, For: 2, Limit: 3}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", ok, err)
	}
	tests := []struct {
		name string
		f    Fault
		want string
	}{
		{"unknown kind", Fault{Kind: "x", Service: "db"}, `unknown kind "x"`},
		{"no service", Fault{Kind: DBPool, At: 1, For: 2, Limit: 3}, "svc=: empty name"},
		{"bad caller", Fault{Kind: PacketLoss, Service: "db", Caller: "a->b", At: 1, For: 2, Loss: 0.5}, `cannot contain "=" or "->"`},
		{"negative at", Fault{Kind: DBPool, Service: "db", At: -1, For: 2, Limit: 3}, "at=-1s: out of range"},
		{"unused field", Fault{Kind: DBPool, Service: "db", At: 1, For: 2, Limit: 3, Rate: 0.5}, "field Rate is not used by db-pool"},
		{"caller on outage", Fault{Kind: Outage, Service: "db", Caller: "api", At: 1, For: 2, Mode: "error"}, "field Caller is not used by outage"},
		{"slow-shard without defaults", Fault{Kind: SlowShard, Service: "db", At: 1, For: 2}, "shards=0: out of range"},
		{"outage without mode", Fault{Kind: Outage, Service: "db", At: 1, For: 2}, "mode=: want error (fast-fail), timeout (hang) or error-after-work"},
		{"latency with nothing", Fault{Kind: Latency, Service: "db", At: 1, For: 2}, "missing add= or x="},
		{"latency negative add", Fault{Kind: Latency, Service: "db", At: 1, For: 2, Add: -1}, "add=-1s: out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate(%+v) = %v, want an error containing %q", tc.f, err, tc.want)
			}
		})
	}
}

// randomFault returns a valid fault drawn from r, covering every kind, every
// optional key present and absent, and durations from nanoseconds to the
// maximum.
func randomFault(r *rand.Rand) Fault {
	names := []string{"db", "api", "a", "payments.v2", "eu-west/cache:6379", "svc with spaces", "ünïcødé", "x_y-z"}
	name := func() string { return names[r.IntN(len(names))] }
	dur := func() float64 {
		var d time.Duration
		switch r.IntN(4) {
		case 0:
			d = time.Duration(r.IntN(3600)) * time.Second
		case 1:
			d = time.Duration(r.IntN(100000)) * time.Millisecond
		case 2:
			d = time.Duration(r.Int64N(int64(time.Hour)))
		default:
			d = time.Duration(r.Int64N(int64(MaxDuration) + 1))
		}
		return d.Seconds()
	}
	prob := func() float64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return 1
		case 2:
			return float64(r.IntN(101)) / 100
		}
		return r.Float64()
	}
	factor := func() float64 {
		if r.IntN(2) == 0 {
			return float64(1 + r.IntN(100))
		}
		return 1 + r.Float64()*(MaxFactor-1)
	}
	f := Fault{Kind: Kinds()[r.IntN(len(Kinds()))], Service: name(), At: dur()}
	if r.IntN(4) > 0 {
		f.For = dur()
	}
	switch f.Kind {
	case SlowShard, SlowReplica:
		f.Shards = 1 + r.IntN(MaxShards)
		f.Shard = r.IntN(f.Shards)
		f.Factor = factor()
	case HotPartition:
		f.Shards = 1 + r.IntN(MaxShards)
		f.Skew = 0.01 + r.Float64()*5
	case PacketLoss:
		if r.IntN(2) == 0 {
			f.Caller = name()
		}
		f.Loss = prob()
	case DBPool:
		f.Limit = 1 + r.IntN(1000)
	case Outage:
		f.Mode = []string{ModeError, ModeTimeout, ModeAfterWork}[r.IntN(3)]
	case ErrorRate:
		f.Rate = prob()
		f.Mode = []string{ModeError, ModeAfterWork}[r.IntN(2)]
	case Latency:
		switch r.IntN(3) {
		case 0:
			f.Add = dur()
		case 1:
			f.Factor = factor()
		default:
			f.Add, f.Factor = dur(), factor()
		}
		if f.Add == 0 && f.Factor == 0 {
			f.Add = 0.001
		}
	}
	return f
}

// TestStringRoundTrip is the property Parse(f.String()) == f over generated
// valid faults.
func TestStringRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		f := randomFault(r)
		if err := f.Validate(); err != nil {
			t.Fatalf("#%d: generated an invalid fault %+v: %v", i, f, err)
		}
		s := f.String()
		back, err := Parse(s)
		if err != nil {
			t.Fatalf("#%d: Parse(%q): %v", i, s, err)
		}
		if back != f {
			t.Fatalf("#%d: Parse(%q)\n got %+v\nwant %+v", i, s, back, f)
		}
	}
}
