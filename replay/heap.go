package replay

import (
	"math"
	"math/bits"
)

// event is one scheduled happening. Events with equal times run in the
// order they were scheduled, which keeps runs deterministic: key is the
// scheduling sequence number shifted past the kind, so ordering by key is
// ordering by sequence, and the record is 24 bytes, three words a move.
// The time is kept as timeKey's integer, so that the heap compares
// integers: a float's compare and its move to an integer register sat on
// the heap's longest dependency chain.
type event struct {
	at  uint64 // timeKey(t)
	key uint64 // seq<<kindBits | kind
	id  int32  // the entity the event is about (job, attempt, call…)
	gen int32  // the entity's generation when scheduled: stale events are skipped
}

type evKind uint8

// kindBits is the width of the kind in an event's key: evKind's, so every
// kind fits, leaving 56 bits of sequence (7e16 events).
const kindBits = 8

func (e *event) kind() evKind { return evKind(e.key) }

// time is the event's time.
func (e *event) time() float64 { return keyTime(e.at) }

func (e *event) seq() uint64 { return e.key >> kindBits }

// before is the events' order: by time, then by scheduling.
func (e *event) before(o *event) bool {
	return e.at < o.at || e.at == o.at && e.key < o.key
}

// timeKey maps a time to an integer in the same order as the float
// comparison's: a non-negative time's bits with the top bit set, a
// negative time's bits inverted. -0 becomes +0 first (t + 0), so the two
// tie as they do in a float comparison; keyTime gives it back as +0.
// (Times are never NaN.)
func timeKey(t float64) uint64 {
	b := math.Float64bits(t + 0)
	return b ^ (uint64(int64(b)>>63) | 1<<63)
}

// keyTime is the time of timeKey's integer k.
func keyTime(k uint64) float64 {
	return math.Float64frombits(k ^ (uint64(int64(^k)>>63) | 1<<63))
}

// eventHeap is a min-heap of events by (t, seq), written out for the
// concrete type: container/heap's interface calls cost a third of the loop.
// It is 4-ary: half the levels of a binary heap, and the four children of
// a node share two cache lines, which makes pop (the costlier half) about
// a third cheaper on the engine's heaps of a few hundred to a few thousand
// events. (t, seq) is a total order, so the pop order is the same as any
// other heap's.
type eventHeap struct {
	ev  []event
	seq uint64
}

// stamp is the key of the next event of kind: one more in the sequence.
func (h *eventHeap) stamp(kind evKind) uint64 {
	h.seq++
	return h.seq<<kindBits | uint64(kind)
}

func (h *eventHeap) push(t float64, kind evKind, id, gen int32) {
	e := event{at: timeKey(t), key: h.stamp(kind), id: id, gen: gen}
	h.ev = append(h.ev, e)
	ev := h.ev
	i := len(ev) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&ev[p]) {
			break
		}
		ev[i] = ev[p]
		i = p
	}
	ev[i] = e
}

// pop removes and returns the earliest event. The last event fills the
// root's place bottom-up: the hole left by the root moves down to a leaf
// along the smallest children, then the last event rises from there to
// its place. It came from the bottom, so it rarely rises far, and the way
// down needs no comparison with it. Below a node with four children the
// smallest is found without a branch (two pairs, then their winners, as
// index arithmetic on earlier's 0 or 1): which child wins is a coin toss
// the branch predictor lost about half the time, and pop took a quarter
// longer. The order is total, so the smallest child, and the pop order,
// is the same either way.
func (h *eventHeap) pop() event {
	ev := h.ev
	top := ev[0]
	n := len(ev) - 1
	last := ev[n]
	h.ev = h.ev[:n]
	ev = ev[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c+3 >= n {
			break
		}
		a := c + int(earlier(&ev[c+1], &ev[c]))
		b := c + 2 + int(earlier(&ev[c+3], &ev[c+2]))
		m := a ^ (a^b)&-int(earlier(&ev[b], &ev[a]))
		ev[i] = ev[m]
		i = m
	}
	if c := 4*i + 1; c < n {
		m := c
		for k := c + 1; k < n; k++ {
			if ev[k].before(&ev[m]) {
				m = k
			}
		}
		ev[i] = ev[m]
		i = m
	}
	for i > 0 {
		p := (i - 1) / 4
		if !last.before(&ev[p]) {
			break
		}
		ev[i] = ev[p]
		i = p
	}
	ev[i] = last
	return top
}

