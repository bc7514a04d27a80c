package graph

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// FailureRateFit sizes a breaker that trips on the share of failed calls
// over a time window (Breaker.TripRule "failure-rate"): the windows,
// shares and minimum calls consistent with every closed-state failure the
// traces show, each of which either opened the breaker (the next request
// was failed fast) or did not (the next request made the call sooner
// after the failure than half the breaker's open time, while it would
// still have been open).
//
// A breaker of this kind opens on a failure when, over the calls whose
// results came in the last W of time (the failure included), there are at
// least MinCalls and the failed share is at least Share. Three readings
// of what its window holds are tried, since libraries differ and the
// traces may not tell them apart: ReadingRollingRejected (a rolling
// window never cleared, whose calls include the ones it refused while
// open: opossum), ReadingRolling (never cleared, refused calls not
// counted) and ReadingCleared (emptied whenever it opens or closes:
// resilience4j, Polly's advanced breaker, Hystrix). The ranges are the
// hull of what every reading that fits allows; Readings lists those.
type FailureRateFit struct {
	// Fit is FitSized where some window on the grid and some reading fit
	// every event, FitUnknown where none does or too few events could be
	// read (Why says which, with the counts).
	Fit string `json:"fit"`
	// Trips counts the closed-state failures that opened the breaker,
	// LetThrough those after which the next call went out while it would
	// have been open: the evidence.
	Trips      int `json:"trips"`
	LetThrough int `json:"let_through"`
	// Why says, for FitUnknown, what was missing.
	Why string `json:"why,omitempty"`
	// WindowMSTested is the grid's first and last window (ms); windows
	// step by a factor 2^(1/8) (9%) between them.
	WindowMSTested [2]float64 `json:"window_ms_tested"`
	// Readings lists the readings of the window that fit, in the order
	// ReadingCleared, ReadingRolling, ReadingRollingRejected.
	Readings []string `json:"readings,omitempty"`
	// ShareRange [lo, hi]: the lowest failed share that opened the
	// breaker is hi, the highest that did not (with as many calls as the
	// fewest it opened with) is lo. A breaker opening at a share of at
	// least t has lo < t ≤ hi; one opening above t, lo ≤ t < hi.
	ShareRange []float64 `json:"share_range,omitempty"`
	// WindowMSRange: the shortest and longest windows (ms) that fit: from
	// (1-fitBucket) of the shortest grid window that fits (the least a
	// window counted in buckets covers) to the longest.
	WindowMSRange []float64 `json:"window_ms_range,omitempty"`
	// WindowUnbounded is true where the longest window tested fits: any
	// longer one fits the traces as well (a window that outlasts the
	// time between the breaker's resets, as Hystrix's ten seconds
	// emptied whenever it closes, counts the same calls), so
	// WindowMSRange's top is only the longest the traces could test,
	// not a bound.
	WindowUnbounded bool `json:"window_unbounded,omitempty"`
	// MinCallsRange: the fewest and most calls the window may need
	// before the breaker opens.
	MinCallsRange []int `json:"min_calls_range,omitempty"`
	// Estimate is true where the ranges are narrow (window within a
	// factor 1.5, share within 0.1, minimum calls within 2): Replay is then
	// an estimate; otherwise it is only a representative inside them.
	Estimate bool `json:"estimate"`
	// Replay is the breaker the replay runs: one fitting reading (the
	// one with the most fitting windows), its middle fitting window, the
	// middle of its minimum-calls range there and the middle of the
	// shares that fit with it.
	Replay *FailureRateBreaker `json:"replay,omitempty"`
}

// FailureRateBreaker is one breaker that fits the traces: it opens on a
// failed call when, over the results of the last WindowMS, there are at
// least MinCalls calls and at least Share of them failed, its window read
// as Reading says (ReadingCleared, ReadingRolling or
// ReadingRollingRejected).
type FailureRateBreaker struct {
	Reading  string  `json:"reading"`
	Share    float64 `json:"share"`
	WindowMS float64 `json:"window_ms"`
	MinCalls int     `json:"min_calls"`
}

// FailureRateFit.Fit values, and the readings of the window.
const (
	FitSized   = "sized"
	FitUnknown = "unknown"

	ReadingCleared         = "cleared"
	ReadingRolling         = "rolling"
	ReadingRollingRejected = "rolling-with-rejected"
)

