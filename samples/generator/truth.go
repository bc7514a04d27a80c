package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// truth is the ground truth written as truth.json. Configuration comes from
// the scenario's Policy values the callers were built from; what happened
// (exhaustion, statuses seen) comes from the attempts the callers made.
type truth struct {
	Scenario     string      `json:"scenario"`
	Description  string      `json:"description"`
	RootRequests int         `json:"root_requests"`
	Edges        []truthEdge `json:"edges"`
	Paths        []truthPath `json:"paths"`
}

type truthEdge struct {
	Caller string `json:"caller"`
	Callee string `json:"callee"`
	// Operation is the callee's http.route as its SERVER span carries it.
	Operation         string       `json:"operation"`
	Method            string       `json:"method"`
	Library           *string      `json:"library"`
	Retries           bool         `json:"retries"`
	MaxAttempts       int          `json:"max_attempts"`
	ExhaustedInTraces bool         `json:"exhausted_in_traces"`
	Backoff           truthBackoff `json:"backoff"`
	PerTryTimeoutMS   *int64       `json:"per_try_timeout_ms"`
	// RetriedStatus and NotRetriedStatus split the HTTP error statuses the
	// caller received on this edge by whether its policy retries them.
	RetriedStatus     []int `json:"retried_status"`
	NotRetriedStatus  []int `json:"not_retried_status"`
	HonoursRetryAfter bool  `json:"honours_retry_after"`
	IdempotencyKey    bool  `json:"idempotency_key"`
	// WaitLateMS, for an unjittered policy, is the most a wait overran
	// the policy's own wait in this capture (a busy host's scheduling);
	// beyond inference's noise allowance the traces cannot show the
	// absence of jitter. Absent where nothing was measured.
	WaitLateMS *float64 `json:"wait_late_ms,omitempty"`
	// RetryAfterCaptured is false where no span records the Retry-After
	// header; RetryAfterWaits counts the waits it set.
	RetryAfterCaptured bool `json:"retry_after_captured"`
	RetryAfterWaits    int  `json:"retry_after_waits"`
	// Breaker is the circuit breaker around the edge's calls, if any.
	Breaker *truthBreaker `json:"breaker,omitempty"`
	// Hedge is the hedge policy of the edge's calls, if any.
	Hedge *truthHedge `json:"hedge,omitempty"`
	// RetryQuota is the retry budget the edge's calls share, if any.
	RetryQuota *truthQuota `json:"retry_quota,omitempty"`
	// Attempts counts the requests the caller's calls sent (each answered
	// or timed out); absent in samples written before it was recorded.
	Attempts int `json:"attempts,omitempty"`
	// BelowInstrumentation: the retries happen under the caller's
	// instrumentation, so one CLIENT span covers every attempt of a call.
	BelowInstrumentation bool `json:"below_instrumentation,omitempty"`
	// DeadlineCutAttempts counts attempts on this edge that the caller's
	// own caller's deadline ended (propagated with the request): they set
	// no per-try timeout of this edge. Absent where none were cut.
	DeadlineCutAttempts int `json:"deadline_cut_attempts,omitempty"`
	// RetriedCodes and NotRetriedCodes are, for a gRPC edge, the status
	// codes the caller received, split by whether its policy retries them.
	RetriedCodes    []string `json:"retried_codes,omitempty"`
	NotRetriedCodes []string `json:"not_retried_codes,omitempty"`
	// RetriesOnResult: the caller's retry condition reads the answer's
	// body too, retrying a 200 that says the result is not ready;
	// ResultRetriedCalls counts the calls that did, ResultRetries the
	// attempts they sent after such an answer, ExhaustedOnResult the
	// calls that ran out of attempts on one (returning that 200: the
	// traces show a success; exhausted_in_traces counts only calls that
	// ran out on failures).
	RetriesOnResult    bool `json:"retries_on_result,omitempty"`
	ResultRetriedCalls int  `json:"result_retried_calls,omitempty"`
	ResultRetries      int  `json:"result_retries,omitempty"`
	ExhaustedOnResult  int  `json:"exhausted_on_result,omitempty"`
}

