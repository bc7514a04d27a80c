package graph

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// spansFromBytes decodes arbitrary bytes into a span set, 16 bytes a span:
// small id ranges so that parents, duplicates, cycles and self-parents
// happen, and every field over its whole range.
func spansFromBytes(data []byte) *ingest.Set {
	set := ingest.NewSet()
	names := []string{"", "a", "b", "c", "GET", "POST", "db", "a:80", "b.default.svc.cluster.local", "timeout"}
	str := func(b byte) ingest.Sym { return set.Intern(names[int(b)%len(names)]) }
	for len(data) >= 16 {
		d := data[:16]
		data = data[16:]
		var sp ingest.Record
		sp.TraceID[15] = d[0] % 4
		sp.SpanID[7] = d[1] % 32
		if d[2]%5 != 0 {
			sp.ParentID[7] = d[2] % 34 // some name no span
		}
		sp.Start = int64(d[3])<<20 | int64(d[4])<<12
		sp.End = sp.Start + int64(d[5])<<16 - 1<<18 // ends before it starts, now and then
		sp.Kind = ingest.Kind(d[6] % 7)
		sp.Status = ingest.Status(d[7] % 4)
		sp.Service, sp.Name, sp.Peer, sp.Method, sp.Route = str(d[8]), str(d[8]>>4), str(d[9]), str(d[9]>>4), str(d[10])
		sp.StatusMessage = str(d[10] >> 4)
		sp.HTTPStatus = uint16(d[11]) * 4
		sp.GRPCStatus = int8(d[12]%19) - 1
		sp.ResendCount, sp.PrevAttempts, sp.RetryCount = int16(d[13]%7)-1, int16(d[13]>>4%5)-1, int16(d[14]%70)-1
		sp.RetryAfterMS = int32(d[14]>>4)*300 - 1
		sp.Flags = d[15]
		sp.Target = uint64(d[15] % 3)
		set.Append(sp)
	}
	return set
}

// FuzzInfer: inference on arbitrary span sets never panics, encodes, and
// names no span, trace or service that is not in the input.
func FuzzInfer(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdeg"))
	f.Add(make([]byte, 64))
	seed := make([]byte, 0, 16*8)
	for i := 0; i < 8; i++ {
		seed = append(seed, 1, byte(i+1), byte(i), byte(i*3), 0, 40, byte(2+i%2), byte(i%3), byte(i), byte(i*7), 3, 125, 15, 0x21, 2, 4)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		set := spansFromBytes(data)
		tp, err := Infer(context.Background(), set)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(tp); err != nil {
			t.Fatalf("topology does not encode: %v", err)
		}
		traces, spans, services := map[string]bool{}, map[string]bool{}, map[string]bool{userCaller: true, "unknown": true}
		for i := range set.Spans {
			sp := &set.Spans[i]
			traces[sp.TraceID.String()] = true
			spans[sp.TraceID.String()+sp.SpanID.String()] = true
			services[set.Str(sp.Service)] = true
			p := set.Str(sp.Peer)
			services[p], services[hostOf(p)] = true, true
			services[(&naming{services: map[string]bool{}}).serviceName(hostOf(p))] = true
		}
		check := func(where string, exs []Example) {
			for _, ex := range exs {
				if !traces[ex.TraceID] {
					t.Errorf("%s: example trace %s not in the input", where, ex.TraceID)
				}
				for _, s := range ex.SpanIDs {
					if !spans[ex.TraceID+s] {
						t.Errorf("%s: example span %s/%s not in the input", where, ex.TraceID, s)
					}
				}
			}
		}
		for _, e := range tp.Edges {
			if !services[e.Caller] && !isKubeShort(e.Caller, services) || !services[e.Callee] && !isKubeShort(e.Callee, services) {
				t.Errorf("edge %s → %s names a service not in the input", e.Caller, e.Callee)
			}
			if e.Attempts < e.Calls || e.MaxAttempts < 1 {
				t.Errorf("edge %s → %s: %d attempts for %d calls, max %d", e.Caller, e.Callee, e.Attempts, e.Calls, e.MaxAttempts)
			}
			check("edge", e.Examples)
		}
		for _, f := range tp.Findings {
			check("finding "+f.ID, f.Examples)
		}
	})
}

// isKubeShort accepts a callee that is the first label of a peer name
// (a name.namespace form reduced to a service seen in the traces).
func isKubeShort(callee string, services map[string]bool) bool {
	for s := range services {
		if len(s) > len(callee) && s[:len(callee)] == callee && s[len(callee)] == '.' {
			return true
		}
	}
	return false
}