// Fit evidence and grid (and the bucket slack counts reads): at least fitMinTrips trips and fitMinLetThrough
// let-through failures must be readable in a window for it to be judged
// (fewer fit nearly anything); windows step by fitGridStep from the median
// gap between requests to half the time the requests span (so a window
// leaves at least half the timeline whose windows the traces hold whole).
const (
	fitMinTrips      = 2
	fitMinLetThrough = 2
	fitGridStep      = 1.0905077326652577 // 2^(1/8)
	fitMaxGrid       = 256
	fitBucket        = 0.1
	fitSliceScan     = 64 // results in a bucket's slice read one by one; more are bounded
)

// What one of a breaker's requests did, for the fit.
const (
	brOK       uint8 = iota // made the call while closed; it succeeded
	brFailed                // made the call while closed; it failed
	brProbeOK               // the call an open breaker let through succeeded: it closed
	brProbeBad              // the call an open breaker let through failed: it opened again
	brRejected              // failed fast by the open breaker
	brNone                  // none of these: no call, and not failed fast by a breaker
)

// brKind is probe where the breaker was open when the call came (the
// call it let through), closed otherwise.
func brKind(open bool, probe, closed uint8) uint8 {
	if open {
		return probe
	}
	return closed
}

// brEvent is one request of a breaker's caller operation (ns).
type brEvent struct {
	start, end int64
	kind       uint8
}

// fitEvent is a closed-state failure read for the fit: the index of its
// request, and whether it opened the breaker.
type fitEvent struct {
	at   int
	trip bool
}