// truthBreaker is a circuit breaker's configuration and how many calls it
// failed without an attempt. A breaker that trips on failures in a row
// (gobreaker, cockatiel's ConsecutiveBreaker) sets ConsecutiveFailures; one
// that trips on a failure rate over a rolling window (opossum) sets
// ErrorThresholdPercentage, VolumeThreshold and RollingWindowMS instead.
type truthBreaker struct {
	Library                  string `json:"library"`
	ConsecutiveFailures      int    `json:"consecutive_failures,omitempty"`
	ErrorThresholdPercentage int    `json:"error_threshold_percentage,omitempty"`
	VolumeThreshold          int    `json:"volume_threshold,omitempty"`
	RollingWindowMS          int64  `json:"rolling_window_ms,omitempty"`
	OpenForMS                int64  `json:"open_for_ms"`
	FastFailedCalls          int    `json:"fast_failed_calls"`
	// OpenPeriods counts the times the breaker opened and rejected at
	// least one call before its next probe; FewestFailuresInARow is the
	// fewest failed calls in a row before one of those, MostLetThrough the
	// most after which the breaker, still closed, let a call through
	// (written by the scenarios that record them). A breaker counting
	// failures in a row has MostLetThrough < FewestFailuresInARow.
	OpenPeriods          int `json:"open_periods,omitempty"`
	FewestFailuresInARow int `json:"fewest_failures_in_a_row_before_open,omitempty"`
	MostLetThrough       int `json:"most_failures_in_a_row_let_through,omitempty"`
	// Instances, for a caller run as several instances, is each
	// instance's own breaker (the counts above are their sums).
	Instances []truthInstanceBreaker `json:"instances,omitempty"`
	// InsideRetries, for a breaker inside the retry loop (failsafe-go's
	// failsafe.With(retryPolicy, circuitBreaker)), says it counts and
	// refuses attempts: ConsecutiveFailures counts failed attempts,
	// FastFailedCalls the calls whose every try it refused (no request
	// sent), RefusedTries the tries it refused in all, PartlyRefusedCalls
	// the calls that sent some requests and had others refused,
	// JoinedWaits the gaps between two requests of one call with refused
	// tries between them (several of the policy's waits in one gap, not
	// counted in the edge's waits), TriesPerCall[n] the calls that made
	// n tries, sent or refused; Opened and HalfOpened its OnOpen and
	// OnHalfOpen events, SuccessThreshold the probes in a row that close
	// it, OpenJitterMS how far each open period may lie from OpenForMS
	// (U[−j, j) added to it).
	InsideRetries      bool  `json:"inside_retries,omitempty"`
	OpenJitterMS       int64 `json:"open_jitter_ms,omitempty"`
	SuccessThreshold   int   `json:"success_threshold,omitempty"`
	Opened             int   `json:"opened,omitempty"`
	HalfOpened         int   `json:"half_opened,omitempty"`
	RefusedTries       int   `json:"refused_tries,omitempty"`
	PartlyRefusedCalls int   `json:"partly_refused_calls,omitempty"`
	JoinedWaits        int   `json:"joined_waits,omitempty"`
	TriesPerCall       []int `json:"tries_per_call,omitempty"`
	// For a hystrix-go circuit (ErrorThresholdPercentage, VolumeThreshold
	// and its ten-second RollingWindowMS, emptied when it closes; OpenForMS
	// its SleepWindow): Opened, Closed and Probes are its own log's
	// "opening circuit", "closing circuit" and "allowing single test"
	// events, ProbesFailed the probes whose command failed (the circuit
	// stays open: OpenPeriods counts the refusals after one as a period
	// of their own, as a failed half-open probe reopens other breakers); TimeoutMS is the command's Timeout and TimedOutCalls the
	// calls it failed at that moment while their request went on (an
	// error hystrix counts; the callee still received and served the
	// request); MaxConcurrent its MaxConcurrentRequests and RejectedCalls
	// the calls it refused for them (failed fast, sending nothing, while
	// the circuit was closed).
	Closed        int   `json:"closed,omitempty"`
	Probes        int   `json:"probes,omitempty"`
	ProbesFailed  int   `json:"probes_failed,omitempty"`
	TimeoutMS     int64 `json:"timeout_ms,omitempty"`
	TimedOutCalls int   `json:"timed_out_calls,omitempty"`
	MaxConcurrent int   `json:"max_concurrent,omitempty"`
	RejectedCalls int   `json:"rejected_calls,omitempty"`
	// CalleeReceived counts the requests the callee received on the
	// edge, CalleeServedPastTimeout those it was still serving when the
	// command's Timeout had passed (work the caller no longer waited for).
	CalleeReceived          int `json:"callee_received,omitempty"`
	CalleeServedPastTimeout int `json:"callee_served_past_timeout,omitempty"`
}

