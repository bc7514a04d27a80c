package degrade

// Observed is the traces' own failure timeline: the incidents the traces
// captured (a dependency down for two seconds, then back) replayed when
// they happened, on top of the failure mix the model always carries. It
// takes no keys: the spec is just "observed". It has no per-attempt Effect
// here, since the timeline lives in the model built from the traces; the
// simulator asks Schedule.Observed whether to replay it. Every other fault
// combines with it as with any other.
const Observed Kind = "observed"

// Observed reports whether the schedule replays the traces' own failure
// timeline.
func (s Schedule) Observed() bool {
	for _, f := range s {
		if f.Kind == Observed {
			return true
		}
	}
	return false
}

// parseObserved reads the observed spec, which has no keys.
func parseObserved(spec, rest string) (Fault, error) {
	if rest != "" {
		return Fault{}, &SpecError{Spec: spec, Kind: Observed, Problem: "observed takes no keys"}
	}
	return Fault{Kind: Observed}, nil
}
