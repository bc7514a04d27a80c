package graph

import (
	"bytes"
	"context"
	"encoding/gob"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// partialsOf is the wire form of every partial that has one, as the map
// steps of inference over set in three shards send them.
func partialsOf(tb testing.TB, set *ingest.Set) [][]byte {
	var out [][]byte
	var mu sync.Mutex // serverStats' map step runs beside extraction's
	sh := shards{of: func(id ingest.TraceID) int { return int(id[15] % 3) }, order: []int{0, 1, 2}, sent: func(p any) any {
		mu.Lock()
		defer mu.Unlock()
		if data, err := encodePartial(set, p); err == nil {
			out = append(out, data)
		}
		return p
	}}
	ix, err := shardedIndex(context.Background(), set, sh)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := infer(context.Background(), ix); err != nil {
		tb.Fatal(err)
	}
	return out
}

// FuzzDecodePartial: bytes that are not a partial's wire form give an
// error, never a panic or an allocation beyond what the bytes hold; a
// partial that decodes encodes to bytes that decode to it again, and
// merges and fits.
func FuzzDecodePartial(f *testing.F) {
	for _, set := range []*ingest.Set{handBuiltMix(nil), manyRetries(nil)} {
		for _, data := range partialsOf(f, set) {
			f.Add(data)
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		set := ingest.NewSet()
		p, err := decodePartial(set, data)
		if err != nil {
			return
		}
		once, err := encodePartial(set, p)
		if err != nil {
			t.Fatalf("a decoded %T does not encode: %v", p, err)
		}
		q, err := decodePartial(set, once)
		if err != nil {
			t.Fatalf("a decoded %T, encoded again, does not decode: %v", p, err)
		}
		if twice, _ := encodePartial(set, q); !bytes.Equal(once, twice) {
			t.Fatalf("a decoded %T encodes otherwise each time", p)
		}
		switch p := p.(type) {
		case *edgeStats:
			p.merge(q.(*edgeStats))
			p.fit()
		case *opPartial:
			p.merge(q.(*opPartial))
			services(nil, p.ops, p.instrumented, p.instances, nil)
		case *headSampling:
			p.merge(q.(*headSampling))
			p.sampling()
		case *nameVotes:
			p.merge(q.(*nameVotes))
			p.peers.winners()
		case origins:
			p.merge(q.(origins))
		case *perEdge[int]:
			p.merge(q.(*perEdge[int]), addInt)
			p.in(p.keys)
		case *perEdge[map[ingest.TraceID]int64]:
			p.merge(q.(*perEdge[map[ingest.TraceID]int64]), mergeEarliest)
			p.in(p.keys)
		case *perEdge[overlaps]:
			p.merge(q.(*perEdge[overlaps]), (*overlaps).merge)
			for _, o := range p.in(p.keys) {
				medianCount(o.widths)
			}
		case *outcomeStats:
			p.merge(q.(*outcomeStats))
			p.reduce(&Edge{MaxAttempts: 3})
		case *callEndList:
			p.merge(q.(*callEndList))
		case *requestsHeld:
			p.merge(q.(*requestsHeld))
			for _, t := range p.served {
				peak(t.starts, t.ends)
			}
		case *perEdge[rootOutcomes]:
			p.merge(q.(*perEdge[rootOutcomes]), (*rootOutcomes).merge)
		case *chainTrie:
			p.merge(q.(*chainTrie))
			p.observed([]int{0, 0})
		case *rootSet:
			p.merge(q.(*rootSet))
			userEdges(p.ops)
			rootStats(p.ops)
			if lo, hi, window, _ := arrivalWindow(rootStarts(p.ops)); window > 0 {
				arrivalTimeline(p.ops, lo, hi, 4)
			}
		case *callOrders:
			p.merge(q.(*callOrders))
			for _, e := range p.edges.in(p.edges.keys) {
				slices.Sort(e.offsets)
				quantile(e.offsets, 0.5)
			}
		case map[node]*workTimes:
			mergeWork(p, q.(map[node]*workTimes))
			for _, x := range p {
				for k := range x {
					x[k].quantiles(WorkLevels)
				}
			}
		}
	})
}

// TestDecodePartialClaims: bytes that claim a list far longer than they
// hold are refused without allocating what they claim (a gob map would
// be made at the claimed size: 268M entries claimed in 66 bytes
// allocated 13 GB).
func TestDecodePartialClaims(t *testing.T) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&partialWire{Kind: kindOps, Ops: opPartialWire{Instrumented: []string{"a"}}}); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	// A gob stream is messages, each its length and then its bytes; the
	// value's message is the last. In it the list is its count (1), then
	// "a" (1, 'a').
	msg := 0
	for {
		n, size := int(data[msg]), 1
		if n >= 0x80 { // a length of 256-n bytes, big-endian
			size += 256 - n
			n = 0
			for _, c := range data[msg+1 : msg+size] {
				n = n<<8 | int(c)
			}
		}
		if msg+size+n >= len(data) {
			break
		}
		msg += size + n
	}
	if data[msg] >= 0x80-4 {
		t.Fatalf("the value's message is too long to lengthen by a byte: % x", data[msg:])
	}
	i := bytes.LastIndex(data, []byte{1, 1, 'a'})
	claim := []byte{0xfc, 0x10, 0, 0, 0} // 1<<28, as a gob uint
	mut := slices.Concat(data[:i], claim, data[i+1:])
	mut[msg] += byte(len(claim) - 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := decodePartial(ingest.NewSet(), mut)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a list claiming 1<<28 members in a few bytes decoded")
	}
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 64 {
		t.Fatalf("decoding a list claiming 1<<28 members allocated %d MB", mb)
	}
}