// truthInstanceBreaker is what one caller instance's breaker did, from its
// gobreaker's OnStateChange and the calls it refused: Opened counts its
// changes to open, OpenPeriods those that failed a call fast before the
// next change.
type truthInstanceBreaker struct {
	Instance        string `json:"instance"`
	Opened          int    `json:"opened"`
	OpenPeriods     int    `json:"open_periods"`
	FastFailedCalls int    `json:"fast_failed_calls"`
}

// truthHedge is a hedge policy (failsafe-go's, grpc-js's hedgingPolicy)
// and what it did.
type truthHedge struct {
	Library      string `json:"library"`
	DelayMS      int64  `json:"delay_ms"`
	MaxHedges    int    `json:"max_hedges"`
	HedgedCalls  int    `json:"hedged_calls"`
	MostRequests int    `json:"most_requests"`
	// Written by the scenarios that record them (grpc-js-hedge):
	// DelayLateMedianMS is the median of how much later than the delay
	// each hedge reached the callee on this host; CancelledAttempts
	// counts the attempts the callee saw cancelled (hedges that lost);
	// WonByAttempt[i] the calls that attempt i+1 answered; NonFatalCodes
	// the statuses after which the next attempt starts at once
	// (hedgedhttp: "transport error", a request that got no answer).
	DelayLateMedianMS *float64 `json:"delay_late_median_ms,omitempty"`
	CancelledAttempts int      `json:"cancelled_attempts,omitempty"`
	WonByAttempt      []int    `json:"won_by_attempt,omitempty"`
	NonFatalCodes     []string `json:"non_fatal_codes,omitempty"`
	// TransportResends counts the requests net/http's Transport wrote
	// again on a new connection, below the hedging library, after a
	// reused connection closed without an answer (a replayable request:
	// a GET without a body): the callee received them on top of what the
	// library sent (written by the hedgedhttp scenarios).
	TransportResends int `json:"transport_resends,omitempty"`
}

// truthQuota is an AWS SDK retry quota (a token bucket retries draw
// from) and how many calls it refused a retry: each of those ended
// failing with attempts left.
type truthQuota struct {
	Library             string `json:"library"`
	Capacity            uint   `json:"capacity"`
	RetryCost           uint   `json:"retry_cost"`
	ThrottlingRetryCost uint   `json:"throttling_retry_cost"`
	NoRetryIncrement    uint   `json:"no_retry_increment"`
	RefusedCalls        int    `json:"refused_calls"`
}

type truthBackoff struct {
	Kind       string   `json:"kind"`
	BaseMS     *int64   `json:"base_ms"`
	Multiplier *float64 `json:"multiplier"`
	// IncrementMS, for linear and fibonacci backoff: what each wait adds
	// to the one before (linear), or the second wait to the first
	// (fibonacci); written by the scenarios that have them.
	IncrementMS    *int64   `json:"increment_ms,omitempty"`
	CapMS          *int64   `json:"cap_ms"`
	Jitter         string   `json:"jitter"`
	JitterFraction *float64 `json:"jitter_fraction"`
	// JitterAdditiveMS is a, for additive jitter (+U[0, a) ms on every
	// wait); written by the scenarios that have it.
	JitterAdditiveMS *float64 `json:"jitter_additive_ms,omitempty"`
	// OffsetMS, for exponential growth from an offset, is the time added
	// to (or, negative, taken off) every wait of base·multiplierⁿ⁻¹'s
	// shape: retry n waits offset + (base − offset)·multiplierⁿ⁻¹
	// (retry-axios's ((2ⁿ − 1)/2)·d: base d/2, ×2, offset −d/2); written
	// by the scenarios that have it.
	OffsetMS *int64 `json:"offset_ms,omitempty"`
}

// httpRoute is the http.route otelhttp records for a ServeMux pattern.
func httpRoute(pattern string) string {
	_, route, _ := strings.Cut(pattern, " ")
	return route
}

