package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

// TestParseUtilizations: a service name is everything before the last
// "=", so names that look like syntax are still names.
func TestParseUtilizations(t *testing.T) {
	for _, c := range []struct {
		specs []string
		want  map[string]float64
		err   string
	}{
		{[]string{"db=0.4"}, map[string]float64{"db": 0.4}, ""},
		{[]string{"db=primary=0.4", "nosuch,mode=timeout=0.5"}, map[string]float64{"db=primary": 0.4, "nosuch,mode=timeout": 0.5}, ""},
		{[]string{"db"}, nil, "want SVC=U"},
		{[]string{"=0.4"}, nil, "want SVC=U"},
		{[]string{"db=1"}, nil, "not a busy fraction"},
		{[]string{"db=0"}, nil, "not a busy fraction"},
		{[]string{"db=NaN"}, nil, "not a busy fraction"},
	} {
		got, err := parseUtilizations(c.specs)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.specs, err, c.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.specs, got, err, c.want)
		}
	}
	name, cp, err := replay.ParseCapacity("db=primary=4")
	if err != nil || name != "db=primary" || cp.Workers != 4 {
		t.Errorf("ParseCapacity(db=primary=4) = %q, %+v, %v", name, cp, err)
	}
}
