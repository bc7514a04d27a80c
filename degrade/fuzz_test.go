package degrade

import "testing"

// FuzzParse checks that Parse never panics, that every fault it accepts is
// valid, and that the canonical String of an accepted spec parses back to
// the same fault and is a fixed point.
func FuzzParse(f *testing.F) {
	for _, k := range Kinds() {
		f.Add(k.Example())
	}
	for _, s := range []string{
		"outage:svc=db,at=10s,for=3s",
		"outage:svc=db,at=10s",
		"slow-shard:x=4.5,shard=15,for=1m30s,shards=16,at=250ms,svc=db",
		"packet-loss:svc=db,at=1s,for=1s,p=0x1p-2",
		"latency:svc=db,at=1s,for=1s,add=1.000000001s,x=1e3",
		" Outage : SVC = db , at = 10s , for = 3s , mode = Timeout ",
		"hot-partition:svc=db,at=8760h,for=0s,zipf=1e-300",
		"packet-loss:edge=a->b->c,at=1s,for=1s,p=1",
		"crash:svc=db",
		"",
		":",
		"outage:svc=\xff,at=1s,for=1s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		flt, err := Parse(spec)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("Parse(%q): empty error", spec)
			}
			return
		}
		if err := flt.Validate(); err != nil {
			t.Fatalf("Parse(%q) = %+v, which does not validate: %v", spec, flt, err)
		}
		canon := flt.String()
		back, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) = %+v; Parse(String() = %q): %v", spec, flt, canon, err)
		}
		if back != flt {
			t.Fatalf("Parse(%q) = %+v; Parse(String() = %q) = %+v", spec, flt, canon, back)
		}
		if again := back.String(); again != canon {
			t.Fatalf("String not a fixed point: %q then %q", canon, again)
		}
	})
}