// truthPath is one chain of calls from an entry operation of edge down to an
// operation that calls nothing, following the calls the handlers actually
// made. WorstCaseAmplification is the product of max_attempts along it (or,
// on a hedged edge, of the most requests one call was seen making, where
// that is more): the most calls one root request can make to the last
// service through retries alone (fan-out loops not counted).
type truthPath struct {
	Services []string `json:"services"`
	// Operations[i] is the http.route served by Services[i].
	Operations             []string `json:"operations"`
	WorstCaseAmplification int      `json:"worst_case_amplification"`
}

func buildTruth(sc Scenario, callers []*caller) (truth, error) {
	t := truth{Scenario: sc.Name, Description: sc.Description, RootRequests: sc.rootRequests()}
	callers = mergeInstances(callers)
	for _, c := range callers {
		te, err := truthOf(c)
		if err != nil {
			return truth{}, err
		}
		t.Edges = append(t.Edges, te)
	}
	if sc.ManualCache {
		// api → redis-manual: one lookup per order, never retried; known
		// only from spans that name no peer.
		t.Edges = append(t.Edges, truthEdge{Caller: "api", Callee: cacheService, Operation: "order", Method: "GET",
			MaxAttempts: 1, Backoff: truthBackoff{Kind: "none", Jitter: "none"}, RetriedStatus: []int{}, NotRetriedStatus: []int{},
			RetryAfterCaptured: true})
	}
	t.Paths = paths(callers)
	return t, nil
}

