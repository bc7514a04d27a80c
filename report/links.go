package report

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/retryaudit/retryaudit/graph"
)

// Placeholders a trace-URL template may hold.
const (
	traceIDPlaceholder = "{trace_id}"
	spanIDPlaceholder  = "{span_id}"
)

// CheckTraceURL validates a trace-URL template (--trace-url): an absolute
// http or https URL holding {trace_id}, and optionally {span_id}, e.g.
// http://jaeger:16686/trace/{trace_id} or a Grafana Explore URL.
func CheckTraceURL(tmpl string) error {
	if !strings.Contains(tmpl, traceIDPlaceholder) {
		return fmt.Errorf("trace URL %q holds no %s", tmpl, traceIDPlaceholder)
	}
	u, err := url.Parse(strings.NewReplacer(traceIDPlaceholder, "0", spanIDPlaceholder, "0").Replace(tmpl))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("trace URL %q: want an absolute http or https URL", tmpl)
	}
	return nil
}

// traceLink fills the template with a trace id and the first of its span
// ids, or returns "" when there is no template. The ids are hex, taken from
// the traces: anything else is escaped so that it cannot leave its place
// in the URL.
func traceLink(tmpl, traceID string, spanIDs []string) string {
	if tmpl == "" || traceID == "" {
		return ""
	}
	span := ""
	if len(spanIDs) > 0 {
		span = spanIDs[0]
	}
	return strings.NewReplacer(traceIDPlaceholder, url.QueryEscape(traceID), spanIDPlaceholder, url.QueryEscape(span)).Replace(tmpl)
}

// mdLinkURL makes a URL safe inside a Markdown link's parentheses.
func mdLinkURL(u string) string {
	return strings.NewReplacer("(", "%28", ")", "%29", " ", "%20", "<", "%3C", ">", "%3E", "\n", "", "\r", "").Replace(u)
}

// shortID is the first 8 hex digits of an id, as Jaeger's UI shows it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// mdExampleLinks renders example traces as Markdown links, " (traces: [4bf92f35](…), …)",
// when the writer carries a trace URL; "" otherwise (the JSON always
// carries the ids).
func mdExampleLinks(w io.Writer, examples []graph.Example) string {
	tmpl := optionsOf(w).TraceURL
	if tmpl == "" || len(examples) == 0 {
		return ""
	}
	var links []string
	for _, ex := range examples {
		if u := traceLink(tmpl, ex.TraceID, ex.SpanIDs); u != "" {
			links = append(links, "["+mdEscape(shortID(ex.TraceID))+"]("+mdLinkURL(u)+")")
		}
	}
	if len(links) == 0 {
		return ""
	}
	return " (traces: " + strings.Join(links, ", ") + ")"
}

// edgeExampleLinks lists, under the edges table, each edge's example
// traces as links, when the writer carries a trace URL.
func edgeExampleLinks(w io.Writer, edges []graph.Edge) {
	if optionsOf(w).TraceURL == "" {
		return
	}
	first := true
	for _, e := range edges {
		links := mdExampleLinks(w, e.Examples)
		if links == "" {
			continue
		}
		if first {
			fmt.Fprint(w, "\nExample traces:\n\n")
			first = false
		}
		fmt.Fprintf(w, "- %s → %s %s%s\n", mdEscape(display(e.Caller)), mdEscape(display(e.Callee)), mdEscape(display(e.Operation)), links)
	}
}
