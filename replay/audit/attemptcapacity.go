package audit

import (
	"fmt"
	"slices"

	"github.com/retryaudit/retryaudit/replay"
)

// Capacity is how many attempts per second service svc of model m
// completes with every worker busy and no fault: its workers ÷ the mean
// service time of one attempt, its operations weighted by how often a root
// request visits each (first attempts only). It is the level the
// dependency's offered attempts cross when it saturates; a fault that
// slows or stops the service lowers it for the fault's window.
func Capacity(m *replay.Model, svc string) (float64, error) {
	si := slices.IndexFunc(m.Services, func(s replay.Service) bool { return s.Name == svc })
	if si < 0 {
		return 0, fmt.Errorf("no service %q in the model", svc)
	}
	// A closed loop has no fixed rate but the same mix of entries.
	open := *m
	open.Clients = 0
	_, weights, err := rootMix(&open)
	if err != nil {
		return 0, err
	}
	visits, err := opVisits(m, weights)
	if err != nil {
		return 0, err
	}
	n, busy := 0.0, 0.0
	for oi, op := range m.Services[si].Ops {
		n += visits[si][oi]
		busy += visits[si][oi] * op.Time.Mean()
	}
	if n == 0 || !(busy > 0) {
		return 0, fmt.Errorf("service %q: no request reaches it, or it takes no time: its capacity is unbounded", svc)
	}
	return float64(m.Services[si].Workers) * n / busy, nil
}
