package replay

import (
	"strings"
	"testing"
)

// TestDegradationCheck: a degradation on a service or an edge the model
// does not have simulates nothing, so the matrix refuses it, naming what
// the model has (issue 12 item 12); a packet-loss on db->api where api
// calls db (never the reverse) used to run and compare policies on no
// fault at all.
func TestDegradationCheck(t *testing.T) {
	m := chain()
	for _, tc := range []struct {
		spec, want string
	}{
		{"outage:svc=db,at=1s,for=1s", ""},
		{"packet-loss:edge=svc->db,at=1s,for=1s,p=0.5", ""},
		{"packet-loss:svc=db,at=1s,for=1s,p=0.5", ""},
		{"outage:svc=nosuch,at=1s,for=1s", `no service "nosuch" in the model (have api, db, svc)`},
		{"packet-loss:edge=nosuch->db,at=1s,for=1s,p=0.5", `no service "nosuch" in the model`},
		{"packet-loss:edge=db->svc,at=1s,for=1s,p=0.5", "no edge db->svc in the model: db never calls svc (svc is called by api)"},
		{"packet-loss:edge=svc->api,at=1s,for=1s,p=0.5", "no edge svc->api in the model: svc never calls api (nothing calls api)"},
		{"packet-loss:edge=api->db,at=1s,for=1s,p=0.5", "no edge api->db in the model: api never calls db (db is called by svc)"},
	} {
		d, err := ParseDegradation(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		none, err := ApplyPolicy(m, "none")
		if err != nil {
			t.Fatal(err)
		}
		mx := Matrix{Variants: []Variant{{Policy: "none", Model: none}}, Degradations: []Degradation{d}, Config: RunConfig{Seed: 1, Duration: 2}}
		_, err = mx.Run()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.spec, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error saying %q", tc.spec, err, tc.want)
		}
	}
}
