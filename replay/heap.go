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

// eventHeap is a binary min-heap of events by (t, seq), written out for the
// concrete type: container/heap's interface calls cost a third of the loop.
type eventHeap struct {
	ev  []event
	seq uint64
}

func (h *eventHeap) less(i, j int) bool {
	a, b := &h.ev[i], &h.ev[j]
	return a.t < b.t || a.t == b.t && a.seq < b.seq
}

func (h *eventHeap) push(t float64, kind evKind, id, gen int32) {
	h.seq++
	h.ev = append(h.ev, event{t: t, seq: h.seq, kind: kind, id: id, gen: gen})
	i := len(h.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	top := h.ev[0]
	n := len(h.ev) - 1
	h.ev[0] = h.ev[n]
	h.ev = h.ev[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.ev[i], h.ev[m] = h.ev[m], h.ev[i]
		i = m
	}
	return top
}

func (h *eventHeap) len() int { return len(h.ev) }
