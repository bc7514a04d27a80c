package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"infer", "--format", ""}, []string{"table", "markdown", "json", "dot", "mermaid"}},
		{[]string{"ingest", "--format", ""}, []string{"table", "json"}},
		{[]string{"replay", "--format", ""}, []string{"table", "markdown", "json"}},
		{[]string{"audit", "--policy", ""}, []string{"observed", "none", "everywhere", "edge-only", "idempotent-only", "hedge-p95", "budget", "retry-after"}},
		{[]string{"audit", "--policy", "edge-only+"}, []string{"edge-only+budget", "edge-only+breaker"}},
		{[]string{"audit", "--fail-on", ""}, []string{"amplification>", "finding:multi-layer-retry", "finding:retry-4xx", "metastable:observed"}},
		{[]string{"replay", "--degrade", ""}, []string{"outage:svc=db,", "slow-shard:", "packet-loss:", "db-pool:", "hot-partition:", "error-rate:", "latency:"}},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"__complete"}, tc.args...), nil, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errb.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), "\n"+w) && !strings.HasPrefix(out.String(), w) {
				t.Errorf("%v: no %q in\n%s", tc.args, w, out.String())
			}
		}
	}
}
