package replay

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestBrookerJitter reproduces the orderings of Brooker's "Exponential
// Backoff And Jitter" with the contention preset (one optimistic update
// per client, |Normal(10, 2)| ms a message, base 5 ms, cap 2 s; 10 to 190
// clients every 30, each point the mean of seeds 1–5). At 70 clients and
// more: exponential backoff without jitter takes 7–14 times as long as
// full jitter; full and equal jitter make the fewest calls, within 10% of
// each other, and full finishes sooner; decorrelated jitter finishes
// within 15% of full's time with 15–45% more calls at 100 clients and more
// (the article: 25–40%); no backoff finishes first, with 3.5–5.5 times
// full jitter's calls at 190 clients (the article: about 4.5).
func TestBrookerJitter(t *testing.T) {
	p, err := NewPreset("contention", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := p.Contention.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := len(p.Contention.Clients) * len(brookerStrategies); len(rows) != want || p.Contention.Clients[len(p.Contention.Clients)-1] != 190 {
		t.Fatalf("%d rows up to %d clients, want %d up to 190", len(rows), p.Contention.Clients[len(p.Contention.Clients)-1], want)
	}
	var table strings.Builder
	for i := 0; i < len(rows); i += len(brookerStrategies) {
		n := rows[i].Clients
		comp, calls := map[string]float64{}, map[string]float64{}
		fmt.Fprintf(&table, "%3d clients:", n)
		for _, r := range rows[i : i+len(brookerStrategies)] {
			comp[r.Strategy], calls[r.Strategy] = r.CompletionS, r.Calls
			fmt.Fprintf(&table, "  %s %.2fs (%.1f×) %.0f calls (%.2f×)", r.Strategy, r.CompletionS, r.TimeVsRef, r.Calls, r.CallsVsRef)
			if r.Strategy == "full jitter" && (r.TimeVsRef != 1 || r.CallsVsRef != 1) {
				t.Errorf("%d clients: full jitter against itself %v×, %v×", n, r.TimeVsRef, r.CallsVsRef)
			}
		}
		table.WriteString("\n")
		if n < 70 {
			continue
		}
		full, equal, dec, exp, none := "full jitter", "equal jitter", "decorrelated", "exponential", "no backoff"
		if r := comp[exp] / comp[full]; r < 7 || r > 14 {
			t.Errorf("%d clients: exponential takes %.1f× full jitter's time, want 7–14×", n, r)
		}
		if d := calls[equal]/calls[full] - 1; d < -0.1 || d > 0.1 || calls[full] >= calls[dec] || calls[full] >= calls[exp] || calls[full] >= calls[none] {
			t.Errorf("%d clients: calls %v: want full and equal jitter the fewest, within 10%%", n, calls)
		}
		if comp[full] >= comp[equal] {
			t.Errorf("%d clients: full jitter %.2fs, equal %.2fs: want full sooner", n, comp[full], comp[equal])
		}
		if r := comp[dec] / comp[full]; r > 1.15 || r < 1/1.15 {
			t.Errorf("%d clients: decorrelated takes %.2f× full jitter's time, want within 15%%", n, r)
		}
		if r := calls[dec] / calls[full]; n >= 100 && (r < 1.15 || r > 1.45) {
			t.Errorf("%d clients: decorrelated makes %.2f× full jitter's calls, want 1.15–1.45×", n, r)
		}
		for _, s := range brookerStrategies {
			if s.Name != none && comp[none] >= comp[s.Name] {
				t.Errorf("%d clients: no backoff %.2fs, %s %.2fs: want no backoff first", n, comp[none], s.Name, comp[s.Name])
			}
		}
		if r := calls[none] / calls[full]; n == 190 && (r < 3.5 || r > 5.5) {
			t.Errorf("190 clients: no backoff makes %.1f× full jitter's calls, want 3.5–5.5×", r)
		}
	}
	t.Log("\n" + table.String())
}

// TestContentionRefusals: hostile parameters are refused, and a backoff
// that never lets the clients through is stopped.
func TestContentionRefusals(t *testing.T) {
	ctx := context.Background()
	for _, c := range []Contention{
		{Clients: 0, DelayMS: 10},
		{Clients: MaxContentionClients + 1, DelayMS: 10},
		{Clients: 5, DelayMS: math.NaN()},
		{Clients: 5, DelayMS: 10, DelaySDMS: math.Inf(1)},
		{Clients: 5, DelayMS: 10, Backoff: Backoff{Kind: "sometimes"}},
	} {
		if _, err := c.Run(ctx, 1, 1000); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := (Contention{Clients: 500, DelayMS: 10, DelaySDMS: 2}).Run(ctx, 1, 1000); err == nil || !strings.Contains(err.Error(), "over 1000 calls") {
		t.Errorf("a run past its call budget: %v", err)
	}
	a, _ := Contention{Clients: 50, DelayMS: 10, DelaySDMS: 2, Backoff: brookerStrategies[2].Backoff}.Run(ctx, 7, 1e6)
	b, _ := Contention{Clients: 50, DelayMS: 10, DelaySDMS: 2, Backoff: brookerStrategies[2].Backoff}.Run(ctx, 7, 1e6)
	if a != b || a.Calls < 100 {
		t.Errorf("same seed: %+v and %+v", a, b)
	}
}
