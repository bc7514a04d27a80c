package audit

import (
	"fmt"

	"github.com/retryaudit/retryaudit/replay"
)

// Capacity is how many attempts per second service svc of model m
// completes with every worker busy and no fault: its workers ÷ the mean
// service time of one attempt, its operations weighted by how often a root
// request visits each (first attempts only). It is the level the
// dependency's offered attempts cross when it saturates; a fault that
// slows or stops the service lowers it for the fault's window.
func Capacity(m *replay.Model, svc string) (float64, error) {
	// A closed loop has no fixed rate but the same mix of entries.
	open := *m
	open.Clients = 0
	w, err := workOf(&open, svc)
	if err != nil {
		return 0, err
	}
	if w.visits == 0 || !(w.busy > 0) {
		return 0, fmt.Errorf("service %q: no request reaches it, or it takes no time: its capacity is unbounded", svc)
	}
	return float64(m.Services[w.si].Workers) * w.visits / w.busy, nil
}
