package replay

// Recommendation is the policy an audit recommends and what adopting it
// changes, edge by edge.
type Recommendation struct {
	// Policy is the recommended policy expression; empty when every
	// candidate went metastable under some degradation.
	Policy string `json:"policy"`
	// Reason says in one sentence why it was chosen.
	Reason string `json:"reason"`
	// Changes are the concrete differences from the observed policies.
	Changes []Change `json:"changes"`
	// Rejected lists candidates ruled out, with why.
	Rejected []Rejection `json:"rejected"`
}

// Change is one concrete change on one edge (or one service, for Callee ""
// and Operation "").
type Change struct {
	Caller    string `json:"caller"`
	Callee    string `json:"callee"`
	Operation string `json:"operation"`
	Change    string `json:"change"`
}

// Rejection is a candidate policy that was ruled out.
type Rejection struct {
	Policy string `json:"policy"`
	Why    string `json:"why"`
}
