package replay

import "fmt"

// BudgetKind names the reference system whose retry budget a BudgetSpec
// builds.
type BudgetKind string

// Budget kinds. BudgetNone (the zero value) is no budget: every retry is
// allowed.
const (
	BudgetNone        BudgetKind = ""
	BudgetTokenBucket BudgetKind = "token-bucket"  // seed 000: NewTokenBucket
	BudgetRatio       BudgetKind = "ratio"         // seed 004: NewRatioBudget
	BudgetAWS         BudgetKind = "aws"           // AWS SDK standard mode: NewAWSQuota
	BudgetGRPC        BudgetKind = "grpc"          // gRPC retryThrottling: NewGRPCThrottle
	BudgetEnvoy       BudgetKind = "envoy"         // Envoy cluster retry_budget: NewEnvoyBudget
	BudgetFinagle     BudgetKind = "finagle"       // Finagle RetryBudget, Linkerd retryBudget: NewFinagleBudget
	BudgetBreaker     BudgetKind = "retry-breaker" // "Good Retry, Bad Retry": NewRetryBreaker
)

// BudgetSpec is a retry budget as a value: its kind and parameters. New
// builds a fresh instance for a run, so policies holding a spec compare
// with == and reflect.DeepEqual. Which fields a kind reads:
//
//	token-bucket  Max tokens, Ratio added per success
//	ratio         Ratio of retries to calls, over Window seconds (0: lifetime)
//	aws           nothing (capacity 500)
//	grpc          Max (maxTokens), Ratio (tokenRatio)
//	envoy         Percent (budget_percent, 0 to 100), Min (min_retry_concurrency)
//	finagle       Window (ttl, seconds), Min (minRetriesPerSec), Ratio (percentCanRetry)
//	retry-breaker Ratio (failure threshold), Window (seconds), Min (results needed)
type BudgetSpec struct {
	Kind    BudgetKind
	Max     float64
	Ratio   float64
	Window  float64
	Percent float64
	Min     int
}

// Validate checks the parameters with the constructor of the kind.
func (s BudgetSpec) Validate() error {
	_, err := s.build()
	return err
}

// New returns a fresh budget, or nil for BudgetNone. Model.Validate checks
// every edge's spec; New of a spec that fails Validate also returns nil.
func (s BudgetSpec) New() Budget {
	b, err := s.build()
	if err != nil {
		return nil
	}
	return b
}

func (s BudgetSpec) build() (Budget, error) {
	nilIfErr := func(b Budget, err error) (Budget, error) {
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	switch s.Kind {
	case BudgetNone:
		return nil, nil
	case BudgetTokenBucket:
		return nilIfErr(NewTokenBucket(s.Max, s.Ratio))
	case BudgetRatio:
		return nilIfErr(NewRatioBudget(s.Ratio, s.Window))
	case BudgetAWS:
		return NewAWSQuota(), nil
	case BudgetGRPC:
		return nilIfErr(NewGRPCThrottle(s.Max, s.Ratio))
	case BudgetEnvoy:
		return nilIfErr(NewEnvoyBudget(s.Percent, s.Min))
	case BudgetFinagle:
		return nilIfErr(NewFinagleBudget(s.Window, s.Min, s.Ratio))
	case BudgetBreaker:
		return nilIfErr(NewRetryBreaker(s.Ratio, s.Window, s.Min))
	}
	return nil, fmt.Errorf("budget kind %q: want %s, %s, %s, %s, %s, %s or %s", s.Kind,
		BudgetTokenBucket, BudgetRatio, BudgetAWS, BudgetGRPC, BudgetEnvoy, BudgetFinagle, BudgetBreaker)
}