// fitFailureRate sizes a failure-rate breaker from its requests in start
// order, one list per caller instance that keeps a breaker of its own
// (one list where the traces name no instances): each instance's window
// holds only its own calls, and one setting must fit every instance's
// events. openMS is how long it stays open.
func fitFailureRate(groups [][]brEvent, openMS float64) *FailureRateFit {
	f := &FailureRateFit{Fit: FitUnknown}
	total := 0
	for _, evs := range groups {
		total += len(evs)
	}
	if total < 2 {
		f.Why = "fewer than 2 requests"
		return f
	}
	type instanceFit struct {
		w      *fitWindows
		events []fitEvent
	}
	var fs []instanceFit
	var gaps []float64
	lo, hi := 0.0, 0.0
	soon := int64(openMS / 2 * 1e6)
	for _, evs := range groups {
		if len(evs) == 0 {
			continue
		}
		w := newFitWindows(evs)
		fs = append(fs, instanceFit{w, failureEvents(evs, w, soon, f)})
		for i := 1; i < len(evs); i++ {
			gaps = append(gaps, float64(evs[i].start-evs[i-1].start))
		}
		hi = max(hi, float64(evs[len(evs)-1].end-evs[0].start)/2)
	}
	// The grid, from the median gap between requests (of one instance)
	// to half the time they span.
	slices.Sort(gaps)
	lo = 1e6
	if len(gaps) > 0 {
		lo = max(quantile(gaps, 0.5), 1e6)
	}
	f.WindowMSTested = [2]float64{round3(lo / 1e6), round3(hi / 1e6)}
	var grid []float64
	for w := lo; w <= hi && len(grid) < fitMaxGrid; w *= fitGridStep {
		grid = append(grid, w)
	}
	switch {
	case f.Trips < fitMinTrips || f.LetThrough < fitMinLetThrough:
		f.Why = fmt.Sprintf("%d trips and %d calls let through after a failure: too few to size it (at least %d and %d)", f.Trips, f.LetThrough, fitMinTrips, fitMinLetThrough)
		return f
	case len(grid) == 0:
		f.Why = fmt.Sprintf("%d trips and %d calls let through after a failure, but the requests span too little time for a window: half their span (%.3gms) is below the median gap between them (%.3gms)",
			f.Trips, f.LetThrough, hi/1e6, lo/1e6)
		return f
	}
	// counts reads every instance's events for one reading and window.
	counts := func(reading string, win int64) (trips, passes []fitCount, bounded, ok bool) {
		var allTrips, allPasses int
		for _, x := range fs {
			t, p, b, nt, np := x.w.counts(x.events, reading, win)
			trips, passes, bounded = append(trips, t...), append(passes, p...), bounded || b
			allTrips, allPasses = allTrips+nt, allPasses+np
		}
		return trips, passes, bounded, len(trips) >= max(fitMinTrips, (allTrips+1)/2) && len(passes) >= max(fitMinLetThrough, (allPasses+1)/2)
	}
	type fitted struct {
		reading          string
		window           float64
		tripMin          fitCount // the fewest calls and the lowest share any trip had
		minCalls, maxMin int
		shareLo          float64
		passes           []fitCount
		bounded          bool // some event's slice was bounded, not read
	}
	var fits []fitted
	judged := 0
	for _, reading := range []string{ReadingCleared, ReadingRolling, ReadingRollingRejected} {
		for _, win := range grid {
			trips, passes, bounded, ok := counts(reading, int64(win))
			if !ok {
				continue
			}
			judged++
			tm := fitCount{n: math.MaxInt, share: 2}
			for _, c := range trips {
				tm.n = min(tm.n, c.n)
				tm.share = min(tm.share, c.share)
			}
			// Passes at or above the lowest tripping share must have had
			// fewer calls than the breaker needs.
			need := 1
			for _, c := range passes {
				if c.share >= tm.share {
					need = max(need, c.n+1)
				}
			}
			if need > tm.n {
				continue
			}
			fits = append(fits, fitted{reading, win, tm, need, tm.n, shareBelow(passes, tm.n), passes, bounded})
		}
	}
	if judged == 0 {
		f.Why = fmt.Sprintf("%d trips and %d calls let through after a failure, but no window on the grid has %d and %d of them, and half of each, whole in the traces",
			f.Trips, f.LetThrough, fitMinTrips, fitMinLetThrough)
		return f
	}
	if len(fits) == 0 {
		f.Why = fmt.Sprintf("no window on the grid and no reading of it fits all %d trips and %d calls let through after a failure", f.Trips, f.LetThrough)
		return f
	}
	f.Fit = FitSized
	seen := map[string]bool{}
	f.ShareRange = []float64{2, 0}
	f.WindowMSRange = []float64{math.Inf(1), 0}
	f.MinCallsRange = []int{math.MaxInt, 0}
	for _, x := range fits {
		if !seen[x.reading] {
			f.Readings = append(f.Readings, x.reading)
			seen[x.reading] = true
		}
		f.ShareRange[0] = min(f.ShareRange[0], x.shareLo)
		f.ShareRange[1] = max(f.ShareRange[1], x.tripMin.share)
		f.WindowMSRange[0] = min(f.WindowMSRange[0], x.window)
		f.WindowMSRange[1] = max(f.WindowMSRange[1], x.window)
		f.MinCallsRange[0] = min(f.MinCallsRange[0], x.minCalls)
		f.MinCallsRange[1] = max(f.MinCallsRange[1], x.maxMin)
	}
	f.WindowUnbounded = f.WindowMSRange[1] == grid[len(grid)-1]
	// Rounded outwards, so that the ranges never leave out what fits.
	f.ShareRange[0], f.ShareRange[1] = math.Floor(f.ShareRange[0]*1000)/1000, math.Ceil(f.ShareRange[1]*1000)/1000
	f.WindowMSRange[0] = math.Floor(f.WindowMSRange[0]*(1-fitBucket)/1e3) / 1000
	f.WindowMSRange[1] = math.Ceil(f.WindowMSRange[1]/1e3) / 1000
	f.Estimate = !f.WindowUnbounded && f.WindowMSRange[1] <= 1.5*f.WindowMSRange[0] && f.ShareRange[1]-f.ShareRange[0] <= 0.1 && f.MinCallsRange[1]-f.MinCallsRange[0] <= 2
	// The representative: a window whose slices were all read (bounded
	// ones allow more than the traces do) where there is one; the fewest
	// minimum calls that fit (a breaker's minimum guards sparse windows;
	// the fewest assumes least), and where
	// at that minimum trips and let-through failures stand furthest apart
	// (the lowest share that opened it above the highest that did not;
	// the first reading and the shortest window on a tie), the share
	// midway between them.
	best, gap := 0, -1.0
	for k, x := range fits {
		g := x.tripMin.share - shareBelow(x.passes, x.minCalls)
		y := fits[best]
		switch {
		case x.bounded != y.bounded:
			if x.bounded {
				continue
			}
		case x.minCalls > y.minCalls, x.minCalls == y.minCalls && g <= gap:
			continue
		}
		best, gap = k, g
	}
	x := fits[best]
	f.Replay = &FailureRateBreaker{
		Reading:  x.reading,
		Share:    round3((shareBelow(x.passes, x.minCalls) + x.tripMin.share) / 2),
		WindowMS: round3(x.window / 1e6),
		MinCalls: x.minCalls,
	}
	return f
}