func truthOf(c *caller) (truthEdge, error) {
	e, p, st := c.edge, c.edge.Policy, c.stats
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.calls == 0 {
		return truthEdge{}, fmt.Errorf("edge %s→%s %s was never called", e.Caller, e.Callee, e.Route)
	}
	method, _, _ := strings.Cut(e.Route, " ")
	te := truthEdge{
		Caller: e.Caller, Callee: e.Callee, Operation: httpRoute(e.Route), Method: method,
		ExhaustedInTraces: st.exhausted > 0,
		RetriedStatus:     []int{}, NotRetriedStatus: []int{},
		IdempotencyKey:     p.IdempotencyKey,
		RetryAfterCaptured: !p.HideRetryAfter, RetryAfterWaits: st.retryAfterWaits,
		Attempts: st.attempts, BelowInstrumentation: p.BelowInstrumentation,
		RetriesOnResult: p.RetryOnResult, ResultRetriedCalls: st.resultRetriedCalls, ResultRetries: st.resultRetries,
		ExhaustedOnResult: st.exhaustedOnResult,
	}
	te.configure(p)
	if h := p.Hedge; h != nil {
		te.Hedge = &truthHedge{Library: p.Library, DelayMS: h.Delay.Milliseconds(), MaxHedges: h.MaxHedges,
			HedgedCalls: st.hedgedCalls, MostRequests: st.mostRequests}
		if p.Library == libHedgedhttp {
			// hedgedhttp sends the next request at once after one that
			// got no answer at all; any answer, an HTTP error too, ends
			// the call.
			te.Hedge.WonByAttempt = slices.Clone(st.wonByAttempt)
			te.Hedge.NonFatalCodes = []string{"transport error"}
			te.Hedge.TransportResends = st.transportResends
		}
		if st.received != nil {
			// What the callee received, not what the caller sent (one
			// request sent again after another got no answer is a resend,
			// not a hedge).
			te.Hedge.HedgedCalls, te.Hedge.MostRequests, te.Attempts = 0, st.mostRequestsSeen(), 0
			for _, vs := range st.received {
				if hedgedAtCallee(vs) {
					te.Hedge.HedgedCalls++
				}
				te.Attempts += len(vs)
			}
		}
	}
	if q := p.Quota; q != nil {
		te.RetryQuota = &truthQuota{Library: p.Library, Capacity: q.Capacity, RetryCost: q.RetryCost,
			ThrottlingRetryCost: q.ThrottlingRetryCost, NoRetryIncrement: q.NoRetryIncrement, RefusedCalls: st.quotaRefused}
	}
	if b := p.Breaker; b != nil && b.InsideRetries && b.Hystrix == nil {
		te.Breaker = &truthBreaker{Library: libFailsafe, ConsecutiveFailures: b.ConsecutiveFailures,
			OpenForMS: b.OpenFor.Milliseconds(), FastFailedCalls: st.breakerFastFails,
			OpenPeriods: st.breakerOpenPeriods, InsideRetries: true, OpenJitterMS: b.OpenJitter.Milliseconds(), SuccessThreshold: b.SuccessThreshold,
			Opened: st.breakerOpened, HalfOpened: st.breakerHalfOpened, RefusedTries: st.refusedTries,
			PartlyRefusedCalls: st.partlyRefused, JoinedWaits: st.joinedWaits, TriesPerCall: slices.Clone(st.triesPerCall)}
	} else if b != nil && b.Hystrix != nil {
		h := b.Hystrix
		te.Breaker = &truthBreaker{Library: libHystrix, ErrorThresholdPercentage: h.ErrorPercent, VolumeThreshold: h.RequestVolume,
			RollingWindowMS: hystrixWindow.Milliseconds(), OpenForMS: h.SleepWindow.Milliseconds(), FastFailedCalls: st.breakerFastFails,
			OpenPeriods: st.breakerOpenPeriods, Opened: st.breakerOpened, Closed: st.hystrixClosed, Probes: st.hystrixProbes, ProbesFailed: st.hystrixProbesFailed,
			TimeoutMS: h.Timeout.Milliseconds(), TimedOutCalls: st.hystrixTimeouts, MaxConcurrent: h.MaxConcurrent, RejectedCalls: st.hystrixRejects}
		if b.InsideRetries {
			// heimdall's retry loop around the commands: the circuit
			// refuses tries, and the loop retries them.
			te.Breaker.InsideRetries, te.Breaker.RefusedTries, te.Breaker.PartlyRefusedCalls = true, st.refusedTries, st.partlyRefused
			te.Breaker.JoinedWaits, te.Breaker.TriesPerCall = st.joinedWaits, slices.Clone(st.triesPerCall)
		}
		for _, vs := range st.received {
			for _, v := range vs {
				te.Breaker.CalleeReceived++
				if v.to.Sub(v.from) >= h.Timeout {
					te.Breaker.CalleeServedPastTimeout++
				}
			}
		}
	} else if b != nil {
		te.Breaker = &truthBreaker{Library: libGobreaker, ConsecutiveFailures: b.ConsecutiveFailures,
			OpenForMS: b.OpenFor.Milliseconds(), FastFailedCalls: st.breakerFastFails,
			OpenPeriods: st.breakerOpenPeriods, Instances: st.instances}
	}
	if _, ok := p.intendedWait(1); ok && p.retries() && sumWaits(st.waits) > 0 {
		late := math.Round(st.lateMS*10) / 10
		te.WaitLateMS = &late
	}
	for status := range st.statuses {
		if p.retriesStatus(status) {
			te.RetriedStatus = append(te.RetriedStatus, status)
		} else {
			te.NotRetriedStatus = append(te.NotRetriedStatus, status)
		}
	}
	slices.Sort(te.RetriedStatus)
	slices.Sort(te.NotRetriedStatus)
	return te, nil
}

// mergeInstances returns callers with the callers of one edge from the
// instances of a caller service (caller.instance set) merged into one, in
// the order the first of each came: an edge's truth is over every
// instance's calls, and its breaker lists what each instance's did.
func mergeInstances(callers []*caller) []*caller {
	var out []*caller
	first := map[Edge]*caller{}
	for _, c := range callers {
		if c.instance == "" {
			out = append(out, c)
			continue
		}
		m := first[c.edge]
		if m == nil {
			m = &caller{edge: c.edge, stats: newEdgeStats(c.edge.Policy)}
			first[c.edge] = m
			out = append(out, m)
		}
		m.stats.add(c.stats, c.instance, c.edge.Policy.Breaker != nil)
	}
	return out
}

