package audit

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/replay"
)

// pool runs simulations on every core: at most GOMAXPROCS at once, however
// many goroutines ask. Runs are independent and deterministic, so results
// do not depend on scheduling.
type pool struct {
	slots    chan struct{}
	mu       sync.Mutex
	done     int
	progress func(done int)
	// cache, when set, makes each distinct run once.
	cache *runCache
}

func newPool(progress func(done int)) *pool {
	return &pool{slots: make(chan struct{}, runtime.GOMAXPROCS(0)), progress: progress}
}

// runCache holds every run made, by its whole input, so that a run asked
// for again (the if-idempotent branch of an audit repeats every run of a
// variant its declarations leave alone) is made once. The simulator is a
// function of the model's contents, the faults and the run's
// configuration alone (each run draws from its own streams, seeded from
// the configuration), so equal inputs give the same result.
type runCache struct {
	mu   sync.Mutex
	runs map[runKey][]*cachedRun
}

// runKey sorts runs into small buckets; cachedRun.same decides.
type runKey struct {
	cfg          replay.RunConfig
	rate, period float64
	faults       int
	first        degrade.Fault
}

type cachedRun struct {
	m      *replay.Model
	faults degrade.Schedule
	done   chan struct{} // closed once r, err and idle are set
	r      replay.Result
	err    error
	// shadows are the other policies the run followed (replay.RunShadowed)
	// and idle says, for each, that it never acted: the run is theirs too.
	shadows [][]replay.Policy
	idle    []bool
}

// standsFor reports whether the run is also the run of its model with
// the policies pol: it followed them as a shadow, which never acted.
func (c *cachedRun) standsFor(pol []replay.Policy) bool {
	k := slices.IndexFunc(c.shadows, func(s []replay.Policy) bool { return slices.Equal(s, pol) })
	return k >= 0 && c.err == nil && c.idle[k]
}

func newRunCache() *runCache { return &runCache{runs: map[runKey][]*cachedRun{}} }

// same reports whether c is the run of m under faults: the faults equal
// and the models deeply equal, every field the simulator reads included
// (a NaN anywhere makes them unequal: a run made twice, never a wrong one).
func (c *cachedRun) same(m *replay.Model, faults degrade.Schedule) bool {
	return slices.Equal(c.faults, faults) && (c.m == m || reflect.DeepEqual(c.m, m))
}

