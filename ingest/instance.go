package ingest

import "strconv"

// instanceTags gathers the resource attributes (OTLP), process tags
// (Jaeger) or local endpoint (Zipkin) that name the process a span ran in:
// a caller run as several instances keeps state per process (a circuit
// breaker, a retry budget), so its spans are read per instance where the
// traces say which. Each key keeps its first non-empty value.
type instanceTags struct {
	id, uuid, pod, host, ip, pid string
}

// tag records key=v if key names the instance.
func (t *instanceTags) tag(key, v string) {
	var dst *string
	switch key {
	case "service.instance.id":
		dst = &t.id
	case "client-uuid": // Jaeger clients: one per tracer, so per process
		dst = &t.uuid
	case "k8s.pod.name":
		dst = &t.pod
	case "host.name", "hostname":
		dst = &t.host
	case "ip", "host.ip":
		dst = &t.ip
	case "process.pid":
		dst = &t.pid
	default:
		return
	}
	if *dst == "" {
		*dst = v
	}
}

// number records an integer-valued key=n (process.pid is an int
// attribute).
func (t *instanceTags) number(key string, n int64) {
	if key == "process.pid" && t.pid == "" {
		t.pid = strconv.FormatInt(n, 10)
	}
}

// name is the instance the tags name, "" for none: service.instance.id,
// else Jaeger's client-uuid (both are per process), else the pod, the host
// or the IP address, each with the process id where there is one (two
// processes on one host are two instances).
func (t *instanceTags) name() string {
	switch {
	case t.id != "":
		return t.id
	case t.uuid != "":
		return t.uuid
	}
	for _, where := range [...]string{t.pod, t.host, t.ip} {
		if where == "" {
			continue
		}
		if t.pid != "" {
			return where + "/" + t.pid
		}
		return where
	}
	return ""
}

// endpointInstance names the instance of a Zipkin span from its local
// endpoint: address and port ("" where it has no address).
func endpointInstance(ip, port string) string {
	switch {
	case ip == "":
		return ""
	case port == "" || port == "0":
		return ip
	}
	return ip + ":" + port
}

// setInstance interns name and records it as sp's instance, with a
// "too many instances" warning where the Set's table of origins is full.
func setInstance(set *Set, sp *Span, name string, w *warnings) {
	if name == "" {
		return
	}
	if !set.SetInstance(sp, set.Intern(name)) {
		w.add("too many instances", "span %s: more than %d distinct instances and samplings: its instance %q is not kept", sp.SpanID, maxOrigins-1, name)
	}
}