// configure writes what p configures into te: library, attempts,
// backoff, per-try timeout, and whether Retry-After is honoured.
func (te *truthEdge) configure(p Policy) {
	te.Retries, te.MaxAttempts, te.HonoursRetryAfter = p.retries(), p.MaxAttempts, p.HonoursRetryAfter
	te.Backoff = truthBackoff{Kind: p.Backoff.Kind, Jitter: p.Backoff.Jitter}
	if p.Library != "" {
		te.Library = &p.Library
	}
	if p.PerTryTimeout > 0 {
		te.PerTryTimeoutMS = millis(p.PerTryTimeout)
	}
	if b := p.Breaker; b != nil && b.Hystrix != nil && b.Hystrix.Timeout > 0 {
		// The command's Timeout bounds the call's one request: the
		// caller stops waiting for it then (its request goes on).
		te.PerTryTimeoutMS = millis(b.Hystrix.Timeout)
	}
	if p.Backoff.Kind != "none" {
		te.Backoff.BaseMS = millis(p.Backoff.Base)
	}
	if k := p.Backoff.Kind; k == "linear" || k == "fibonacci" {
		te.Backoff.IncrementMS = millis(p.Backoff.Increment)
	}
	if p.Backoff.Kind == "exponential" {
		te.Backoff.Multiplier = &p.Backoff.Multiplier
		if p.Backoff.Cap > 0 {
			te.Backoff.CapMS = millis(p.Backoff.Cap)
		}
	}
	switch p.Backoff.Jitter {
	case "none", "full":
	case "additive":
		a := float64(p.Backoff.Additive.Milliseconds())
		te.Backoff.JitterAdditiveMS = &a
	default:
		te.Backoff.JitterFraction = &p.Backoff.JitterFraction
	}
}

// hedgedAtCallee reports whether the requests of one call, vs in the
// order they arrived, show a hedge: one arrived while an earlier one was
// still being handled, or after an earlier one had been answered. A
// hedging client (hedgedhttp) sends nothing once it has an answer,
// whatever its status, so such a request left before that answer came
// back, and reached the callee late (on a loaded host); only a request
// that got no answer is followed by one sent after it.
func hedgedAtCallee(vs []visit) bool {
	var busy time.Time // when the latest earlier request is done
	for i, v := range vs {
		if i > 0 && v.from.Before(busy) {
			return true
		}
		if v.answered && i < len(vs)-1 {
			return true
		}
		if v.to.After(busy) {
			busy = v.to
		}
	}
	return false
}

func sumWaits(w []int) int {
	n := 0
	for _, x := range w {
		n += x
	}
	return n
}

func millis(d time.Duration) *int64 {
	v := d.Milliseconds()
	return &v
}

// paths lists every chain of calls that starts at an operation no caller
// targets (edge's routes).
func paths(callers []*caller) []truthPath {
	targeted := map[string]bool{}
	entries := map[string]bool{}
	for _, c := range callers {
		targeted[c.edge.Route] = true
		for from := range c.stats.from {
			entries[from] = true
		}
	}
	var out []truthPath
	var entry string
	var walk func(route string, prefix []*caller)
	walk = func(route string, prefix []*caller) {
		leaf := true
		for _, c := range callers {
			if c.stats.from[route] {
				leaf = false
				walk(c.edge.Route, append(slices.Clip(prefix), c))
			}
		}
		if !leaf || len(prefix) == 0 {
			return
		}
		p := truthPath{Services: []string{prefix[0].edge.Caller}, Operations: []string{httpRoute(entry)},
			WorstCaseAmplification: 1}
		for _, c := range prefix {
			p.Services = append(p.Services, c.edge.Callee)
			p.Operations = append(p.Operations, httpRoute(c.edge.Route))
			// A hedged call's requests can outnumber its policy's: net/http's
			// Transport writes an aborted GET again on a new connection while
			// the hedge timer runs on (transport_resends).
			p.WorstCaseAmplification *= max(c.edge.Policy.requests(), c.stats.mostRequestsSeen())
		}
		out = append(out, p)
	}
	for _, entry = range slices.Sorted(maps.Keys(entries)) {
		if !targeted[entry] {
			walk(entry, nil)
		}
	}
	return out
}

func writeTruth(path string, t any) error {
	return writeFiles(map[string]func(io.Writer) error{path: func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	}})
}

// mostRequestsSeen is the most requests one call of the edge made: as the
// callee received them where the scenario counts them there (a request
// net/http sent again is one more), else as the caller sent them.
func (s *edgeStats) mostRequestsSeen() int {
	if s.received == nil {
		return s.mostRequests
	}
	most := 0
	for _, vs := range s.received {
		most = max(most, len(vs))
	}
	return most
}
