package replay

import (
	"fmt"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
)

func TestDbg(t *testing.T) {
	top := sampleTopology(t, "mixed")
	m, err := FromTopology(top, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Edges {
		fmt.Printf("%s→%s prob %.2f rep %d pol %+v fail %+v\n", m.Services[e.Caller].Name, m.Services[e.Callee].Name, e.Prob, e.Repeat, e.Policy.Backoff, e.Fail)
	}
	for _, e := range m.Entry {
		fmt.Printf("entry %s %s %+v\n", m.Services[e.Service].Name, m.Services[e.Service].Ops[e.Op].Name, e.Fail)
	}
	s := newSim(m, degrade.Schedule{{Kind: degrade.Observed}}, RunConfig{Seed: 1, Duration: 60}.withDefaults())
	s.run()
	slow := 0
	for _, l := range s.met.latencies {
		if l > 0.005 {
			slow++
		}
	}
	fmt.Println("slow share", float64(slow)/float64(len(s.met.latencies)))
	fmt.Println(m.Assumed)
}
