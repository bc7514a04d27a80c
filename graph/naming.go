package graph

import (
	"maps"
	"strings"

	"github.com/retryaudit/retryaudit/ingest"
)

// naming resolves an attempt's callee and operation. Attempts that reached
// an instrumented callee are named by its SERVER span; attempts that did
// not (a connection refused, a timeout before the request was read, an
// uninstrumented database) are named by what other attempts with the same
// peer (or the same host on another port: another replica) and client-side
// operation reached; failing that by the peer attributes of the client span,
// with a port stripped and a Kubernetes service name reduced to the
// service; and a client span with no peer at all that its instrumentation
// emitted under another service name than its parent's is a call to that
// service, as Jaeger's dependency graph reads it.
//
// Votes are counted once over the index, and each key's winner is picked
// once, so naming costs the same whatever the number of distinct peers or
// operations. A name depends on the server spans of other traces: the
// votes are phase 1's map step (nameVotes, per shard), their merge sums
// them, and the winners are the reduce that call extraction reads.
type naming struct {
	peerService map[peerKey]string
	hostService map[hostKey]string
	serverOp    map[opKey]string
	services    map[string]bool // names of the services with SERVER spans
}

type peerKey struct {
	caller ingest.Sym
	peer   ingest.Sym
}

type hostKey struct {
	caller ingest.Sym
	host   string
}

type opKey struct {
	caller   ingest.Sym
	callee   string
	clientOp string
}

// votes counts, per key, how often each name was seen, and picks the most
// frequent (ties broken by name, for determinism).
type votes[K comparable] map[K]map[string]int

func (v votes[K]) add(k K, name string) {
	m := v[k]
	if m == nil {
		m = map[string]int{}
		v[k] = m
	}
	m[name]++
}

func (v votes[K]) winners() map[K]string {
	out := make(map[K]string, len(v))
	for k, m := range v {
		best, n := "", 0
		for name, c := range m {
			if c > n || c == n && name < best {
				best, n = name, c
			}
		}
		out[k] = best
	}
	return out
}

// merge adds o's votes to v.
func (v votes[K]) merge(o votes[K]) {
	for k, m := range o {
		for name, c := range m {
			if v[k] == nil {
				v[k] = map[string]int{}
			}
			v[k][name] += c
		}
	}
}

// nameVotes is what the server spans of some traces say about names.
type nameVotes struct {
	peers    votes[peerKey]
	hosts    votes[hostKey]
	ops      votes[opKey]
	services map[string]bool
}

func (v *nameVotes) merge(o *nameVotes) {
	v.peers.merge(o.peers)
	v.hosts.merge(o.hosts)
	v.ops.merge(o.ops)
	maps.Copy(v.services, o.services)
}

func newNaming(ix *index) *naming {
	v := mapShards(ix, ix.nameVotes, (*nameVotes).merge)
	return &naming{services: v.services, peerService: v.peers.winners(), hostService: v.hosts.winners(), serverOp: v.ops.winners()}
}

// nameVotes counts the names the selected SERVER spans give the client
// spans that called them.
func (ix *index) nameVotes(s sel) *nameVotes {
	v := &nameVotes{peers: votes[peerKey]{}, hosts: votes[hostKey]{}, ops: votes[opKey]{}, services: map[string]bool{}}
	for i := range ix.spans {
		sp := &ix.spans[i]
		if !ix.keep[i] || !isServer(sp) || !s.has(int32(i)) {
			continue
		}
		callee := ix.str(sp.Service)
		v.services[callee] = true
		c := ix.parent[i]
		if c < 0 {
			continue
		}
		client := &ix.spans[c]
		if !isAttempt(client) && ix.set.Extra(client).PrevAttempts == ingest.Absent {
			continue
		}
		if ix.set.Extra(client).PrevAttempts != ingest.Absent && ix.parent[c] >= 0 {
			c = ix.parent[c] // a grpc-go Attempt span: name by its call span
			client = &ix.spans[c]
		}
		if client.Peer != 0 {
			v.peers.add(peerKey{client.Service, client.Peer}, callee)
			if h := hostOf(ix.str(client.Peer)); h != ix.str(client.Peer) {
				v.hosts.add(hostKey{client.Service, h}, callee)
			}
		}
		v.ops.add(opKey{client.Service, callee, ix.clientOpName(c)}, ix.opName(int32(i)))
	}
	return v
}

// resolve names the callee and operation of client span c whose server
// span is server (-1 when none was exported).
func (n *naming) resolve(ix *index, c, server int32) (callee, op string) {
	client := &ix.spans[c]
	if server >= 0 {
		return ix.str(ix.spans[server].Service), ix.opName(server)
	}
	callee = n.peerName(ix, client)
	if callee == "" {
		if p := ix.parent[c]; p >= 0 && ix.spans[p].Service != client.Service {
			callee = ix.str(client.Service)
		} else {
			callee = "unknown"
		}
	}
	op = ix.clientOpName(c)
	if o, ok := n.serverOp[opKey{client.Service, callee, op}]; ok {
		op = o
	}
	return callee, op
}

// peerName names the service a client span's peer attributes point at:
// the service that answered the same peer, else the same host (another
// port, another replica), else the peer as written reduced to a service
// name. "" when the span names no peer.
func (n *naming) peerName(ix *index, client *ingest.Span) string {
	if client.Peer == 0 {
		return ""
	}
	if s, ok := n.peerService[peerKey{client.Service, client.Peer}]; ok {
		return s
	}
	peer := ix.str(client.Peer)
	host := hostOf(peer)
	if s, ok := n.hostService[hostKey{client.Service, host}]; ok {
		return s
	}
	return n.serviceName(host)
}

// serviceName reduces a host name to the service it names: a Kubernetes
// service's DNS name (reviews.default.svc.cluster.local, reviews.default.svc)
// to its first label, and a name.namespace form to name when a service of
// that name is in the traces.
func (n *naming) serviceName(host string) string {
	first, rest, dotted := strings.Cut(host, ".")
	if !dotted || first == "" || isIP(host) {
		return host
	}
	if rest == "svc" || strings.HasSuffix(rest, ".svc") || strings.Contains(rest, ".svc.") {
		return first
	}
	if !strings.Contains(rest, ".") && n.services[first] && !n.services[host] {
		return first
	}
	return host
}

// hostOf strips a numeric port from host:port (and the brackets of
// [v6]:port); other peers (a database system/namespace, a bare IPv6
// address) are returned as they are.
func hostOf(peer string) string {
	i := strings.LastIndexByte(peer, ':')
	if i <= 0 || i == len(peer)-1 {
		return peer
	}
	for _, r := range peer[i+1:] {
		if r < '0' || r > '9' {
			return peer
		}
	}
	host := peer[:i]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		return host[1 : len(host)-1]
	}
	if strings.Contains(host, ":") {
		return peer // an IPv6 address without brackets: the tail is not a port
	}
	return host
}

// isIP reports whether a host is a dotted IPv4 address.
func isIP(host string) bool {
	for _, r := range host {
		if r != '.' && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// mostCommon picks the most frequent key, ties broken by name for
// determinism.
func mostCommon(m map[string]int) string {
	return votes[struct{}]{{}: m}.winners()[struct{}{}]
}
