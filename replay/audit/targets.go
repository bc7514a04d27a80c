package audit

import (
	"math"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// StandardPolicies are the policies audit and replay compare by default.
var StandardPolicies = []string{"observed", "none", "everywhere", "edge-only", "idempotent-only", "hedge-p95", "budget", "retry-after"}

// Targets are the dependencies that matter in a topology: the deepest
// retried dependency (the end of the most amplified path), the most
// amplified callee (the one with the highest product of attempts above
// it), and every database or cache (virtual services, named by their
// clients' db.system, and services called only as leaves).
func Targets(t *graph.Topology) []string {
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

// Degradations are the default degradations of an audit, built as values
// (a service name is data, never spec syntax): each fault kind applied to
// each target of the model, starting at 10 s and lasting 10 s (an outage
// 5 s); a db-pool fault halves the target's workers in the model. Targets
// the model does not have are skipped.
func Degradations(targets []string, m *replay.Model) []replay.Degradation {
	workers := map[string]int{}
	for _, s := range m.Services {
		workers[s.Name] = s.Workers
	}
	var out []replay.Degradation
	for _, t := range targets {
		w, ok := workers[t]
		if !ok {
			continue
		}
		for _, f := range []degrade.Fault{
			{Kind: degrade.Outage, Service: t, At: 10, For: 5, Mode: degrade.ModeError},
			{Kind: degrade.SlowShard, Service: t, At: 10, For: 10, Shards: degrade.DefaultShards, Factor: degrade.DefaultFactor},
			{Kind: degrade.HotPartition, Service: t, At: 10, For: 10, Shards: degrade.DefaultShards, Skew: degrade.DefaultSkew},
			{Kind: degrade.PacketLoss, Service: t, At: 10, For: 10, Loss: 0.2},
			{Kind: degrade.DBPool, Service: t, At: 10, For: 10, Limit: max(1, int(math.Ceil(float64(w)/2)))},
		} {
			out = append(out, replay.Degradation{Name: f.String(), Faults: degrade.Schedule{f}})
		}
	}
	return out
}
