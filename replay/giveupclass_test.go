package replay

import (
	"math"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

// TestGiveUpByClass: an edge's give-ups of failures without an answer
// (transport errors) are kept apart from its other failures' (server
// errors, timeouts) only where the traces show the two given up on
// differently beyond chance: Fisher's exact test, one-sided in the
// direction seen, below RunsAlpha. hedgedhttp gives a call up on every
// 503 (6 of 6) and on no request without an answer (0 of 14): the chance
// of so lopsided a split with one share is 1/C(20,6) = 2.6e-5, so the
// policy gives up 503s always and resends the others; 2 of 6 against 3
// of 14 is chance (P = 0.484), and both keep the pooled 5 of 20. A hedged edge's
// on_failure becomes the policy's OnFailureOut, unknown (or none read)
// the waiting of a model without it, and the notes say which.
func TestGiveUpByClass(t *testing.T) {
	sr := func(status, class string, retried, given int) graph.StatusRetries {
		return graph.StatusRetries{Status: status, Class: class, Retried: retried, GivenUp: given, Reason: "unknown: no span says why"}
	}
	for _, tc := range []struct {
		name      string
		rs        []graph.StatusRetries
		split     bool
		p         float64
		fail, na  float64 // GiveUp[GiveUpFail], GiveUp[GiveUpNoAnswer]
		on        string  // Hedging.OnFailure
		want      HedgeOnFailure
		noteParts []string
	}{
		{"503s given up, no answer resent: apart", []graph.StatusRetries{sr("503", "server_error", 0, 6), sr("transport error", "transport", 14, 0)},
			true, 1.0 / 38760, 1, 0, graph.HedgeFailEndsOrSendsNext, HedgeEndsOrSendsNext,
			[]string{"failure (server_error, timeout) 6 of 6 (1), no answer (transport) 0 of 14 (0)", "beyond chance (P = 2.6e-05", "ends or sends next (of the hedged calls"}},
		{"the other way round: apart", []graph.StatusRetries{sr("503", "server_error", 14, 0), sr("transport error", "transport", 0, 6)},
			true, 1.0 / 38760, 0, 1, graph.HedgeFailEnds, HedgeEnds, []string{"no answer (transport) 6 of 6 (1)", "the client ends ("}},
		{"a difference within chance: pooled", []graph.StatusRetries{sr("503", "server_error", 4, 2), sr("transport error", "transport", 11, 3)},
			false, 0.484, 0.25, 0.25, graph.HedgeFailUnknown, HedgeWaits, []string{"failure 5 of 20 (0.25)", "after a failed attempt with another out: unknown"}},
		{"no failure without an answer: pooled", []graph.StatusRetries{sr("503", "server_error", 0, 6)},
			false, 1, 1, 1, graph.HedgeFailWaits, HedgeWaits, []string{"failure 6 of 6 (1)", "the client waits ("}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			split, p := giveUpSplit(tc.rs)
			if split != tc.split || math.Abs(p-tc.p) > 0.01*tc.p {
				t.Errorf("split %v, P %.3g: want %v, %.3g", split, p, tc.split, tc.p)
			}
			e := graph.Edge{Caller: "inventory", Callee: "db", Operation: "GET /db/stock/{sku}", Calls: 68, MaxAttempts: 3, Retries: true,
				Outcomes: &graph.Outcomes{GivenUp: tc.rs}, Hedging: &graph.Hedging{Calls: 32, DelayMS: 25, MaxRequests: 3, OnFailure: tc.on,
					FailedWhileOut: graph.FailedWhileOut{Ended: 4, SentNext: 4}}}
			pol := observedPolicy(e)
			if g := pol.GiveUp; g[GiveUpFail] != tc.fail || g[GiveUpNoAnswer] != tc.na {
				t.Errorf("give-up shares %v: want failure %g, no answer %g", g, tc.fail, tc.na)
			}
			if pol.OnFailureOut != tc.want {
				t.Errorf("on failure out %d, want %d", pol.OnFailureOut, tc.want)
			}
			notes := giveUpNote(e) + "\n" + hedgeFailureNote(e)
			for _, s := range tc.noteParts {
				if !strings.Contains(notes, s) {
					t.Errorf("notes lack %q:\n%s", s, notes)
				}
			}
		})
	}
}