// failureEvents reads each closed-state failure of one breaker's requests
// (evs, in start order; w their windows): the next request to start once
// its result was in either was refused (a trip) or made the call sooner
// than soon, while an opened breaker would have refused it. A refusal
// after another call's result came in too (calls overlapping) may be that
// one's doing: no trip is read from it; nor is anything read from a
// failure whose result came after a request that started later than it
// was refused (the breaker opened while it was in flight). The counts go to f.
func failureEvents(evs []brEvent, w *fitWindows, soon int64, f *FailureRateFit) []fitEvent {
	starts := make([]int64, len(evs))
	for i, e := range evs {
		starts[i] = e.start
	}
	var events []fitEvent
	for i, e := range evs {
		if e.kind != brFailed {
			continue
		}
		j := sort.Search(len(starts), func(k int) bool { return starts[k] >= e.end })
		// The latest other request to start before the result came in:
		// refused after this call went out, the breaker opened while it
		// was in flight, and no longer counts its result: no event.
		k := j - 1
		if k == i {
			k--
		}
		if k >= 0 && evs[k].kind == brRejected && evs[k].start > e.start {
			continue
		}
		for j < len(evs) && j == i {
			j++
		}
		if j >= len(evs) {
			continue
		}
		switch nx := evs[j]; {
		case nx.kind == brRejected && w.resultsIn(e.end, nx.start) > 1:
		case nx.kind == brRejected:
			events = append(events, fitEvent{i, true})
			f.Trips++
		case nx.start-e.end < soon:
			events = append(events, fitEvent{i, false})
			f.LetThrough++
		}
	}
	return events
}

// shareBelow is the highest share among passes with at least n calls (0
// for none): a breaker needing n calls opens above it.
func shareBelow(passes []fitCount, n int) float64 {
	s := 0.0
	for _, c := range passes {
		if c.n >= n {
			s = max(s, c.share)
		}
	}
	return s
}

// fitCount is what a breaker's window held at a failure: its calls and
// the failed share of them.
type fitCount struct {
	n     int
	share float64
}

// fitWindows answers, for a failure and a window, what the window held
// under each reading: the requests by the time their result came in
// (a refused request's at once), with running counts.
type fitWindows struct {
	evs  []brEvent
	ends []int64 // result times, sorted
	// Running counts over ends: calls made (closed or probe), failed,
	// refused; and the same for calls made while closed.
	calls, failed, refused []int
	// resets: when each open or close happened (a trip's result, a
	// probe's), sorted.
	resets []int64
	first  int64 // the first request's start: nothing is known before
}

func newFitWindows(evs []brEvent) *fitWindows {
	type res struct {
		t    int64
		kind uint8
	}
	rs := make([]res, len(evs))
	for i, e := range evs {
		rs[i] = res{e.end, e.kind}
	}
	slices.SortStableFunc(rs, func(a, b res) int { return cmpInt64(a.t, b.t) })
	w := &fitWindows{evs: evs, first: evs[0].start}
	w.ends = make([]int64, len(rs))
	w.calls = make([]int, len(rs)+1)
	w.failed = make([]int, len(rs)+1)
	w.refused = make([]int, len(rs)+1)
	for i, r := range rs {
		w.ends[i] = r.t
		w.calls[i+1], w.failed[i+1], w.refused[i+1] = w.calls[i], w.failed[i], w.refused[i]
		switch r.kind {
		case brRejected:
			w.refused[i+1]++
		case brFailed, brProbeBad:
			w.failed[i+1]++
			w.calls[i+1]++
		default:
			w.calls[i+1]++
		}
		if r.kind == brProbeOK || r.kind == brProbeBad {
			w.resets = append(w.resets, r.t)
		}
	}
	return w
}

// resultsIn counts the calls whose results came in at from to before to.
func (w *fitWindows) resultsIn(from, to int64) int {
	a := sort.Search(len(w.ends), func(k int) bool { return w.ends[k] >= from })
	b := sort.Search(len(w.ends), func(k int) bool { return w.ends[k] >= to })
	return w.calls[b] - w.calls[a]
}

