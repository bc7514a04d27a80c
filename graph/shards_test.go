package graph

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/samples/synth"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestShardedInfer: inference with its traces dealt at random to k shards,
// every map step run shard by shard (each shard's partial sent through
// its wire form where it has one, and the partials that have none named)
// and the partials merged in a random order,
// gives the topology of one pass over all of them, byte for byte,
// on every committed sample, synthetic traffic and hand-built edge cases
// (breakers, context leaks with more unretried failures than are kept,
// parent cycles, unnamed spans, replicas, random span soup).
func TestShardedInfer(t *testing.T) {
	inputs := map[string]func(t *testing.T) *ingest.Set{
		"hand-built/mix":      handBuiltMix,
		"hand-built/edges":    shardEdgeCases,
		"hand-built/origins":  manyOrigins,
		"hand-built/summary":  manyRetries,
		"hand-built/roots":    rootShapes,
		"synth/requests":      func(t *testing.T) *ingest.Set { return synthSet(t, synth.Requests(1500, 3)) },
		"synth/http-requests": func(t *testing.T) *ingest.Set { return synthSet(t, synth.HTTPRequests(1500, 5)) },
	}
	for seed := range uint64(4) {
		inputs[fmt.Sprintf("random/%d", seed)] = func(*testing.T) *ingest.Set {
			data := make([]byte, 16*400)
			r := rand.New(rand.NewPCG(seed, 11))
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			return spansFromBytes(data)
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "samples", "*", "traces.otlp.binpb.gz"))
	if len(files) < 5 {
		t.Fatalf("only %d samples", len(files))
	}
	for _, f := range files {
		inputs[filepath.Base(filepath.Dir(f))] = func(t *testing.T) *ingest.Set {
			set, err := ingest.ReadFiles(context.Background(), []string{f}, nil, ingest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return set
		}
	}
	var mu sync.Mutex
	wired, unwired := map[string]bool{}, map[string]bool{}
	for name, load := range inputs {
		t.Run(name, func(t *testing.T) {
			set := load(t)
			batch, err := Infer(context.Background(), set)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(batch)
			var ids []ingest.TraceID
			seen := map[ingest.TraceID]bool{}
			for i := range set.Spans {
				if id := set.Spans[i].TraceID; !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
			for _, k := range []int{2, 3, 7} {
				for seed := range uint64(3) {
					rng := rand.New(rand.NewPCG(seed, uint64(k)))
					shardOf := map[ingest.TraceID]int{}
					for _, id := range ids {
						shardOf[id] = rng.IntN(k)
					}
					sh := shards{of: func(id ingest.TraceID) int { return shardOf[id] }, order: rng.Perm(k), sent: func(p any) any {
						mu.Lock() // serverStats' map step runs beside extraction's
						defer mu.Unlock()
						data, err := encodePartial(set, p)
						if errors.Is(err, errNoWireForm) {
							unwired[fmt.Sprintf("%T", p)] = true
							return p
						}
						if err != nil {
							t.Fatal(err)
						}
						q, err := decodePartial(set, data)
						if err != nil {
							t.Fatal(err)
						}
						again, err := encodePartial(set, q)
						if err != nil || !bytes.Equal(again, data) {
							t.Fatalf("a decoded %T encodes otherwise (%v)", p, err)
						}
						wired[fmt.Sprintf("%T", p)] = true
						return q
					}}
					ix, err := shardedIndex(context.Background(), set, sh)
					if err != nil {
						t.Fatal(err)
					}
					tp, err := infer(context.Background(), ix)
					if err != nil {
						t.Fatal(err)
					}
					got, _ := json.Marshal(tp)
					if !bytes.Equal(got, want) {
						t.Fatalf("%d shards, seed %d: the topology differs from one pass over every trace:\n%s",
							k, seed, firstDiff(got, want))
					}
				}
			}
		})
	}
	wantWired := []string{"*graph.callEndList", "*graph.callOrders", "*graph.chainTrie", "*graph.edgeStats", "*graph.headSampling",
		"*graph.nameVotes", "*graph.opPartial", "*graph.outcomeStats",
		"*graph.perEdge[github.com/retryaudit/retryaudit/graph.attemptWork]",
		"*graph.perEdge[github.com/retryaudit/retryaudit/graph.overlaps]",
		"*graph.perEdge[github.com/retryaudit/retryaudit/graph.rootOutcomes]",
		"*graph.perEdge[github.com/retryaudit/retryaudit/graph.workPairs]",
		"*graph.perEdge[int]",
		"*graph.perEdge[map[github.com/retryaudit/retryaudit/ingest.TraceID]int64]",
		"*graph.requestsHeld", "*graph.rootEvents", "*graph.rootSet", "graph.origins", "map[graph.node]*graph.workTimes", "map[graph.node][2]int",
		"map[graph.node]int", "map[ingest.Sym]bool"}
	if got := slices.Sorted(maps.Keys(wired)); !slices.Equal(got, wantWired) {
		t.Errorf("partials sent through their wire form: %q, want %q", got, wantWired)
	}
	// The partials that still name spans by their place in the one index
	// (the package comment says why each is global).
	stillGlobal := []string{"*graph.extracted", "graph.serving", "graph.spanSet",
		"map[graph.node][]int32"}
	if got := slices.Sorted(maps.Keys(unwired)); !slices.Equal(got, stillGlobal) {
		t.Errorf("partials with no wire form: %q, want %q", got, stillGlobal)
	}
}

// firstDiff shows where two JSON documents first differ.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(i-200, 0)
	return fmt.Sprintf(" got …%s…\nwant …%s…", got[lo:min(i+200, len(got))], want[lo:min(i+200, len(want))])
}

func synthSet(t *testing.T, reqs []ptrace.Traces) *ingest.Set {
	var data bytes.Buffer
	if err := synth.WriteProtoStream(&data, reqs); err != nil {
		t.Fatal(err)
	}
	set := ingest.NewSet()
	if err := ingest.Decode(context.Background(), set, "synth", &data, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	return set
}

// shardEdgeCases is traces whose inference reads other traces: a breaker's
// fast failures, requests leaked into another request's context (late, and
// repeated under an answered parent while their own trace misses them),
// a parent cycle and a self-parent, spans that name no service, retries
// across replicas named by other traces' server spans, a CLIENT span
// with no server child named by the peers other traces answered, and calls
// of different requests ending at the same instant.
func shardEdgeCases(*testing.T) *ingest.Set {
	b := newBuilder()
	breakerTraffic(b, "ooooo"+"xxx"+"ffffff"+"o"+"oooo"+"xxx"+"ffff"+"x"+"fff"+"oo", nil)
	for range 3 {
		b.newTrace()
		root := b.server(-1, "web", "GET /", 0, 50)
		_, s := b.call(root, "api", "GET /a", 1, 20, httpStatus(200))
		b.call(s, "db", "SELECT", 2, 5, httpStatus(200))
		_, ls := b.call(root, "api", "GET /a", 100, 30, httpStatus(503))
		b.call(ls, "db", "SELECT", 101, 5, httpStatus(503))
	}
	b.newTrace()
	root := b.server(-1, "web", "GET /", 0, 300)
	b.call(root, "api", "GET /a", 1, 20, httpStatus(200), method("GET"), target("http://api/a/1"))
	b.call(root, "api", "GET /a", 60, 10, httpStatus(200), method("GET"), target("http://api/a/1"))
	b.newTrace()
	other := b.server(-1, "web", "GET /", 0, 200)
	b.call(other, "api", "GET /a", 1, 10, httpStatus(503), method("GET"), target("http://api/a/1"))
	b.newTrace()
	cyc := b.server(-1, "a", "GET /", 0, 100)
	_, s1 := b.call(cyc, "b", "GET /b", 10, 50, httpStatus(200))
	c2 := b.client(s1, "a", 20, 10, httpStatus(200))
	b.set.Spans[cyc].ParentID = b.set.Spans[c2].SpanID
	b.newTrace()
	self := b.server(-1, "c", "GET /c", 0, 10)
	b.set.Spans[self].ParentID = b.set.Spans[self].SpanID
	b.newTrace()
	pp := b.server(-1, "productpage", "GET /", 0, 100)
	c := b.client(pp, "reviews.default.svc.cluster.local:9080", 1, 50, httpStatus(200))
	s := b.server(c, "unknown_service", "GET /reviews", 2, 48, httpStatus(200))
	out := b.add(s, ingest.KindClient, "unknown_service:java", "GET", 3, 20,
		[]opt{func(set *ingest.Set, sp *ingest.Record) { sp.Peer = set.Intern("ratings:9080") }, httpStatus(200)})
	b.server(out, "ratings", "GET /ratings", 4, 18, httpStatus(200))
	// Two calls of other requests end at the same instant, one failed:
	// which ended last before the third began is the edge's call order.
	for i, status := range []int{503, 200, 200} {
		b.newTrace()
		start := float64(20 * (i / 2))
		r := b.server(-1, "shop", "GET /cart", start, 15)
		b.call(r, "store", "GET /item", start+1, 10, httpStatus(status))
	}
	route := func(s *ingest.Set, sp *ingest.Record) { sp.Route = s.Intern("/orders/{id}") }
	for i := range 4 {
		b.newTrace()
		root := b.server(-1, "gateway", "GET /", 0, 3000)
		c1 := b.client(root, "orders:8081", 1, 5, httpStatus(503), target("http://orders:8081/orders/7"), route)
		if i%2 == 0 {
			b.server(c1, "orders", "GET /orders/{id}", 1.5, 4, httpStatus(503))
		}
		c2 := b.client(root, "orders:8082", 16, 5, httpStatus(429), retryAfter(1000), target("http://orders:8082/orders/7"), route)
		b.server(c2, "orders", "GET /orders/{id}", 16.5, 4, httpStatus(429))
		c3 := b.client(root, "orders:8083", 1022, 5, httpStatus(200), target("http://orders:8083/orders/7"), route)
		if i%2 == 1 {
			b.server(c3, "orders", "GET /orders/{id}", 1022.5, 4, httpStatus(200))
		}
	}
	return b.set
}

// manyOrigins is a request answered under one parent and sent again, and
// the same request failing unretried in 100 other traces, more than
// maxOrigins: the first 70 of them by trace id gave up before the copy
// ended (no origin of it), the last 30 waited past it (its origin). Which
// are kept decides whether the copy leaked, so they must be the same
// whatever the shards.
func manyOrigins(*testing.T) *ingest.Set {
	b := newBuilder()
	root := b.server(-1, "web", "GET /", 0, 300)
	b.call(root, "api", "GET /a", 1, 20, httpStatus(200), method("GET"), target("http://api/a/1"))
	b.call(root, "api", "GET /a", 60, 10, httpStatus(200), method("GET"), target("http://api/a/1"))
	for i := range 100 {
		b.newTrace()
		ends := 40.0
		if i >= 70 {
			ends = 200
		}
		other := b.server(-1, "web", "GET /", 0, ends)
		b.call(other, "api", "GET /a", 1, 10, httpStatus(503), method("GET"), target("http://api/a/1"))
	}
	return b.set
}

// TestPerEdgeMerge: per-edge partials merge by the edges' keys, whatever
// order each lists its edges in and whichever edges it has, and read back
// in the order of the edges asked for.
func TestPerEdgeMerge(t *testing.T) {
	a, b, c := edgeKey{"a", "GET /", "b", "GET /b"}, edgeKey{"a", "GET /", "c", "GET /c"}, edgeKey{"b", "GET /b", "c", "GET /c"}
	for _, tc := range []struct {
		name string
		sum  *perEdge[int]
		p    *perEdge[int]
		keys []edgeKey
		want []int
	}{
		{"same edges", &perEdge[int]{[]edgeKey{a, b}, []int{1, 2}}, &perEdge[int]{[]edgeKey{a, b}, []int{10, 20}}, []edgeKey{a, b}, []int{11, 22}},
		{"other order", &perEdge[int]{[]edgeKey{a, b}, []int{1, 2}}, &perEdge[int]{[]edgeKey{b, a}, []int{20, 10}}, []edgeKey{a, b}, []int{11, 22}},
		{"an edge more", &perEdge[int]{[]edgeKey{a}, []int{1}}, &perEdge[int]{[]edgeKey{c, a}, []int{5, 10}}, []edgeKey{a, b, c}, []int{11, 0, 5}},
		{"read in another order", &perEdge[int]{[]edgeKey{a, b}, []int{1, 2}}, &perEdge[int]{}, []edgeKey{b, a}, []int{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sum.merge(tc.p, addInt)
			if got := tc.sum.in(tc.keys); !slices.Equal(got, tc.want) {
				t.Errorf("merged: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChainTrieMerge: tries of the observed amplification merge by the
// edges' keys: the same chain is the same whatever number each trie gave
// its edges, and a chain over an edge one trie lacks is kept.
func TestChainTrieMerge(t *testing.T) {
	a, b, c := edgeKey{"u", "", "a", "GET /"}, edgeKey{"a", "GET /", "b", "GET /b"}, edgeKey{"a", "GET /", "c", "GET /c"}
	trie := func(keys []edgeKey, chains map[[2]edgeKey]float64) *chainTrie {
		tr := &chainTrie{keys: keys, next: map[chainStep]int32{}, best: []float64{0}, from: []chainStep{{}}}
		for _, ch := range slices.SortedFunc(maps.Keys(chains), func(x, y [2]edgeKey) int { return cmp.Compare(x[1].callee, y[1].callee) }) {
			at := tr.step(0, slices.Index(keys, ch[0]))
			n := tr.step(at, slices.Index(keys, ch[1]))
			tr.best[n] = chains[ch]
		}
		return tr
	}
	for _, tc := range []struct {
		name  string
		x, y  *chainTrie
		chain [2]edgeKey
		want  float64
	}{
		{"same numbering", trie([]edgeKey{a, b}, map[[2]edgeKey]float64{{a, b}: 2}), trie([]edgeKey{a, b}, map[[2]edgeKey]float64{{a, b}: 3}), [2]edgeKey{a, b}, 3},
		{"other numbering", trie([]edgeKey{a, b}, map[[2]edgeKey]float64{{a, b}: 3}), trie([]edgeKey{b, a}, map[[2]edgeKey]float64{{a, b}: 4}), [2]edgeKey{a, b}, 4},
		{"an edge more", trie([]edgeKey{a, b}, map[[2]edgeKey]float64{{a, b}: 2}), trie([]edgeKey{c, a}, map[[2]edgeKey]float64{{a, c}: 5}), [2]edgeKey{a, c}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.x.merge(tc.y)
			chain := []int{slices.Index(tc.x.keys, tc.chain[0]), slices.Index(tc.x.keys, tc.chain[1])}
			if got := tc.x.observed(chain); got != tc.want {
				t.Errorf("observed %v, want %v (keys %v)", got, tc.want, tc.x.keys)
			}
		})
	}
}

// TestRootSetMerge: root requests merge by operation whatever order the
// partials come in: the user edge takes the kind and method of the root
// first in the input, its examples are the best of all (failed first,
// then by trace and span id), and its latency and counts read every
// request.
func TestRootSetMerge(t *testing.T) {
	n := node{"web", "GET /"}
	ex := func(trace byte, failed bool) rootExample {
		return rootExample{ingest.TraceID{15: trace}, ingest.SpanID{7: 1}, failed}
	}
	part := func(first int32, server bool, method string, reqs []rootReq, exs ...rootExample) *rootSet {
		o := &rootOp{reqs: reqs, first: first, server: server, method: method}
		for _, x := range exs {
			o.addExample(x)
		}
		return &rootSet{ops: map[node]*rootOp{n: o}, lo: 10, hi: 20}
	}
	ok, failed := rootReq{start: 1, dur: 2e6, out: outcomeOK}, rootReq{start: 3, dur: 8e6, out: outcomeRetryable}
	for _, tc := range []struct {
		name       string
		parts      func() []*rootSet
		wantEdges  int
		wantMethod string
		wantTraces []byte
		wantRate   float64
	}{
		{"the first root is a server span", func() []*rootSet {
			return []*rootSet{part(7, false, "POST", []rootReq{ok}, ex(9, false)), part(2, true, "GET", []rootReq{ok, failed}, ex(4, false), ex(5, true))}
		}, 1, "GET", []byte{5, 4, 9}, 0.333},
		{"the first root is a client span", func() []*rootSet {
			return []*rootSet{part(1, false, "POST", []rootReq{failed}, ex(9, true)), part(2, true, "GET", []rootReq{ok}, ex(4, false))}
		}, 0, "", nil, 0},
		{"the best examples of many", func() []*rootSet {
			return []*rootSet{part(3, true, "GET", []rootReq{ok, ok}, ex(8, false), ex(2, false)), part(4, true, "PUT", []rootReq{failed, ok}, ex(6, true), ex(1, false))}
		}, 1, "GET", []byte{6, 1, 2}, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]Edge
			for _, order := range [][2]int{{0, 1}, {1, 0}} {
				ps := tc.parts()
				sum := ps[order[0]]
				sum.merge(ps[order[1]])
				got = append(got, userEdges(sum.ops))
			}
			a, _ := json.Marshal(got[0])
			b, _ := json.Marshal(got[1])
			if !bytes.Equal(a, b) {
				t.Fatalf("merged one way %s, the other %s", a, b)
			}
			es := got[0]
			if len(es) != tc.wantEdges {
				t.Fatalf("%d user edges, want %d", len(es), tc.wantEdges)
			}
			if len(es) == 0 {
				return
			}
			var traces, want []string
			for _, x := range es[0].Examples {
				traces = append(traces, x.TraceID)
			}
			for _, b := range tc.wantTraces {
				want = append(want, ingest.TraceID{15: b}.String())
			}
			if es[0].Method != tc.wantMethod || !slices.Equal(traces, want) || es[0].FailureRate != tc.wantRate {
				t.Errorf("method %q, example traces %v, failure rate %v; want %q, %v, %v", es[0].Method, traces, es[0].FailureRate, tc.wantMethod, want, tc.wantRate)
			}
		})
	}
}
