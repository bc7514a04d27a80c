package policyfile

import "github.com/retryaudit/retryaudit/replay"

// FinagleRetryBudget is Finagle's RetryBudget(ttl, minRetriesPerSec,
// percentCanRetry).
type FinagleRetryBudget struct {
	TTL              *Duration `yaml:"ttl,omitempty"`
	MinRetriesPerSec *int      `yaml:"minRetriesPerSec,omitempty"`
	PercentCanRetry  *float64  `yaml:"percentCanRetry,omitempty"`
}

// spec is Finagle's budget, with Finagle's defaults for absent keys.
func (f *FinagleRetryBudget) spec() replay.BudgetSpec {
	return replay.BudgetSpec{Kind: replay.BudgetFinagle, Window: pfSeconds(f.TTL, replay.FinagleDefaultTTL),
		Min: pfOr(f.MinRetriesPerSec, replay.FinagleDefaultMinRetriesPerSec), Ratio: pfOr(f.PercentCanRetry, replay.FinagleDefaultPercentCanRetry)}
}
