package graph

import (
	"maps"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/ingest"
)

// unnamedService reports whether a service name is a placeholder for
// none: what ingest writes for a span that names no service, and the
// OpenTelemetry SDKs' default ("unknown_service:java").
func unnamedService(s string) bool {
	return s == "unknown_service" || strings.HasPrefix(s, "unknown_service:")
}

// nameUnnamed gives spans exported without a service name the service
// their place in the trace shows, parents before children:
//
//   - a SERVER or CONSUMER span is the service its caller addressed: the
//     peer its CLIENT or PRODUCER parent names, reduced to a service name
//     (reviews.default.svc.cluster.local is reviews); with no such parent,
//     a sidecar's inbound span is the host the request was sent to, which
//     Envoy and Istio put in its name (checkout.shop.svc.cluster.local:8080/*);
//   - any other span runs in its parent's process: its parent's service
//     (a sidecar's outbound span under its inbound one).
//
// Envoy's Zipkin tracer, run without --service-cluster, names no service
// on any span; its node_id, zone and guid:x-request-id tags are not kept by
// ingest (node_id is free-form outside Istio, and x-request-id is shared by
// every service a request crosses), so they cannot name one. IP addresses
// name no service. It counts the spans it named and those that stay
// unnamed (ix.unnamedNamed, ix.unnamedLeft); the spans are copied before
// the first rename.
//
// Which names are services is known only from every trace (phase 0: each
// shard's names are read and merged); the renaming is then applied trace
// by trace.
func (ix *index) nameUnnamed(set *ingest.Set) {
	unnamed := mapShards(ix, ix.serviceNames, func(sum, p map[ingest.Sym]bool) { maps.Copy(sum, p) })
	some := false
	services := map[string]bool{}
	for s, u := range unnamed {
		some = some || u
		if !u {
			services[set.Str(s)] = true
		}
	}
	if !some {
		return
	}
	nm := &naming{services: services}
	ix.each(func(s sel) { ix.nameUnnamedIn(s, set, nm, unnamed) })
}

// serviceNames is phase 0's map step: every service name the selected
// spans carry, true for a placeholder for none.
func (ix *index) serviceNames(s sel) map[ingest.Sym]bool {
	unnamed := map[ingest.Sym]bool{}
	last, started := ingest.Sym(0), false
	for i := range ix.spans {
		if !s.has(int32(i)) {
			continue
		}
		sv := ix.spans[i].Service
		if started && sv == last {
			continue // spans of one service come in runs: one lookup a run
		}
		last, started = sv, true
		if _, seen := unnamed[sv]; !seen {
			unnamed[sv] = unnamedService(ix.set.Str(sv))
		}
	}
	return unnamed
}

// nameUnnamedIn names the unnamed spans of the selected traces, parents
// before children, by the names nm knows as services.
func (ix *index) nameUnnamedIn(s sel, set *ingest.Set, nm *naming, unnamed map[ingest.Sym]bool) {
	name := func(host string) ingest.Sym {
		host = hostOf(host)
		if host == "" || isIP(host) || strings.Contains(host, ":") {
			return 0
		}
		return set.Intern(nm.serviceName(host))
	}
	var queue []int32
	for i, p := range ix.parent {
		if p < 0 && s.has(int32(i)) {
			queue = append(queue, int32(i))
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		queue = append(queue, ix.kids(i)...)
		sp := &ix.spans[i]
		if !unnamed[sp.Service] {
			continue
		}
		to := ingest.Sym(0)
		p := ix.parent[i]
		switch {
		case isServer(sp):
			if p >= 0 && (ix.spans[p].Kind == ingest.KindClient || ix.spans[p].Kind == ingest.KindProducer) && ix.spans[p].Peer != 0 {
				to = name(ix.str(ix.spans[p].Peer))
			} else if sp.Has(ingest.FlagProxy) {
				if host, _, ok := strings.Cut(ix.str(sp.Name), "/"); ok {
					to = name(host)
				}
			}
		case p >= 0 && !unnamed[ix.spans[p].Service]:
			to = ix.spans[p].Service
		}
		if to == 0 {
			ix.unnamedLeft++
			continue
		}
		if len(set.Spans) > 0 && &ix.spans[0] == &set.Spans[0] {
			ix.spans = slices.Clone(ix.spans) // never rewrite the caller's spans
			sp = &ix.spans[i]
		}
		sp.Service = to
		ix.unnamedNamed++
	}
}
