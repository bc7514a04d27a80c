package report

import (
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// AuditSchema versions the JSON of an audit.
const AuditSchema = "retryaudit.audit/v1"

// AuditReport is everything `retryaudit audit` found: the topology, the
// replay matrix compared against the observed policies, and the
// recommendation. Its JSON is what `retryaudit report` renders again.
type AuditReport struct {
	Schema         string                 `json:"schema"`
	Topology       *graph.Topology        `json:"topology"`
	Replay         *ReplayReport          `json:"replay"`
	Recommendation *replay.Recommendation `json:"recommendation"`
}
