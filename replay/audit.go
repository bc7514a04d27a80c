package replay

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/graph"
)

// StandardPolicies are the policies audit and replay compare by default.
var StandardPolicies = []string{"observed", "none", "everywhere", "edge-only", "idempotent-only", "hedge-p95", "budget", "retry-after"}

// AuditTargets are the dependencies that matter in a topology: the deepest
// retried dependency (the end of the most amplified path), the most
// amplified callee (the one with the highest product of attempts above
// it), and every database or cache (virtual services, named by their
// clients' db.system, and services called only as leaves).
func AuditTargets(t *graph.Topology) []string {
	var out []string
	add := func(s string) {
		if s != "" && s != "user" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(t.Paths) > 0 {
		p := t.Paths[0]
		add(p.Services[len(p.Services)-1])
	}
	best, bestAmp := "", 1
	for _, p := range t.Paths {
		if p.WorstCaseAmplification > bestAmp {
			// The callee right below the last retrying layer.
			for i := len(p.Services) - 1; i > 0; i-- {
				if slices.Contains(p.RetryingLayers, p.Services[i-1]) {
					best, bestAmp = p.Services[i], p.WorstCaseAmplification
					break
				}
			}
		}
	}
	add(best)
	for _, s := range t.Services {
		if s.Virtual || isDatastore(s.Name) {
			add(s.Name)
		}
	}
	return out
}

// isDatastore recognises databases and caches by the names their clients
// give them (db.system values, or a db.system/namespace peer).
func isDatastore(name string) bool {
	n := strings.ToLower(name)
	for _, k := range []string{"postgres", "mysql", "mariadb", "redis", "memcache", "mongo", "cassandra", "dynamodb", "elasticsearch", "sqlserver", "oracle", "sqlite", "cache", "db"} {
		if strings.Contains(n, k) {
			return true
		}
	}
	return strings.Contains(n, "/")
}

// AuditDegradations are the default degradations of an audit: each fault
// kind applied to each target, starting at 10 s and lasting 10 s (an
// outage 5 s); a db-pool fault halves the target's workers in the model.
func AuditDegradations(targets []string, m *Model) ([]Degradation, error) {
	workers := map[string]int{}
	for _, s := range m.Services {
		workers[s.Name] = s.Workers
	}
	var out []Degradation
	for _, t := range targets {
		if _, ok := workers[t]; !ok {
			continue
		}
		for _, spec := range []string{
			"outage:svc=" + t + ",at=10s,for=5s",
			"slow-shard:svc=" + t + ",at=10s,for=10s,shards=8,x=10",
			"hot-partition:svc=" + t + ",at=10s,for=10s,shards=8,zipf=1.2",
			"packet-loss:svc=" + t + ",at=10s,for=10s,p=0.2",
			fmt.Sprintf("db-pool:svc=%s,at=10s,for=10s,k=%d", t, max(1, int(math.Ceil(float64(workers[t])/2)))),
		} {
			d, err := ParseDegradation(spec)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	return out, nil
}
