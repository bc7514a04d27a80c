package graph

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Arrival is one root request as the traces saw it: when it came, relative
// to the first, and which root operation it asked for.
type Arrival struct {
	AtS       float64
	Service   string
	Operation string
}

// rootArrivals lists the root requests in time order: the root SERVER
// spans that become the `user` edges of the topology, and the root CLIENT
// spans that start a call of a client with no span around its calls
// (Calibration.ClientRoots).
func rootArrivals(ix *index) []Arrival {
	var roots []int32
	for i := range ix.spans {
		if ix.keep[i] && ix.parent[i] < 0 && (isServer(&ix.spans[i]) || ix.clientRootRequest(int32(i))) {
			roots = append(roots, int32(i))
		}
	}
	slices.SortFunc(roots, func(a, b int32) int {
		if d := ix.spans[a].Start - ix.spans[b].Start; d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	out := make([]Arrival, len(roots))
	for k, r := range roots {
		sp := &ix.spans[r]
		out[k] = Arrival{AtS: float64(sp.Start-ix.spans[roots[0]].Start) / 1e9, Service: ix.str(sp.Service), Operation: ix.opName(r)}
	}
	return out
}

// MaxTimelineArrivals bounds an arrival timeline: up to that many root
// requests are listed one by one; past it they are counted in at most
// that many equal bins.
const MaxTimelineArrivals = 10_000

// MaxTimelineRequests bounds the root requests a timeline read from a
// file may stand for: its expansion into arrivals is that long.
const MaxTimelineRequests = 1 << 24

// ArrivalTimeline is when the root requests came, for a replay that sends
// them as the traces did rather than as a Poisson stream at their mean
// rate: real traffic comes in bursts, and breakers, budgets and queues
// answer to bursts. Times count from the arrival window's start (the
// first root request kept; the failure timeline's buckets count from it
// too) and stray roots are left out, so it spans the arrival window.
// Up to MaxTimelineArrivals requests it lists each one (GapsUS, Entry);
// past that it counts them per bin (BinUS, Counts), and a replay spreads
// each bin's requests evenly over it and over the entries by their share.
type ArrivalTimeline struct {
	// Entries are the root operations, each with its root requests.
	Entries []TimelineEntry `json:"entries"`
	// Requests is how many root requests the timeline holds.
	Requests int `json:"requests"`
	// GapsUS are, request by request, the microseconds since the one
	// before (the first's since the window's start: 0).
	GapsUS []int64 `json:"gaps_us,omitempty"`
	// Entry is each listed request's index in Entries; omitted when there
	// is one entry.
	Entry []int `json:"entry,omitempty"`
	// BinUS and Counts, when the requests are too many to list: how many
	// started in each bin of BinUS microseconds from the window's start.
	BinUS  int64 `json:"bin_us,omitempty"`
	Counts []int `json:"counts,omitempty"`
}

// TimelineEntry is one root operation of a timeline.
type TimelineEntry struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
	Requests  int    `json:"requests"`
}

// Binned reports whether the timeline counts its requests per bin rather
// than listing them.
func (tl *ArrivalTimeline) Binned() bool { return tl.BinUS > 0 }

// arrivalTimeline is the timeline of the root requests that started from
// lo to hi (ns; the kept ones, strays left out), listed up to limit of
// them, binned past it (MaxTimelineArrivals). Every one must be a root
// operation of the topology (a SERVER span, a `user` edge, or a root
// CLIENT span, a client's call: Calibration.ClientRoots): otherwise
// the timeline would send fewer requests than the rate counts, and it is
// nil, as it is with fewer than two requests.
func arrivalTimeline(roots map[node]*rootOp, lo, hi int64, limit int) *ArrivalTimeline {
	type start struct {
		at    int64
		entry int
	}
	var starts []start
	tl := &ArrivalTimeline{Entries: []TimelineEntry{}}
	for _, n := range sortedNodes(roots) {
		o := roots[n]
		in := 0
		for _, r := range o.reqs {
			if r.start >= lo && r.start <= hi {
				starts = append(starts, start{r.start - lo, len(tl.Entries)})
				in++
			}
		}
		if in == 0 {
			continue
		}
		if !o.server && !o.client {
			return nil
		}
		tl.Entries = append(tl.Entries, TimelineEntry{Service: n.svc, Operation: n.op, Requests: in})
	}
	if len(starts) < 2 || hi <= lo {
		return nil
	}
	slices.SortFunc(starts, func(a, b start) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.entry, b.entry)) })
	tl.Requests = len(starts)
	if len(starts) > limit {
		// Bins of whole microseconds, at most limit of them, the last
		// one holding the latest start.
		span := (hi - lo) / 1000
		tl.BinUS = span/int64(limit) + 1
		tl.Counts = make([]int, span/tl.BinUS+1)
		for _, s := range starts {
			tl.Counts[s.at/1000/tl.BinUS]++
		}
		return tl
	}
	tl.GapsUS = make([]int64, len(starts))
	prev := int64(0)
	for i, s := range starts {
		us := s.at / 1000
		tl.GapsUS[i], prev = us-prev, us
	}
	if len(tl.Entries) > 1 {
		tl.Entry = make([]int, len(starts))
		for i, s := range starts {
			tl.Entry[i] = s.entry
		}
	}
	return tl
}

