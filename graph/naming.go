package graph

import (
	"sort"

	"github.com/retryaudit/retryaudit/ingest"
)

// naming resolves an attempt's callee and operation. Attempts that reached
// an instrumented callee are named by its SERVER span; attempts that did
// not (a connection refused, a timeout before the request was read, an
// uninstrumented database) are named by what other attempts with the same
// peer and client-side operation reached, and failing that by the peer
// attributes of the client span.
type naming struct {
	peerService map[peerKey]map[string]int
	serverOp    map[opKey]map[string]int
}

type peerKey struct {
	caller ingest.Sym
	peer   ingest.Sym
}

type opKey struct {
	caller   ingest.Sym
	callee   string
	clientOp string
}

func newNaming(ix *index) *naming {
	n := &naming{peerService: map[peerKey]map[string]int{}, serverOp: map[opKey]map[string]int{}}
	count := func(m map[string]int, k string) { m[k]++ }
	for i := range ix.spans {
		sp := &ix.spans[i]
		if !ix.keep[i] || !isServer(sp) {
			continue
		}
		c := ix.parent[i]
		if c < 0 {
			continue
		}
		client := &ix.spans[c]
		if !isAttempt(client) && client.PrevAttempts == ingest.Absent {
			continue
		}
		if client.PrevAttempts != ingest.Absent && ix.parent[c] >= 0 {
			c = ix.parent[c] // a grpc-go Attempt span: name by its call span
			client = &ix.spans[c]
		}
		callee := ix.str(sp.Service)
		if client.Peer != 0 {
			pk := peerKey{client.Service, client.Peer}
			if n.peerService[pk] == nil {
				n.peerService[pk] = map[string]int{}
			}
			count(n.peerService[pk], callee)
		}
		ok := opKey{client.Service, callee, ix.clientOpName(c)}
		if n.serverOp[ok] == nil {
			n.serverOp[ok] = map[string]int{}
		}
		count(n.serverOp[ok], ix.opName(int32(i)))
	}
	return n
}

// mostCommon picks the most frequent key, ties broken by name for
// determinism.
func mostCommon(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// resolve names the callee and operation of client span c whose server
// span is server (-1 when none was exported).
func (n *naming) resolve(ix *index, c, server int32) (callee, op string) {
	client := &ix.spans[c]
	if server >= 0 {
		return ix.str(ix.spans[server].Service), ix.opName(server)
	}
	callee = ix.str(client.Peer)
	if m := n.peerService[peerKey{client.Service, client.Peer}]; len(m) > 0 && client.Peer != 0 {
		callee = mostCommon(m)
	}
	if callee == "" {
		callee = "unknown"
	}
	op = ix.clientOpName(c)
	if m := n.serverOp[opKey{client.Service, callee, op}]; len(m) > 0 {
		op = mostCommon(m)
	}
	return callee, op
}
