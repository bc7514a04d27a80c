package replay

// event is one scheduled happening. Events with equal times run in the
// order they were scheduled (seq), which keeps runs deterministic.
type event struct {
	t    float64
	seq  uint64
	kind evKind
	id   int32 // the entity the event is about (job, attempt, call…)
	gen  int32 // the entity's generation when scheduled: stale events are skipped
}

type evKind uint8

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

func (h *eventHeap) push(t float64, kind evKind, id, gen int32) {
	h.seq++
	e := event{t: t, seq: h.seq, kind: kind, id: id, gen: gen}
	h.ev = append(h.ev, e)
	ev := h.ev
	i := len(ev) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !(e.t < ev[p].t || e.t == ev[p].t && e.seq < ev[p].seq) {
			break
		}
		ev[i] = ev[p]
		i = p
	}
	ev[i] = e
}

func (h *eventHeap) pop() event {
	ev := h.ev
	top := ev[0]
	n := len(ev) - 1
	last := ev[n]
	h.ev = ev[:n]
	ev = ev[:n]
	if n == 0 {
		return top
	}
	// Sift the last event down from the root, moving the smallest child up.
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for k := c + 1; k < end; k++ {
			if ev[k].t < ev[m].t || ev[k].t == ev[m].t && ev[k].seq < ev[m].seq {
				m = k
			}
		}
		if !(ev[m].t < last.t || ev[m].t == last.t && ev[m].seq < last.seq) {
			break
		}
		ev[i] = ev[m]
		i = m
	}
	ev[i] = last
	return top
}

func (h *eventHeap) len() int { return len(h.ev) }