// lookup returns the entry of the run of m under faults with cfg and
// whether it was there; when it was not, the caller must make the run,
// set the new entry's r and err and close its done. An audit never
// changes a model once made (the search's loads are copies), so the same
// pointer is the same input.
func (rc *runCache) lookup(m *replay.Model, faults degrade.Schedule, cfg replay.RunConfig) (*cachedRun, bool) {
	k := runKey{cfg: cfg, rate: m.Rate, period: m.Period, faults: len(faults)}
	if len(faults) > 0 {
		k.first = faults[0]
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, c := range rc.runs[k] {
		if c.same(m, faults) {
			return c, true
		}
	}
	c := &cachedRun{m: m, faults: faults, done: make(chan struct{})}
	rc.runs[k] = append(rc.runs[k], c)
	return c, false
}

// run simulates one model, waiting for a free core, or returns the result
// of the same run made before (or being made); it gives up when ctx is
// done.
func (p *pool) run(ctx context.Context, m *replay.Model, faults degrade.Schedule, cfg replay.RunConfig) (replay.Result, error) {
	c, err := p.runShadowed(ctx, m, nil, faults, cfg)
	if err != nil {
		return replay.Result{}, err
	}
	return c.r, c.err
}

// runShadowed is run with the policies shadows followed through the run
// when it is made now (a run made before keeps the shadows it was made
// with). The error is ctx's; the run's own is the entry's.
func (p *pool) runShadowed(ctx context.Context, m *replay.Model, shadows [][]replay.Policy, faults degrade.Schedule, cfg replay.RunConfig) (*cachedRun, error) {
	if p.cache == nil {
		c := &cachedRun{m: m, faults: faults, shadows: shadows}
		c.r, c.idle, c.err = p.simulate(ctx, m, shadows, faults, cfg)
		return c, ctx.Err()
	}
	c, found := p.cache.lookup(m, faults, cfg)
	if !found {
		c.shadows = shadows
		c.r, c.idle, c.err = p.simulate(ctx, m, shadows, faults, cfg)
		close(c.done)
		return c, ctx.Err()
	}
	// Waiting holds no core: the run waited for takes one of its own.
	select {
	case <-c.done:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runVariant makes the run of variant v whose model, at the load run,
// is m: the run of v.via's model bm, when that run followed v's policies
// as a shadow and they never acted, which is then v's run bit for bit
// (replay.RunShadowed); else v's own, carrying the shadows of the
// variants whose via v is. bm nil: v's own. A caller passes bm only where
// the via's run is made anyway (a run made for v alone would be waste
// wherever v's policies act); whichever asks first makes it.
func (p *pool) runVariant(ctx context.Context, v *variant, m, bm *replay.Model, faults degrade.Schedule, cfg replay.RunConfig) (replay.Result, error) {
	if bm != nil && v.via != nil && p.cache != nil {
		c, err := p.runShadowed(ctx, bm, v.via.shadows, faults, cfg)
		if err != nil {
			return replay.Result{}, err
		}
		if c.standsFor(v.via.shadows[v.viaK]) {
			return c.r, nil
		}
	}
	c, err := p.runShadowed(ctx, m, v.shadows, faults, cfg)
	if err != nil {
		return replay.Result{}, err
	}
	return c.r, c.err
}

// simulate makes one run on a free core, with shadows (see
// replay.RunShadowed).
func (p *pool) simulate(ctx context.Context, m *replay.Model, shadows [][]replay.Policy, faults degrade.Schedule, cfg replay.RunConfig) (replay.Result, []bool, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return replay.Result{}, nil, ctx.Err()
	}
	defer func() { <-p.slots }()
	if err := ctx.Err(); err != nil {
		return replay.Result{}, nil, err
	}
	r, same, err := replay.RunShadowed(ctx, m, faults, cfg, shadows)
	if p.progress != nil {
		p.mu.Lock()
		p.done++
		p.progress(p.done)
		p.mu.Unlock()
	}
	return r, same, err
}

// each calls f(0..n-1) concurrently and returns the first error.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// variant is one candidate policy: its name, the model as simulated (after
// the safety rules) and the rules' adjustments.
type variant struct {
	policy   string
	model    *replay.Model
	adjusted []Adjustment
	// keyed are the edges on which the variant sends an idempotency key
	// that today's calls lack (observed+keys), by model edge index.
	keyed []int
	// via is the variant whose runs stand for this one's wherever this
	// one's policies, followed through them as a shadow, never act (nil:
	// none), viaAt its index; viaK is this one's among via's shadows, the
	// policies of every variant whose via it is (see planShadows).
	via         *variant
	viaAt, viaK int
	shadows     [][]replay.Policy
}

// planShadows gives each variant whose model is an earlier one's but for
// policies a run can follow as shadows (replay.ShadowOf: a budget, a cap
// on attempts, or retries where the other makes one attempt) that
// variant as its via: the first such one that has no via itself.
func planShadows(vs []variant) {
	for v := range vs {
		for u := range v {
			if vs[u].via == nil && replay.ShadowOf(vs[u].model, vs[v].model) {
				var pol []replay.Policy
				for _, e := range vs[v].model.Edges {
					pol = append(pol, e.Policy)
				}
				vs[v].via, vs[v].viaAt, vs[v].viaK = &vs[u], u, len(vs[u].shadows)
				vs[u].shadows = append(vs[u].shadows, pol)
				break
			}
		}
	}
}

// matrix holds every run of the audit at today's load: runs[s][d][v] is
// variant v under degradation d with seed s; base[s] is policy none with
// no fault, the reference of work amplification.
type matrix struct {
	seeds []uint64
	runs  [][][]replay.Result
	base  []replay.Result
}

// runMatrix runs every variant under every degradation for every seed on
// every core, and fills in work amplification and yield per seed (against
// none, variant noneAt).
func runMatrix(ctx context.Context, p *pool, vs []variant, noneAt int, ds []replay.Degradation, seeds []uint64, cfg replay.RunConfig) (*matrix, error) {
	mx := &matrix{seeds: seeds, runs: make([][][]replay.Result, len(seeds)), base: make([]replay.Result, len(seeds))}
	for s := range seeds {
		mx.runs[s] = make([][]replay.Result, len(ds))
		for d := range ds {
			mx.runs[s][d] = make([]replay.Result, len(vs))
		}
	}
	// A variant that replays exactly as an earlier one under a
	// degradation (observed+keys where keys change no policy: a key
	// changes no load; retry-after where no Retry-After reaches the edges
	// it changes) takes its runs.
	twin := make([][]int, len(ds))
	for d := range ds {
		twin[d] = twins(vs, ds[d].Faults)
	}
	per := len(ds)*len(vs) + 1
	err := each(len(seeds)*per, func(i int) error {
		s, j := i/per, i%per
		c := cfg
		c.Seed = seeds[s]
		if j == per-1 {
			r, err := p.run(ctx, vs[noneAt].model, nil, c)
			r.Policy, r.Degradation = "none", "baseline"
			mx.base[s] = r
			return err
		}
		d, v := j/len(vs), j%len(vs)
		if twin[d][v] != v {
			return nil
		}
		// The via's run at today's load is made here too, unless the via
		// itself takes a twin's runs.
		var bm *replay.Model
		if u := vs[v].via; u != nil && twin[d][vs[v].viaAt] == vs[v].viaAt {
			bm = u.model
		}
		r, err := p.runVariant(ctx, &vs[v], vs[v].model, bm, ds[d].Faults, c)
		if err != nil {
			return fmt.Errorf("policy %s under %s: %w", vs[v].policy, ds[d].Name, err)
		}
		r.Policy, r.Degradation = vs[v].policy, ds[d].Name
		mx.runs[s][d][v] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	for s := range seeds {
		for d := range ds {
			row := mx.runs[s][d]
			for v, u := range twin[d] {
				if u != v {
					row[v] = row[u]
					row[v].Policy = vs[v].policy
				}
			}
			replay.Compare(row, mx.base[s], row[noneAt])
		}
	}
	return mx, nil
}

// twins maps each variant to the first one that replays alike under
// faults (replaysAlike), itself where none is: every variant is made from
// the one model of the traces, which the policies alone tell apart, so
// twins replay alike, at any load (the search scales what every variant
// shares, never a policy), and are run and searched once.
func twins(vs []variant, faults degrade.Schedule) []int {
	twin := make([]int, len(vs))
	for v := range vs {
		twin[v] = v
		for u := range v {
			if replaysAlike(vs[u].model, vs[v].model, faults) {
				twin[v] = u
				break
			}
		}
	}
	return twin
}

// collapsed says a run stayed collapsed after its trigger: the
// simulator's verdict (replay.VerdictCollapsed), read from the dynamics
// after the trigger ended.
func collapsed(r *replay.Result) bool { return r.Verdict == replay.VerdictCollapsed }

// recoveredAll says variant v recovered after degradation d in every seed.
func (mx *matrix) recoveredAll(d, v int) bool {
	for s := range mx.seeds {
		if mx.runs[s][d][v].Verdict != replay.VerdictRecovered {
			return false
		}
	}
	return true
}
