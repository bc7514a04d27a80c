package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// shardedEdges infers every edge as a fleet would: the traces are dealt at
// random to shards, each shard reads its calls (in a shuffled order) into
// statistics of its own, which are encoded and decoded (as they would be
// sent from another process), and the shards' statistics are merged in a
// random order before the fit.
func shardedEdges(t *testing.T, ix *index, ecs []*edgeCalls, shards int, rng *rand.Rand) ([]Edge, []map[string][]Example) {
	shardOf := map[ingest.TraceID]int{}
	var edges []Edge
	var shows []map[string][]Example
	for _, ec := range ecs {
		parts := make([][]*call, shards)
		for _, c := range ec.calls {
			tr := ix.spans[c.from].TraceID
			s, ok := shardOf[tr]
			if !ok {
				s = rng.IntN(shards)
				shardOf[tr] = s
			}
			parts[s] = append(parts[s], c)
		}
		sum := newEdgeStats(ec.key)
		for _, s := range rng.Perm(shards) {
			st := newEdgeStats(ec.key)
			rng.Shuffle(len(parts[s]), func(i, j int) { parts[s][i], parts[s][j] = parts[s][j], parts[s][i] })
			for _, c := range parts[s] {
				st.add(ix, c)
			}
			data, err := encodePartial(ix.set, st)
			if err != nil {
				t.Fatal(err)
			}
			p, err := decodePartial(ix.set, data)
			if err != nil {
				t.Fatal(err)
			}
			sum.merge(p.(*edgeStats))
		}
		e, show := sum.fit()
		edges = append(edges, e)
		shows = append(shows, show)
	}
	return edges, shows
}

// TestEdgeStatsMerge: inferring each edge's policy from statistics
// gathered on random shards of the traces, sent through their wire form
// and merged gives exactly what
// one pass over all of them gives (every field, the JSON byte for byte,
// the findings' examples), whatever the number of shards and the order
// they are merged in.
func TestEdgeStatsMerge(t *testing.T) {
	inputs := map[string]func(t *testing.T) *ingest.Set{"hand-built": handBuiltMix, "hand-built/summary": manyRetries}
	files, _ := filepath.Glob(filepath.Join("..", "samples", "*", "traces.otlp.binpb.gz"))
	if len(files) < 5 {
		t.Fatalf("only %d samples", len(files))
	}
	for _, f := range append(files, filepath.Join("..", "..", "shared", "realtraces", "jaeger__otlp2jaeger-in.otlp.json"),
		filepath.Join("..", "..", "shared", "realtraces", "jaegerui__petclinic-nplus1.jaegerui-trace.json")) {
		inputs[f] = func(t *testing.T) *ingest.Set {
			set, err := ingest.ReadFiles(context.Background(), []string{f}, nil, ingest.Options{})
			if err != nil {
				t.Skip(err) // realtraces live beside the repository, not in it
			}
			return set
		}
	}
	for name, load := range inputs {
		t.Run(filepath.Base(filepath.Dir(name))+"/"+filepath.Base(name), func(t *testing.T) {
			set := load(t)
			ix, err := newIndex(context.Background(), set)
			if err != nil {
				t.Fatal(err)
			}
			calls, err := extractCalls(context.Background(), ix, newNaming(ix))
			if err != nil {
				t.Fatal(err)
			}
			ecs := groupEdges(ix, calls)
			var want []Edge
			var wantShows []map[string][]Example
			retried := 0
			for _, ec := range ecs {
				e, show := inferEdge(ix, ec)
				want, wantShows = append(want, e), append(wantShows, show)
				if e.Retries {
					retried++
				}
			}
			if retried == 0 && name != "hand-built" && filepath.Dir(name) == filepath.Join("..", "samples", "mixed") {
				t.Fatal("no retried edge: the test would compare nothing but counts")
			}
			wantJSON, _ := json.Marshal(want)
			for _, shards := range []int{1, 2, 3, 7, 50} {
				for seed := range uint64(3) {
					rng := rand.New(rand.NewPCG(seed, uint64(shards)))
					got, gotShows := shardedEdges(t, ix, ecs, shards, rng)
					gotJSON, _ := json.Marshal(got)
					if string(gotJSON) != string(wantJSON) {
						for i := range want {
							if !reflect.DeepEqual(got[i], want[i]) {
								t.Errorf("%d shards, seed %d: %s:\n got %+v\nwant %+v", shards, seed, edgeLocation(want[i]), got[i], want[i])
							}
						}
						t.FailNow()
					}
					if !reflect.DeepEqual(gotShows, wantShows) {
						t.Fatalf("%d shards, seed %d: findings' examples differ:\n got %v\nwant %v", shards, seed, gotShows, wantShows)
					}
				}
			}
		})
	}
}

