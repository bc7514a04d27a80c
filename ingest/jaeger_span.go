package ingest

import (
	"fmt"
	"math"
	"strconv"
	"time"

	model "github.com/jaegertracing/jaeger-idl/model/v1"
)

// jaegerSpans turns Jaeger spans into Span records, whichever encoding they
// arrived in (Jaeger UI JSON, protobuf JSON, binary protobuf): the decoders
// parse ids, times and values, and this type owns everything else, so the
// meaning of references, tags and processes lives in one place.
//
// Per span a decoder calls begin, then ref and tag for each reference and
// tag, then finish. Per trace it calls beginTrace, then addProcess or
// setBatchProcess, before resolving services with serviceOf.
type jaegerSpans struct {
	set *Set
	w   *warnings
	a   attrs

	links     []Link // the current span's links
	hasParent bool   // the current span's parent came from a CHILD_OF reference

	procs    map[string]jProc // process id → process, for the current trace
	batch    jProc            // a Batch's (or Trace's only) process
	hasBatch bool
}

// newJaegerSpans returns a converter appending to set and reporting to w.
func newJaegerSpans(set *Set, w *warnings) *jaegerSpans {
	return &jaegerSpans{set: set, w: w, procs: map[string]jProc{}}
}

// jProc is what matters of a Jaeger process: its service, and the sampler
// (sampler.type, sampler.param) and instance (client-uuid, hostname, ip,
// or OpenTelemetry's resource attributes as tags) its tags name, which
// hold for its spans.
type jProc struct {
	service  string
	sampler  sampler
	instance string
	inst     Sym // instance interned, once a trace's process table holds it
}

// newJProc is the process of service with tags, each given by key and
// value rendered as a string.
func newJProc(service string, n int, tag func(i int) (string, string)) jProc {
	p := jProc{service: service}
	var inst instanceTags
	for i := range n {
		k, v := tag(i)
		p.sampler.tag(k, v)
		inst.tag(k, v)
	}
	p.instance = inst.name()
	return p
}

// apply sets on sp the sampling probability and the instance its process
// gives.
func (p *jProc) apply(set *Set, sp *Span, w *warnings) {
	p.sampler.apply(set, sp)
	if p.inst != 0 && set.SetInstance(sp, p.inst) {
		return
	}
	setInstance(set, sp, p.instance, w)
}

// interned is p with its instance interned in set, for the many spans
// that name it.
func (p jProc) interned(set *Set) jProc {
	if p.instance != "" {
		p.inst = set.Intern(p.instance)
	}
	return p
}

// beginTrace forgets the processes of the previous trace.
func (j *jaegerSpans) beginTrace() {
	clear(j.procs)
	j.batch, j.hasBatch = jProc{}, false
}

// addProcess records process id of the current trace.
func (j *jaegerSpans) addProcess(id string, p jProc) { j.procs[id] = p.interned(j.set) }

// setBatchProcess records the process that spans naming no (known) process
// belong to, as a protobuf Batch carries it.
func (j *jaegerSpans) setBatchProcess(p jProc) { j.batch, j.hasBatch = p.interned(j.set), true }

// resolve sets the service of sp, which names process pid, and the
// sampling probability its process's sampler gives (see serviceOf).
func (j *jaegerSpans) resolve(sp *Span, pid string) {
	sp.Service = j.serviceOf(pid, sp.SpanID)
	if p, ok := j.procs[pid]; ok && pid != "" {
		p.apply(j.set, sp, j.w)
	} else if j.hasBatch {
		j.batch.apply(j.set, sp, j.w)
	}
}

// serviceOf resolves the service of span id, which names process pid: the
// trace's process of that id, else the batch process, else unknown_service
// with an "unknown process" warning.
func (j *jaegerSpans) serviceOf(pid string, id SpanID) Sym {
	if p, ok := j.procs[pid]; ok && pid != "" {
		return j.named(p.service, id)
	}
	if j.hasBatch {
		return j.named(j.batch.service, id)
	}
	if pid == "" {
		j.w.add("unknown process", "span %s names no process: attributed to unknown_service", id)
	} else {
		j.w.add("unknown process", "span %s names process %q, which its trace does not define: attributed to unknown_service", id, pid)
	}
	return j.set.Intern("unknown_service")
}

