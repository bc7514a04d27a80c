package replay

import (
	"fmt"
	"math"
	"strings"

	"github.com/retryaudit/retryaudit/graph"
)

// checkBuildable rejects models that cannot be replayed: calls that come
// back to an operation already on the way (a cycle would make every
// request call itself without end), and traces without any timing.
func checkBuildable(m *Model) error {
	type node struct{ svc, op int }
	const (
		unseen = iota
		onPath
		done
	)
	state := map[node]int{}
	var path []node
	var cycle []node
	var visit func(n node) bool
	visit = func(n node) bool {
		state[n] = onPath
		path = append(path, n)
		for _, e := range m.Services[n.svc].Ops[n.op].Calls {
			next := node{m.Edges[e].Callee, m.Edges[e].CalleeOp}
			switch state[next] {
			case onPath:
				for i, p := range path {
					if p == next {
						cycle = append(append(cycle, path[i:]...), next)
					}
				}
				return false
			case unseen:
				if !visit(next) {
					return false
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return true
	}
	for si, s := range m.Services {
		for oi := range s.Ops {
			if n := (node{si, oi}); state[n] == unseen && !visit(n) {
				names := make([]string, len(cycle))
				for i, c := range cycle {
					names[i] = m.Services[c.svc].Name + " " + m.Services[c.svc].Ops[c.op].Name
				}
				return fmt.Errorf("the topology has a cycle, %s: a replay would call itself without end; remove an edge of it from the topology", strings.Join(names, " → "))
			}
		}
	}
	total := 0.0
	for _, s := range m.Services {
		for _, op := range s.Ops {
			total += op.Time.Mean()
		}
	}
	if total <= 0 || math.IsNaN(total) {
		return fmt.Errorf("every operation of the topology takes zero time: the traces carry no durations (start and end times equal?), so no service time can be modelled")
	}
	return nil
}

// sampleRate is the head-sampling probability rates are scaled by, and
// the note that says which it is and why.
func sampleRate(t *graph.Topology, flag float64) (float64, string) {
	if flag > 0 {
		return flag, fmt.Sprintf("sampling: rates scaled by 1/%g, from --sample-rate", flag)
	}
	if t.Calibration == nil {
		return 1, "sampling: unknown (topology without calibration): rates are lower bounds, exact only if every trace was kept; give --sample-rate"
	}
	s := t.Calibration.Sampling
	switch {
	case s.Roots == 0 || !(s.Probability > 0 && s.Probability <= 1):
		if s.Source != "" && s.Source != "none seen" {
			return 1, fmt.Sprintf("sampling: %s: no root says with what probability it was kept, so rates are lower bounds; give --sample-rate", s.Source)
		}
		return 1, "sampling: no root says how it was sampled: rates are lower bounds, exact only if every trace was kept; give --sample-rate"
	case s.LowerBound:
		return s.Probability, fmt.Sprintf("sampling: %d of %d roots carry a probability (%s); each weighted by its own, the rest taken as kept: effective %.4g, rates a lower bound", s.Roots, t.Calibration.Root.Requests, s.Source, s.Probability)
	}
	return s.Probability, fmt.Sprintf("sampling: rates scaled by 1/%.4g, each root weighted by its own probability (%s)", s.Probability, s.Source)
}

// inFlight is a service's concurrency in the traces: the mean by Little's
// law over the arrival window, and the peak, when the topology carries
// them; else an estimate of the mean from operation counts and median
// latency over the whole window, and no peak.
func inFlight(t *graph.Topology, svc string) (float64, int) {
	if c := t.Calibration; c != nil {
		for _, l := range c.InFlight {
			if l.Service == svc {
				return l.InFlight, l.PeakInFlight
			}
		}
	}
	window := math.Max(t.Source.WindowS, 1)
	busy := 0.0
	for _, s := range t.Services {
		if s.Name != svc {
			continue
		}
		for _, op := range s.Operations {
			busy += float64(op.Count) / window * op.P50MS / 1000
		}
	}
	return busy, 0
}
