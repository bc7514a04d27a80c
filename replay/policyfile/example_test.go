package policyfile_test

import (
	"fmt"
	"os"

	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/policyfile"
)

// One edge's recommended policy as an Istio VirtualService: attempts
// count retries, and what Istio cannot say is a comment and a note.
func ExampleEmit() {
	edges := []policyfile.Edge{{Caller: "api", Callee: "inventory", Operation: "GET /items/{id}", Policy: replay.Policy{
		MaxAttempts: 3, PerTryTimeout: 0.2,
		Backoff: replay.Backoff{Kind: replay.BackoffExponential, Base: 0.025, Multiplier: 2, Cap: 0.25, Jitter: replay.JitterFull},
	}}}
	out, err := policyfile.Emit(policyfile.FormatIstio, edges)
	if err != nil {
		fmt.Println(err)
		return
	}
	os.Stdout.Write(out.Files[0].Data)
	// Output:
	// # Istio networking.istio.io/v1 written by retryaudit
	// apiVersion: networking.istio.io/v1
	// kind: VirtualService
	// metadata:
	//   name: inventory
	// spec:
	//   hosts:
	//     - inventory
	//   http:
	//     - name: get-items-id
	//       match:
	//         - uri:
	//             regex: /items/[^/]+
	//           method:
	//             exact: GET
	//       route:
	//         - destination:
	//             host: inventory
	//       retries:
	//         attempts: 2
	//         perTryTimeout: 0.2s
	//         retryOn: 5xx,connect-failure,refused-stream
	//         backoff: 0.025s
}

// A gRPC service config read and applied to a model: the retry policy of
// the method it names, on the edge into the service that serves it.
func ExampleRead() {
	m := &replay.Model{
		Services: []replay.Service{
			{Name: "api", Workers: 4, Ops: []replay.Op{{Name: "GET /", Time: replay.Constant(0.001), Calls: []int{0}}}},
			{Name: "stock", Workers: 4, Ops: []replay.Op{{Name: "shop.Stock/Reserve", Time: replay.Constant(0.01)}}},
		},
		Edges: []replay.Edge{{Caller: 0, Callee: 1, Prob: 1, Repeat: 1, Policy: replay.Policy{MaxAttempts: 1}}},
		Entry: []replay.Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:  10,
	}
	f, err := policyfile.Read("service_config.json", []byte(`{"methodConfig": [{
		"name": [{"service": "shop.Stock", "method": "Reserve"}],
		"retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
		                "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := f.Apply(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := got.Edges[0].Policy
	fmt.Println(p.MaxAttempts, p.Backoff.Kind, p.Backoff.Base, p.Backoff.Cap, p.Backoff.Jitter)
	// Output:
	// 4 exponential 0.1 1 full
}
