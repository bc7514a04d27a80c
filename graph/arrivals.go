package graph

import "slices"

// Arrival is one root request as the traces saw it: when it came, relative
// to the first, and which root operation it asked for.
type Arrival struct {
	AtS       float64
	Service   string
	Operation string
}

// rootArrivals lists the root requests in time order: the root SERVER
// spans that become the `user` edges of the topology.
func rootArrivals(ix *index) []Arrival {
	var roots []int32
	for i := range ix.spans {
		if ix.keep[i] && ix.parent[i] < 0 && isServer(&ix.spans[i]) {
			roots = append(roots, int32(i))
		}
	}
	slices.SortFunc(roots, func(a, b int32) int {
		if d := ix.spans[a].Start - ix.spans[b].Start; d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	out := make([]Arrival, len(roots))
	for k, r := range roots {
		sp := &ix.spans[r]
		out[k] = Arrival{AtS: float64(sp.Start-ix.spans[roots[0]].Start) / 1e9, Service: ix.str(sp.Service), Operation: ix.opName(r)}
	}
	return out
}