// named interns the service name of span id's process, substituting
// unknown_service (with a warning) for an empty one.
func (j *jaegerSpans) named(service string, id SpanID) Sym {
	if service == "" {
		j.w.add("missing service.name", "span %s: its process has no serviceName: attributed to unknown_service", id)
		service = "unknown_service"
	}
	return j.set.Intern(service)
}

// begin starts a span: it clears the attributes and references gathered for
// the previous one.
func (j *jaegerSpans) begin() {
	j.a.reset()
	j.links = j.links[:0]
	j.hasParent = false
}

// ref records one reference of sp, whose TraceID is already set. The first
// CHILD_OF reference within sp's trace is its parent; every other reference
// (FOLLOWS_FROM, a second CHILD_OF, one into another trace) becomes a link.
func (j *jaegerSpans) ref(sp *Record, childOf bool, trace TraceID, span SpanID) {
	if childOf && !j.hasParent && trace == sp.TraceID {
		sp.ParentID, j.hasParent = span, true
		return
	}
	j.links = append(j.links, Link{TraceID: trace, SpanID: span})
}

// tag feeds one tag to the attribute accumulator by its value type. A float
// counts only when it holds an integer (a status code sent as 503.0); binary
// values carry nothing the Span keeps.
func (j *jaegerSpans) tag(kv *model.KeyValue) {
	switch kv.VType {
	case model.ValueType_STRING:
		j.a.str(kv.Key, kv.VStr)
	case model.ValueType_BOOL:
		j.a.boolean(kv.Key, kv.VBool)
	case model.ValueType_INT64:
		j.a.integer(kv.Key, kv.VInt64)
	case model.ValueType_FLOAT64:
		if kv.Key == "sampler.param" {
			j.a.str(kv.Key, strconv.FormatFloat(kv.VFloat64, 'g', -1, 64))
			return
		}
		j.a.double(kv.Key, kv.VFloat64)
	}
}

// warning records a Jaeger-side warning (clock skew adjustments, invalid
// parents) attached to a trace or span; about says which.
func (j *jaegerSpans) warning(about, text string) {
	j.w.add("jaeger warning", "%s: %s", about, text)
}

// finish completes sp, whose ids, times and service the decoder has set:
// parent (oldParent, an older export's parentSpanID, when no reference gave
// one), name, attributes, links, then appends it to the Set, which fails
// past the Set's limits.
func (j *jaegerSpans) finish(sp *Record, name string, oldParent SpanID) error {
	if !j.hasParent {
		sp.ParentID = oldParent
	}
	sp.Name = j.a.intern(j.set, name)
	j.a.finish(j.set, sp)
	if len(j.links) > 0 {
		n := min(len(j.links), maxLinks)
		if n < len(j.links) {
			j.w.add("links dropped", "span %s has %d links: the first %d are kept", sp.SpanID, len(j.links), maxLinks)
		}
		sp.FirstLink = uint32(len(j.set.Links))
		sp.NumLinks = uint16(n)
		j.set.Links = append(j.set.Links, j.links[:n]...)
	}
	checkSpan(j.set, sp, &j.a, j.w)
	return j.set.add(sp)
}

// spanEnd returns start+dur in nanoseconds, or an error when the sum does
// not fit an int64.
func spanEnd(start, dur int64) (int64, error) {
	end := start + dur
	if (dur > 0 && end < start) || (dur < 0 && end > start) {
		return 0, fmt.Errorf("start %dns plus duration %dns overflows", start, dur)
	}
	return end, nil
}

// Bounds of a time.Time that Unix nanoseconds can represent.
var (
	minNanosTime = time.Unix(0, math.MinInt64)
	maxNanosTime = time.Unix(0, math.MaxInt64)
)

// unixNanos converts t to Unix nanoseconds, failing outside 1677..2262.
func unixNanos(t time.Time) (int64, error) {
	if t.Before(minNanosTime) || t.After(maxNanosTime) {
		return 0, fmt.Errorf("time %s is missing or outside the years 1677 to 2262", t.Format(time.RFC3339Nano))
	}
	return t.UnixNano(), nil
}