// counts returns what the window held at each trip and each let-through
// failure under reading, for a window of win ns, and how many trips and
// let-through failures there were in all: the window is judged on too
// little where fewer events than the fit needs, or fewer than half of
// either kind, had their window whole in the traces.
//
// A window counted in buckets (opossum, Hystrix and Polly keep 10 of
// them) drops its oldest bucket whole: at a failure it covers between
// (1-fitBucket) of its length and all of it, depending on where in the
// newest bucket the failure falls. Each event is read with every window in
// that range: a trip with the highest failed share any of them gives and
// the fewest calls, a let-through failure with the lowest share and the
// most calls. The shares are thus read in the terms that allow the most,
// so the breaker that ran fits whatever its buckets were; the calls in
// the terms that allow the least, so that a minimum just below the calls
// a trip had cannot explain away every failure let through with a
// bucket's fewer (the price: a minimum within a bucket's worth of the
// calls its windows hold is not found).
func (w *fitWindows) counts(events []fitEvent, reading string, win int64) (trips, passes []fitCount, bounded bool, allTrips, allPasses int) {
	// A trip opens the breaker at its result: under ReadingCleared that
	// empties the window too.
	var tripEnds []int64
	if reading == ReadingCleared {
		for _, e := range events {
			if e.trip {
				tripEnds = append(tripEnds, w.evs[e.at].end)
			}
		}
		slices.Sort(tripEnds)
	}
	short := int64(float64(win) * (1 - fitBucket))
	at := func(t int64) int { return sort.Search(len(w.ends), func(k int) bool { return w.ends[k] > t }) }
	for _, e := range events {
		end := w.evs[e.at].end
		if e.trip {
			allTrips++
		} else {
			allPasses++
		}
		// The window (from, end] starts after index a at the longest,
		// a2 at the shortest; under ReadingCleared not before the latest
		// reset.
		from := end - win
		a, a2, b := at(from), at(end-short), at(end)
		if reading == ReadingCleared {
			reset := max(latestBefore(w.resets, end), latestBefore(tripEnds, end))
			from = max(from, reset)
			r := at(reset)
			a, a2 = max(a, r), max(a2, r)
		}
		if from < w.first {
			continue // the window reaches before the traces
		}
		lo, hi := fitCount{math.MaxInt, 2}, fitCount{0, -1}
		if a2-a > fitSliceScan {
			// A wide slice: bound the extremes instead of reading them
			// (the most failures over the fewest calls, the fewest over
			// the most), which allows as much and more.
			nLong, nShort := w.calls[b]-w.calls[a], w.calls[b]-w.calls[a2]
			if reading == ReadingRollingRejected {
				nLong += w.refused[b] - w.refused[a]
				nShort += w.refused[b] - w.refused[a2]
			}
			if nShort > 0 {
				lo = fitCount{nShort, float64(w.failed[b]-w.failed[a2]) / float64(nLong)}
				hi = fitCount{nLong, min(1, float64(w.failed[b]-w.failed[a])/float64(nShort))}
			}
			a2, bounded = a-1, true // nothing left to read
		}
		for s := a; s <= a2 && s < b; s++ {
			n, failed := w.calls[b]-w.calls[s], w.failed[b]-w.failed[s]
			if reading == ReadingRollingRejected {
				n += w.refused[b] - w.refused[s]
			}
			if n == 0 {
				continue
			}
			share := float64(failed) / float64(n)
			lo = fitCount{min(lo.n, n), min(lo.share, share)}
			hi = fitCount{max(hi.n, n), max(hi.share, share)}
		}
		switch {
		case hi.n == 0:
		case e.trip:
			trips = append(trips, fitCount{lo.n, hi.share})
		default:
			passes = append(passes, fitCount{hi.n, lo.share})
		}
	}
	return trips, passes, bounded, allTrips, allPasses
}

// latestBefore is the latest of sorted ts before t (math.MinInt64 for
// none).
func latestBefore(ts []int64, t int64) int64 {
	k := sort.Search(len(ts), func(k int) bool { return ts[k] >= t })
	if k == 0 {
		return math.MinInt64
	}
	return ts[k-1]
}
