package replay

import (
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
)

// TestRecommend: on retry-everywhere under a db outage, the recommendation
// never picks a policy that stays collapsed, explains itself, lists the
// changes edge by edge.
func TestRecommend(t *testing.T) {
	observed, err := FromTopology(sampleTopology(t, "retry-everywhere"), BuildOptions{Load: 20, Capacity: map[string]Capacity{"db": {Workers: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]*Model{}
	var mx Matrix
	for _, p := range []string{"none", "observed", "edge-only+budget", "everywhere"} {
		m, err := ApplyPolicy(observed, p)
		if err != nil {
			t.Fatal(err)
		}
		models[p] = m
		mx.Variants = append(mx.Variants, Variant{Policy: p, Model: m})
	}
	faults, _ := degrade.ParseAll([]string{"outage:svc=db,at=5s,for=5s,mode=error"})
	mx.Degradations = []Degradation{{Name: "outage", Faults: faults}}
	mx.Config = RunConfig{Seed: 1, Duration: 30}
	res, err := mx.Run()
	if err != nil {
		t.Fatal(err)
	}
	rec := Recommend(res, models, observed)
	if rec.Policy == "" || rec.Policy == "none" || rec.Reason == "" {
		t.Fatalf("recommendation %+v", rec)
	}
	for _, r := range res {
		if r.Policy == rec.Policy && r.Metastable {
			t.Errorf("recommended %s stays collapsed under %s", rec.Policy, r.Degradation)
		}
	}
	for _, rj := range rec.Rejected {
		if rj.Policy == rec.Policy || !strings.Contains(rj.Why, "collapsed") {
			t.Errorf("rejection %+v", rj)
		}
	}
	if rec.Policy != "observed" && len(rec.Changes) == 0 {
		t.Errorf("%s differs from observed but lists no change", rec.Policy)
	}
}

// TestChangesWords: each kind of difference is said the way an SRE acts on it.
func TestChangesWords(t *testing.T) {
	observed, err := FromTopology(sampleTopology(t, "mixed"), BuildOptions{Load: 5})
	if err != nil {
		t.Fatal(err)
	}
	for expr, want := range map[string]string{
		"none":                   "stop retrying here",
		"observed+budget":        "add a retry budget",
		"observed+deadline":      "propagate the deadline",
		"observed+breaker":       "add a circuit breaker",
		"observed+shed":          "shed retries first",
		"hedge-p95":              "hedge once after",
		"everywhere":             "retry here: up to 3 attempts",
		"observed+retry-after":   "honour Retry-After",
		"idempotent-only+budget": "stop retrying here",
	} {
		m, err := ApplyPolicy(observed, expr)
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, c := range changes(observed, m) {
			all = append(all, c.Change)
		}
		if !strings.Contains(strings.Join(all, "\n"), want) {
			t.Errorf("%s: changes %q, want one saying %q", expr, all, want)
		}
	}
}
