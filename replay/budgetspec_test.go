package replay

import (
	"reflect"
	"testing"
)

// TestBudgetSpec: each kind builds a fresh budget of its reference type
// with its parameters, checked by the constructor; an invalid spec fails
// Validate and Model.Validate.
func TestBudgetSpec(t *testing.T) {
	tests := []struct {
		spec BudgetSpec
		want Budget // nil: no budget
	}{
		{BudgetSpec{}, nil},
		{BudgetSpec{Kind: BudgetTokenBucket, Max: 10, Ratio: 0.1}, must(NewTokenBucket(10, 0.1))},
		{BudgetSpec{Kind: BudgetRatio, Ratio: 0.1, Window: 10}, must(NewRatioBudget(0.1, 10))},
		{BudgetSpec{Kind: BudgetAWS}, NewAWSQuota()},
		{BudgetSpec{Kind: BudgetGRPC, Max: 10, Ratio: 0.1}, must(NewGRPCThrottle(10, 0.1))},
		{BudgetSpec{Kind: BudgetEnvoy, Percent: 20, Min: 3}, must(NewEnvoyBudget(20, 3))},
		{BudgetSpec{Kind: BudgetFinagle, Window: 10, Min: 10, Ratio: 0.2}, DefaultFinagleBudget()},
	}
	for _, tt := range tests {
		if err := tt.spec.Validate(); err != nil {
			t.Errorf("%+v: %v", tt.spec, err)
		}
		a, b := tt.spec.New(), tt.spec.New()
		if !reflect.DeepEqual(a, tt.want) {
			t.Errorf("%+v: New() = %#v, want %#v", tt.spec, a, tt.want)
		}
		if a != nil && a == b {
			t.Errorf("%+v: New returned the same instance twice", tt.spec)
		}
	}
	for _, bad := range []BudgetSpec{{Kind: "leaky"}, {Kind: BudgetGRPC}, {Kind: BudgetEnvoy, Percent: 120}, {Kind: BudgetFinagle, Window: 0.5}} {
		if bad.Validate() == nil || bad.New() != nil {
			t.Errorf("%+v: accepted", bad)
		}
		m := single("s", 1, Constant(0.01), 10, 0, Policy{MaxAttempts: 2, Budget: bad})
		if m.Validate() == nil {
			t.Errorf("%+v: Model.Validate accepted it", bad)
		}
	}
}

// TestPolicyIsAValue: policies built apart compare equal with ==, budget
// and breaker included, and differ when any parameter does.
func TestPolicyIsAValue(t *testing.T) {
	mk := func() Policy {
		return Policy{MaxAttempts: 3, Backoff: DefaultBackoff, Budget: sharedRatioBudget, SharedBudget: true, Breaker: DefaultBreaker}
	}
	if mk() != mk() {
		t.Fatal("two equal policies differ")
	}
	p := mk()
	p.Budget.Ratio = 0.2
	q := mk()
	q.Breaker.OpenFor = 1
	if p == mk() || q == mk() {
		t.Error("policies with different budgets or breakers compare equal")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