// Arrivals expands the timeline into root requests in time order: each
// listed one at its time, or each bin's spread evenly over the bin, their
// entries dealt out by the entries' shares (smooth weighted round robin,
// so every stretch of requests keeps the mix). It checks what a file may
// hold wrong: counts that disagree, entries out of range, negative gaps,
// more than MaxTimelineRequests requests.
func (tl *ArrivalTimeline) Arrivals() ([]Arrival, error) {
	if tl.Requests < 1 || tl.Requests > MaxTimelineRequests {
		return nil, fmt.Errorf("arrival timeline of %d root requests: want 1 to %d", tl.Requests, MaxTimelineRequests)
	}
	sum := 0
	for _, e := range tl.Entries {
		if e.Requests < 0 {
			return nil, fmt.Errorf("arrival timeline: entry %s %s has %d requests: want 0 or more", e.Service, e.Operation, e.Requests)
		}
		sum += e.Requests
	}
	if len(tl.Entries) == 0 || sum != tl.Requests {
		return nil, fmt.Errorf("arrival timeline: its %d entries hold %d root requests, not the %d it says", len(tl.Entries), sum, tl.Requests)
	}
	out := make([]Arrival, 0, tl.Requests)
	add := func(us float64, entry int) {
		e := &tl.Entries[entry]
		out = append(out, Arrival{AtS: us / 1e6, Service: e.Service, Operation: e.Operation})
	}
	if !tl.Binned() {
		if len(tl.GapsUS) != tl.Requests || len(tl.Entry) != 0 && len(tl.Entry) != tl.Requests || len(tl.Entry) == 0 && len(tl.Entries) > 1 {
			return nil, fmt.Errorf("arrival timeline: %d gaps and %d entries for %d root requests of %d operations: want a gap each, and an entry each unless there is one operation", len(tl.GapsUS), len(tl.Entry), tl.Requests, len(tl.Entries))
		}
		at := int64(0)
		for i, g := range tl.GapsUS {
			if g < 0 || g > math.MaxInt64-at {
				return nil, fmt.Errorf("arrival timeline: gap %d is %dµs: want 0 or more, times within range", i, g)
			}
			at += g
			entry := 0
			if len(tl.Entry) > 0 {
				entry = tl.Entry[i]
			}
			if entry < 0 || entry >= len(tl.Entries) {
				return nil, fmt.Errorf("arrival timeline: request %d is of entry %d: want 0 to %d", i, entry, len(tl.Entries)-1)
			}
			add(float64(at), entry)
		}
		return out, nil
	}
	n := 0
	for i, c := range tl.Counts {
		if c < 0 || c > tl.Requests-n {
			return nil, fmt.Errorf("arrival timeline: bin %d counts %d root requests: want 0 or more, %d in all", i, c, tl.Requests)
		}
		n += c
	}
	if n != tl.Requests || len(tl.Counts) > MaxTimelineArrivals+1 {
		return nil, fmt.Errorf("arrival timeline: %d bins count %d root requests: want at most %d bins counting the %d it says", len(tl.Counts), n, MaxTimelineArrivals+1, tl.Requests)
	}
	credit := make([]int, len(tl.Entries))
	for i, c := range tl.Counts {
		for k := range c {
			// Smooth weighted round robin: each entry gains its weight,
			// the richest is dealt and pays the total.
			best := 0
			for j, e := range tl.Entries {
				credit[j] += e.Requests
				if credit[j] > credit[best] {
					best = j
				}
			}
			credit[best] -= tl.Requests
			add(float64(tl.BinUS)*(float64(i)+(float64(k)+0.5)/float64(c)), best)
		}
	}
	return out, nil
}
