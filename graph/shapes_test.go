package graph

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/retryaudit/retryaudit/ingest"
)

// Shapes that made inference quadratic once (issue #12): each builds a set
// of about n spans; size is the number of spans issue #12 measured it at.
var quadraticShapes = []struct {
	name  string
	size  int
	build func(n int) *ingest.Set
}{
	// Traces whose client calls have no server span, while the server
	// operations the same client operation reached are unique per trace:
	// naming once sorted every vote per call.
	{"unique-server-ops", 80_000, func(n int) *ingest.Set { // 20,000 traces
		g := newSpanGen()
		for i := 0; i < n/4; i++ {
			g.trace()
			root := g.span(-1, ingest.KindServer, "gateway", "GET /", 0, 100)
			c := g.span(root, ingest.KindClient, "gateway", "GET", 1, 10, peer("api"))
			g.span(c, ingest.KindServer, "api", fmt.Sprintf("GET /item/%d", i), 2, 8)
			g.span(root, ingest.KindClient, "gateway", "GET", 20, 5, peer("api"), fail())
		}
		return g.set
	}},
	// One trace n/2 calls deep, each call a CLIENT span and the next
	// service's SERVER span.
	{"deep-trace", 20_000, func(n int) *ingest.Set { // 10,000 calls deep
		g := newSpanGen()
		g.trace()
		p := g.span(-1, ingest.KindServer, "s0", "GET /", 0, float64(n))
		for d := 1; d < n/2; d++ {
			svc := fmt.Sprintf("s%d", d%7)
			c := g.span(p, ingest.KindClient, g.set.Str(g.set.Spans[p].Service), "GET", float64(d), float64(n-2*d), peer(svc))
			p = g.span(c, ingest.KindServer, svc, "GET /", float64(d)+0.1, float64(n-2*d)-0.2)
		}
		return g.set
	}},
	// n/2 distinct services, each calling one other.
	{"distinct-services", 1_500_000, func(n int) *ingest.Set { // 1e6 services
		g := newSpanGen()
		for i := 0; i < n/3; i++ {
			g.trace()
			root := g.span(-1, ingest.KindServer, fmt.Sprintf("a%d", i), "GET /", 0, 10)
			callee := fmt.Sprintf("b%d", i)
			c := g.span(root, ingest.KindClient, fmt.Sprintf("a%d", i), "GET", 1, 5, peer(callee))
			g.span(c, ingest.KindServer, callee, "GET /", 1.5, 4)
		}
		return g.set
	}},
	// One request fanning out to n/2 distinct callees.
	{"wide-fan-out", 200_000, func(n int) *ingest.Set {
		g := newSpanGen()
		g.trace()
		root := g.span(-1, ingest.KindServer, "gateway", "GET /", 0, float64(n))
		for i := 0; i < n/2; i++ {
			callee := fmt.Sprintf("c%d", i)
			c := g.span(root, ingest.KindClient, "gateway", "GET", float64(i), 0.5, peer(callee))
			g.span(c, ingest.KindServer, callee, "GET /", float64(i)+0.1, 0.3)
		}
		return g.set
	}},
	// One request making n/2 sequential calls to one callee: one edge
	// whose every call has the same trace as the calls that ended before
	// it (calibration's previous call of another request).
	{"sequential-calls", 200_000, func(n int) *ingest.Set {
		g := newSpanGen()
		g.trace()
		root := g.span(-1, ingest.KindServer, "gateway", "GET /", 0, float64(n))
		for i := 0; i < n/2; i++ {
			c := g.span(root, ingest.KindClient, "gateway", "GET", float64(i), 0.5, peer("api"))
			g.span(c, ingest.KindServer, "api", "GET /", float64(i)+0.1, 0.3)
		}
		return g.set
	}},
}

// spanGen builds ingest sets directly, faster than the test DSL at
// benchmark sizes.
type spanGen struct {
	set           *ingest.Set
	traces, spans uint64
	tid           ingest.TraceID
}

func newSpanGen() *spanGen { return &spanGen{set: ingest.NewSet()} }

func (g *spanGen) trace() {
	g.traces++
	binary.BigEndian.PutUint64(g.tid[8:], g.traces)
}

func peer(p string) opt { return func(s *ingest.Set, sp *ingest.Record) { sp.Peer = s.Intern(p) } }
func fail() opt         { return func(_ *ingest.Set, sp *ingest.Record) { sp.Status = ingest.StatusError } }

func (g *spanGen) span(parent int, kind ingest.Kind, svc, name string, start, dur float64, opts ...opt) int {
	g.spans++
	sp := ingest.Record{Span: ingest.Span{TraceID: g.tid, Kind: kind, Service: g.set.Intern(svc), Name: g.set.Intern(name),
		Start: at(start), End: at(start + dur), GRPCStatus: ingest.Absent}, SpanExtra: ingest.NoExtra}
	binary.BigEndian.PutUint64(sp.SpanID[:], g.spans)
	if parent >= 0 {
		sp.ParentID = g.set.Spans[parent].SpanID
	}
	for _, o := range opts {
		o(g.set, &sp)
	}
	g.set.Append(sp)
	return len(g.set.Spans) - 1
}

// BenchmarkQuadraticShapes infers each shape at its size and at a tenth
// of it in the same iteration: growth is the ratio of their per-span
// times, near 1 when inference is linear (10 if it were quadratic; a
// larger heap costs the collector somewhat more per span).
func BenchmarkQuadraticShapes(b *testing.B) {
	for _, s := range quadraticShapes {
		small, large := s.build(s.size/10), s.build(s.size)
		b.Run(s.name, func(b *testing.B) {
			var tSmall, tLarge time.Duration
			for i := 0; i < b.N; i++ {
				for _, c := range []struct {
					set *ingest.Set
					t   *time.Duration
				}{{small, &tSmall}, {large, &tLarge}} {
					runtime.GC()
					t0 := time.Now()
					if _, err := Infer(context.Background(), c.set); err != nil {
						b.Fatal(err)
					}
					*c.t += time.Since(t0)
				}
			}
			perSmall := float64(tSmall.Nanoseconds()) / float64(len(small.Spans)*b.N)
			perLarge := float64(tLarge.Nanoseconds()) / float64(len(large.Spans)*b.N)
			b.ReportMetric(perLarge, "ns/span")
			b.ReportMetric(perLarge/perSmall, "growth")
		})
	}
}
