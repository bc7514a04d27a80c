package graph

import (
	"bytes"
	"context"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// partialsOf is the wire form of every partial that has one, as the map
// steps of inference over set in three shards send them.
func partialsOf(tb testing.TB, set *ingest.Set) [][]byte {
	var out [][]byte
	sh := shards{of: func(id ingest.TraceID) int { return int(id[15] % 3) }, order: []int{0, 1, 2}, sent: func(p any) any {
		if data, err := encodePartial(p); err == nil {
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
		p, err := decodePartial(data)
		if err != nil {
			return
		}
		once, err := encodePartial(p)
		if err != nil {
			t.Fatalf("a decoded %T does not encode: %v", p, err)
		}
		q, err := decodePartial(once)
		if err != nil {
			t.Fatalf("a decoded %T, encoded again, does not decode: %v", p, err)
		}
		if twice, _ := encodePartial(q); !bytes.Equal(once, twice) {
			t.Fatalf("a decoded %T encodes otherwise each time", p)
		}
		switch p := p.(type) {
		case *edgeStats:
			p.merge(q.(*edgeStats))
			p.fit()
		case *opPartial:
			p.merge(q.(*opPartial))
			services(nil, p.ops, p.instrumented, nil)
		}
	})
}