// earlier is e.before(o) as 1 or 0, without a branch: (time, key)
// compared as one 128-bit number, the borrow of the subtraction.
func earlier(e, o *event) uint {
	_, b := bits.Sub64(e.key, o.key, 0)
	_, b = bits.Sub64(e.at, o.at, b)
	return uint(b)
}

func (h *eventHeap) len() int { return len(h.ev) }

// agenda is the engine's event queue: the heap, and beside it two
// sources that need no heap. The next root arrival has a slot of its own:
// an open-loop stream (Poisson or the traces' own times) has exactly one
// pending, always among the earliest events. Timeouts go to a FIFO lane
// while they come in time order, as they do when every attempt waits the
// same per-try timeout; one that would come before the lane's last goes
// to the heap. Each costs a comparison instead of a push and a pop on a
// heap that would otherwise hold them all. pop returns the earliest of the
// three by (t, seq), with seq from the one counter, so the order is the
// same as one heap's.
type agenda struct {
	eventHeap
	next     event // the pending arrival, while waiting
	waiting  bool
	lane     []event // timeouts in (t, seq) order, from laneHead on
	laneHead int
}

// later schedules an event of a kind that always goes to the heap (not
// an arrival, not a timeout): push without the choice of source, which
// the engine's hottest calls know statically. Either way of scheduling
// gives the same order; this only skips the checks.
func (a *agenda) later(t float64, kind evKind, id, gen int32) {
	a.eventHeap.push(t, kind, id, gen)
}

func (a *agenda) push(t float64, kind evKind, id, gen int32) {
	switch {
	case kind == evArrival && !a.waiting:
		a.arrival(t, id, gen)
	case kind == evTimeout && (a.laneHead == len(a.lane) || timeKey(t) >= a.lane[len(a.lane)-1].at):
		a.lane = append(a.lane, event{at: timeKey(t), key: a.stamp(kind), id: id, gen: gen})
	default:
		a.eventHeap.push(t, kind, id, gen)
	}
}

// arrival schedules the next root arrival in its slot, which must be
// free (!waiting): push's first case, which the engine's arrival handler
// knows statically (the arrival it handles was the slot's).
func (a *agenda) arrival(t float64, id, gen int32) {
	a.next = event{at: timeKey(t), key: a.stamp(evArrival), id: id, gen: gen}
	a.waiting = true
}

// laneEmpty reports whether the timeout lane holds nothing: then the
// earliest event is the arrival's or the heap's (see arrivalFirst). The
// run loop asks, and takes either itself, without pop's call, for almost
// every event of a run without per-try timeouts.
func (a *agenda) laneEmpty() bool { return a.laneHead == len(a.lane) }

// arrivalFirst reports whether the pending arrival comes before the
// heap's earliest, when the lane is empty.
func (a *agenda) arrivalFirst() bool {
	return a.waiting && (len(a.ev) == 0 || a.next.before(&a.ev[0]))
}

// takeArrival pops the pending arrival.
func (a *agenda) takeArrival() event {
	a.waiting = false
	return a.next
}

func (a *agenda) pop() event {
	if a.laneEmpty() {
		// No timeout pending in the lane (one service without timeouts,
		// or between bursts): the arrival or the heap's earliest.
		if a.arrivalFirst() {
			return a.takeArrival()
		}
		return a.eventHeap.pop()
	}
	var top *event
	if len(a.ev) > 0 {
		top = &a.ev[0]
	}
	if a.laneHead < len(a.lane) {
		if l := &a.lane[a.laneHead]; top == nil || l.before(top) {
			top = l
		}
	}
	switch {
	case a.waiting && (top == nil || a.next.before(top)):
		a.waiting = false
		return a.next
	case len(a.ev) == 0 || top != &a.ev[0]:
		e := a.lane[a.laneHead]
		a.laneHead++
		if a.laneHead == len(a.lane) {
			a.lane, a.laneHead = a.lane[:0], 0
		} else if a.laneHead > 1024 && a.laneHead*2 > len(a.lane) {
			a.lane = append(a.lane[:0], a.lane[a.laneHead:]...)
			a.laneHead = 0
		}
		return e
	}
	return a.eventHeap.pop()
}

func (a *agenda) len() int {
	n := len(a.ev) + len(a.lane) - a.laneHead
	if a.waiting {
		n++
	}
	return n
}
