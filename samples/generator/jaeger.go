package main

import (
	"encoding/json"
	"io"
	"sort"
	"strconv"
	"strings"

	model "github.com/jaegertracing/jaeger-idl/model/v1"
	jaegertranslator "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/translator/jaeger"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The Jaeger UI / query API JSON shape (what the UI's "Download JSON" and
// GET /api/traces write), declared here rather than imported from Jaeger.
type (
	jaegerResponse struct {
		Data   []jaegerTrace `json:"data"`
		Total  int           `json:"total"`
		Limit  int           `json:"limit"`
		Offset int           `json:"offset"`
		Errors []string      `json:"errors"`
	}
	jaegerTrace struct {
		TraceID   string                   `json:"traceID"`
		Spans     []jaegerSpan             `json:"spans"`
		Processes map[string]jaegerProcess `json:"processes"`
		Warnings  []string                 `json:"warnings"`
	}
	jaegerSpan struct {
		TraceID       string      `json:"traceID"`
		SpanID        string      `json:"spanID"`
		Flags         uint32      `json:"flags,omitempty"`
		OperationName string      `json:"operationName"`
		References    []jaegerRef `json:"references"`
		StartTime     uint64      `json:"startTime"` // µs since the epoch
		Duration      uint64      `json:"duration"`  // µs
		Tags          []jaegerKV  `json:"tags"`
		Logs          []jaegerLog `json:"logs"`
		ProcessID     string      `json:"processID"`
		Warnings      []string    `json:"warnings"`
		process       *model.Process
	}
	jaegerRef struct {
		RefType string `json:"refType"` // CHILD_OF or FOLLOWS_FROM
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	}
	jaegerKV struct {
		Key   string `json:"key"`
		Type  string `json:"type"` // string, bool, int64, float64 or binary
		Value any    `json:"value"`
	}
	jaegerLog struct {
		Timestamp uint64     `json:"timestamp"`
		Fields    []jaegerKV `json:"fields"`
	}
	jaegerProcess struct {
		ServiceName string     `json:"serviceName"`
		Tags        []jaegerKV `json:"tags"`
	}
)

// writeJaeger converts the received requests with the collector-contrib
// translator into Jaeger model batches, and renders those as one Jaeger UI
// trace per trace id, ordered by start time.
func writeJaeger(path string, requests []ptrace.Traces) error {
	byTrace := map[string]*jaegerTrace{}
	var order []*jaegerTrace
	for _, td := range requests {
		for _, batch := range jaegertranslator.ProtoFromTraces(td) {
			for _, sp := range batch.Spans {
				js := convertSpan(sp)
				js.process = batch.Process // the translator sets the process per batch
				t := byTrace[js.TraceID]
				if t == nil {
					t = &jaegerTrace{TraceID: js.TraceID}
					byTrace[js.TraceID] = t
					order = append(order, t)
				}
				t.Spans = append(t.Spans, js)
			}
		}
	}
	resp := jaegerResponse{Data: make([]jaegerTrace, 0, len(order))}
	for _, t := range order {
		sort.SliceStable(t.Spans, func(i, j int) bool { return t.Spans[i].StartTime < t.Spans[j].StartTime })
		assignProcesses(t)
		resp.Data = append(resp.Data, *t)
	}
	sort.SliceStable(resp.Data, func(i, j int) bool {
		return resp.Data[i].Spans[0].StartTime < resp.Data[j].Spans[0].StartTime
	})
	return writeFiles(map[string]func(io.Writer) error{path: func(w io.Writer) error {
		return json.NewEncoder(w).Encode(resp)
	}})
}

// assignProcesses numbers the trace's distinct processes p1, p2, … in order
// of first appearance, as Jaeger's query service does.
func assignProcesses(t *jaegerTrace) {
	t.Processes = map[string]jaegerProcess{}
	var seen []*model.Process
	for i := range t.Spans {
		sp := &t.Spans[i]
		id := ""
		for k, p := range seen {
			if p.Equal(sp.process) {
				id = processID(k)
				break
			}
		}
		if id == "" {
			seen = append(seen, sp.process)
			id = processID(len(seen) - 1)
			t.Processes[id] = jaegerProcess{ServiceName: sp.process.ServiceName, Tags: convertKVs(sp.process.Tags)}
		}
		sp.ProcessID = id
	}
}

func processID(k int) string { return "p" + strconv.Itoa(k+1) }

func convertSpan(sp *model.Span) jaegerSpan {
	js := jaegerSpan{
		TraceID:       sp.TraceID.String(),
		SpanID:        sp.SpanID.String(),
		Flags:         uint32(sp.Flags),
		OperationName: sp.OperationName,
		References:    make([]jaegerRef, 0, len(sp.References)),
		StartTime:     model.TimeAsEpochMicroseconds(sp.StartTime),
		Duration:      model.DurationAsMicroseconds(sp.Duration),
		Tags:          convertKVs(sp.Tags),
		Logs:          make([]jaegerLog, 0, len(sp.Logs)),
		Warnings:      sp.Warnings,
	}
	for _, ref := range sp.References {
		refType := "CHILD_OF"
		if ref.RefType == model.SpanRefType_FOLLOWS_FROM {
			refType = "FOLLOWS_FROM"
		}
		js.References = append(js.References, jaegerRef{RefType: refType, TraceID: ref.TraceID.String(), SpanID: ref.SpanID.String()})
	}
	for _, l := range sp.Logs {
		js.Logs = append(js.Logs, jaegerLog{Timestamp: model.TimeAsEpochMicroseconds(l.Timestamp), Fields: convertKVs(l.Fields)})
	}
	return js
}

// convertKVs renders typed tags; values keep their JSON type (binary becomes
// base64 through encoding/json's []byte encoding).
func convertKVs(kvs []model.KeyValue) []jaegerKV {
	out := make([]jaegerKV, len(kvs))
	for i := range kvs {
		kv := &kvs[i]
		out[i] = jaegerKV{Key: kv.Key, Type: strings.ToLower(kv.VType.String()), Value: kv.Value()}
	}
	return out
}