// handBuiltMix is traces that exercise every statistic an edge merges: a
// retried write with and without an idempotency key, Retry-After honoured
// and ignored, waits from a jittered exponential backoff, per-try timeouts
// cut by the client, hedged requests, an attempt after the caller gave up,
// and calls that exhaust their attempts.
func handBuiltMix(*testing.T) *ingest.Set {
	b := newBuilder()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		b.newTrace()
		base := float64(i) * 1000
		root := b.server(-1, "gateway", "GET /checkout", base, 900)
		switch i % 5 {
		case 0: // retried POST, a key on every other trace, exhausted at 3
			opts := []opt{method("POST"), httpStatus(503)}
			if i%10 == 0 {
				opts = append(opts, idemKey())
			}
			t := base + 1
			for k := range 3 {
				b.client(root, "payments", t, 20, opts...)
				t += 20 + 10*float64(int(1)<<k)*(1+rng.Float64()/2)
			}
		case 1: // Retry-After: honoured, or ignored on every third
			wait := 1000.0
			if i%3 == 0 {
				wait = 5
			}
			b.client(root, "inventory", base+1, 10, httpStatus(429), retryAfter(1000))
			b.client(root, "inventory", base+11+wait, 10, httpStatus(200))
		case 2: // per-try timeouts at 150ms, then a success
			c := b.client(root, "search", base+1, 150, failed("context deadline exceeded"))
			b.server(c, "search", "GET /q", base+2, 300)
			b.call(root, "search", "GET /q", base+160+rng.Float64()*5, 40, httpStatus(200))
		case 3: // a hedge: the second request overlaps the first
			b.client(root, "cache", base+1, 60, target("k1"), httpStatus(503))
			b.client(root, "cache", base+21, 10, target("k1"), httpStatus(200))
		case 4: // a retry after the upstream caller's attempt ended
			c, s := b.call(root, "api", "GET /v1", base+1, 100, httpStatus(200))
			b.client(s, "db", base+2, 5, httpStatus(500))
			b.client(s, "db", base+120, 5, httpStatus(200))
			b.end(c, base+50)
		}
	}
	return b.set
}

func TestExampleSetKeepsBestPerTrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []exampleCall
		want  []int // attempts of the calls kept, in order
	}{
		{"most attempts first", []exampleCall{ex(1, 1, 1), ex(2, 2, 3), ex(3, 3, 2), ex(4, 4, 1)}, []int{3, 2, 1}},
		{"one per trace, its best", []exampleCall{ex(1, 1, 2), ex(1, 2, 4), ex(2, 3, 3)}, []int{4, 3}},
		{"ties by trace id", []exampleCall{ex(9, 1, 1), ex(3, 2, 1), ex(5, 3, 1), ex(1, 4, 1)}, []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s exampleSet
			for _, c := range tc.calls {
				s.insert(c)
			}
			var got []int
			for _, c := range s.best {
				got = append(got, c.attempts)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
			// Merging the calls one set at a time in reverse keeps the same.
			var r exampleSet
			for i := len(tc.calls) - 1; i >= 0; i-- {
				one := exampleSet{}
				one.insert(tc.calls[i])
				r.merge(&one)
			}
			if !reflect.DeepEqual(r.best, s.best) {
				t.Errorf("merged in reverse: %v, in order: %v", r.best, s.best)
			}
		})
	}
}

// ex is an example call of trace tr from span sp with n attempts.
func ex(tr, sp uint64, n int) exampleCall {
	var id ingest.TraceID
	id[15] = byte(tr)
	var sid ingest.SpanID
	sid[7] = byte(sp)
	return exampleCall{from: spanKey{lo: tr, sid: sp}, trace: id, attempts: n, firstSpan: sid, attemptIDs: []ingest.SpanID{sid}}
}
