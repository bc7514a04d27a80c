package policyfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Duration is a time span in a policy file: a Go duration ("250ms",
// "1m30s") or a protobuf JSON duration ("0.1s"); 0 needs no unit.
type Duration time.Duration

// Seconds returns the duration in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// String formats the duration as Go does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes the duration as protobuf JSON does ("0.25s"), for
// the gRPC service config.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(protoDuration(d.Seconds())) }

// UnmarshalYAML reads a duration scalar.
func (d *Duration) UnmarshalYAML(n ast.Node) error {
	v, err := pfParseDuration(n)
	if err != nil {
		return &yaml.SyntaxError{Message: err.Error(), Token: n.GetToken()}
	}
	*d = v
	return nil
}

// pfParseDuration reads a duration from a string scalar (or an integer 0).
func pfParseDuration(n ast.Node) (Duration, error) {
	var s string
	switch v := n.(type) {
	case *ast.StringNode:
		s = v.Value
	case *ast.IntegerNode:
		s = v.GetToken().Value
	case *ast.FloatNode:
		return 0, fmt.Errorf("%s is not a duration: give a unit, e.g. %ss or %sms", v.GetToken().Value, v.GetToken().Value, v.GetToken().Value)
	default:
		return 0, fmt.Errorf("want a duration such as 250ms or 0.1s, got %s", pfDescribe(n))
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want a Go or protobuf JSON duration such as 250ms, 1m30s or 0.1s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s is negative: want a duration ≥ 0", s)
	}
	return Duration(d), nil
}

// PolicyFileError is an error in a policy file: a YAML error from
// goccy/go-yaml, or a semantic one about one key.
type PolicyFileError struct {
	File string
	// Path is the key the error is about, e.g. edges[1].retryPolicy.maxAttempts
	// ("" for YAML syntax errors).
	Path string
	// Line and Column (1-based) locate it in the parsed source; 0 when the
	// file was not parsed from source or the key cannot be located.
	Line, Column int
	Msg          string

	formatted string // goccy/go-yaml's "[line:col] message" and source excerpt with a caret
	err       error  // the goccy/go-yaml error, if any
}

// Error returns the file name, the position, the message and, when the
// position is known, the source lines with a caret under the error.
func (e *PolicyFileError) Error() string {
	name := e.File
	if name == "" {
		name = "policy file"
	}
	if e.formatted != "" {
		return name + ": " + e.formatted
	}
	if e.Path != "" {
		return name + ": " + e.Path + ": " + e.Msg
	}
	return name + ": " + e.Msg
}

// Unwrap returns the goccy/go-yaml error, if any.
func (e *PolicyFileError) Unwrap() error { return e.err }

// pfSource is the parsed source of a policy file.
type pfSource struct {
	name    string
	root    ast.Node
	anchors map[string]ast.Node
	visits  int // nodes checked, bounded against alias bombs
	// lenient files (the projects' own) may hold keys retryaudit does not
	// read: they are listed in ignored instead of refused.
	lenient bool
	ignored []string
}

// pfMaxVisits bounds how many nodes the type check visits (aliases expand).
const pfMaxVisits = 100_000

// pfPath is a key path: string keys and int sequence indices.
type pfPath []any

func (p pfPath) with(ks ...any) pfPath { return append(slices.Clip(p), ks...) }

func (p pfPath) String() string {
	var b strings.Builder
	for _, k := range p {
		switch k := k.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, k)
		}
	}
	return b.String()
}

// yamlError wraps a goccy/go-yaml error.
func (s *pfSource) yamlError(err error) error {
	e := &PolicyFileError{File: s.name, Msg: err.Error(), formatted: yaml.FormatError(err, false, true), err: err}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
		}
	}
	return e
}

// errorAt builds an error about path located at tk.
func (s *pfSource) errorAt(tk *token.Token, path pfPath, msg string) *PolicyFileError {
	e := &PolicyFileError{File: s.name, Path: path.String(), Msg: msg}
	text := msg
	if e.Path != "" {
		text = e.Path + ": " + msg
	}
	if tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
		e.formatted = yaml.FormatErrorWithToken(text, tk, false, true)
	}
	return e
}

// resolve follows anchors, aliases and tags to the node they stand for.
func (s *pfSource) resolve(n ast.Node) ast.Node {
	for range 64 {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			n = s.anchors[v.Value.GetToken().Value]
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
	return nil
}

// pairs returns a mapping's key-value pairs, merge keys included.
func (s *pfSource) pairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch v := s.resolve(n).(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	}
	return nil, false
}

func pfKey(k ast.MapKeyNode) string {
	if k == nil {
		return ""
	}
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if tk := k.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

// locate returns the token to point at for path: the value of a scalar key,
// the key of a mapping or sequence, or the nearest ancestor found.
func (s *pfSource) locate(path pfPath) *token.Token {
	if s == nil || s.root == nil {
		return nil
	}
	n := s.root
	tk := n.GetToken()
	for _, k := range path {
		var next ast.Node
		var keyTok *token.Token
		switch k := k.(type) {
		case string:
			mv := s.find(n, k, 0)
			if mv != nil {
				next, keyTok = mv.Value, mv.Key.GetToken()
			}
		case int:
			if seq, ok := s.resolve(n).(*ast.SequenceNode); ok && k >= 0 && k < len(seq.Values) {
				next = seq.Values[k]
			}
		}
		if next == nil {
			return tk
		}
		n = next
		switch r := s.resolve(next).(type) {
		case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode, nil:
			if keyTok != nil {
				tk = keyTok
			} else if r != nil {
				tk = r.GetToken()
			}
		default:
			tk = next.GetToken()
		}
	}
	return tk
}

// find returns the pair with key k in mapping n, looking into merge keys.
func (s *pfSource) find(n ast.Node, k string, depth int) *ast.MappingValueNode {
	if depth > 8 {
		return nil
	}
	ps, _ := s.pairs(n)
	for _, mv := range ps {
		if mv.Key != nil && !mv.Key.IsMergeKey() && pfKey(mv.Key) == k {
			return mv
		}
	}
	for _, mv := range ps {
		if mv.Key == nil || !mv.Key.IsMergeKey() {
			continue
		}
		srcs := []ast.Node{mv.Value}
		if seq, ok := s.resolve(mv.Value).(*ast.SequenceNode); ok {
			srcs = seq.Values
		}
		for _, m := range srcs {
			if found := s.find(m, k, depth+1); found != nil {
				return found
			}
		}
	}
	return nil
}

var pfDurationType = reflect.TypeFor[Duration]()

// check verifies that node n can be read into type t without the
// conversions goccy/go-yaml allows (3.5 or "3" into an int, 3 into a
// string), reading durations as it goes, and without unknown keys (which
// goccy/go-yaml's DisallowUnknownField misses when they are not strings).
func (s *pfSource) check(t reflect.Type, n ast.Node, path pfPath, e *pfErrs, depth int) {
	s.visits++
	if s.visits > pfMaxVisits || depth > 64 {
		if s.visits == pfMaxVisits+1 || depth == 65 {
			e.add(path, "too deeply nested or too many aliases")
		}
		return
	}
	if n == nil {
		return
	}
	r := s.resolve(n)
	if r == nil {
		return
	}
	if _, ok := r.(*ast.NullNode); ok {
		return
	}
	if t == pfDurationType {
		if _, err := pfParseDuration(r); err != nil {
			e.addAt(r.GetToken(), path, err.Error())
		}
		return
	}
	bad := func(want string) { e.addAt(r.GetToken(), path, fmt.Sprintf("want %s, got %s", want, pfDescribe(r))) }
	switch t.Kind() {
	case reflect.Pointer:
		s.check(t.Elem(), n, path, e, depth+1)
	case reflect.Struct:
		ps, ok := s.pairs(r)
		if !ok {
			bad("a mapping")
			return
		}
		fields := pfFields(t)
		for _, mv := range ps {
			if mv.Key != nil && mv.Key.IsMergeKey() {
				srcs := []ast.Node{mv.Value}
				if seq, ok := s.resolve(mv.Value).(*ast.SequenceNode); ok {
					srcs = seq.Values
				}
				for _, m := range srcs {
					s.check(t, m, path, e, depth+1)
				}
				continue
			}
			k := pfKey(mv.Key)
			ft, ok := fields[k]
			if !ok && s.lenient {
				s.ignored = append(s.ignored, path.with(k).String())
				continue
			}
			if !ok {
				var tk *token.Token
				if mv.Key != nil {
					tk = mv.Key.GetToken()
				}
				hint := ""
				if near := pfNearest(k, fields); near != "" {
					hint = fmt.Sprintf(" (%s?)", near)
				}
				e.addAt(tk, path, fmt.Sprintf("unknown field %q%s: want %s", k, hint, pfFieldList(fields)))
				continue
			}
			s.check(ft, mv.Value, path.with(k), e, depth+1)
		}
	case reflect.Slice:
		seq, ok := r.(*ast.SequenceNode)
		if !ok {
			bad("a list")
			return
		}
		for i, v := range seq.Values {
			s.check(t.Elem(), v, path.with(i), e, depth+1)
		}
	case reflect.String:
		switch r.(type) {
		case *ast.StringNode, *ast.LiteralNode:
		default:
			bad("a string (quote it)")
		}
	case reflect.Int:
		if _, ok := r.(*ast.IntegerNode); !ok {
			bad("a whole number")
		}
	case reflect.Float64:
		switch r.(type) {
		case *ast.IntegerNode, *ast.FloatNode:
		default:
			bad("a finite number")
		}
	case reflect.Bool:
		if _, ok := r.(*ast.BoolNode); !ok {
			bad("true or false")
		}
	}
}

// pfFields maps a struct's YAML keys to field types, inline fields included.
func pfFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			for k, v := range pfFields(sf.Type) {
				m[k] = v
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		m[name] = sf.Type
	}
	return m
}

// pfFieldList lists a block's keys for error messages.
func pfFieldList(fields map[string]reflect.Type) string {
	keys := slices.Sorted(maps.Keys(fields))
	return strings.Join(keys, ", ")
}

// pfNearest returns the key closest to k if it is a likely typo of it.
func pfNearest(k string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if d := pfEditDistance(strings.ToLower(k), strings.ToLower(f)); d < bestD {
			best, bestD = f, d
		}
	}
	return best
}

// pfEditDistance is the Levenshtein distance between a and b (in bytes;
// keys are ASCII).
func pfEditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// pfDescribe names a node's kind and value for error messages.
func pfDescribe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		return strconv.Quote(v.Value)
	case *ast.LiteralNode:
		return "a block string"
	case *ast.NanNode, *ast.InfinityNode:
		return v.GetToken().Value
	case nil:
		return "nothing"
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return n.Type().String()
}

// pfErrs collects errors, locating them in the source when there is one.
type pfErrs struct {
	src  *pfSource // nil for a file built in code
	list []error
	seen map[string]bool
}

const pfMaxErrors = 20

func (e *pfErrs) add(path pfPath, format string, args ...any) {
	var tk *token.Token
	if e.src != nil {
		tk = e.src.locate(path)
	}
	e.addAt(tk, path, fmt.Sprintf(format, args...))
}

func (e *pfErrs) addAt(tk *token.Token, path pfPath, msg string) {
	key := path.String() + "\x00" + msg
	if e.seen[key] || len(e.list) >= pfMaxErrors {
		return
	}
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	e.seen[key] = true
	name := ""
	if e.src != nil {
		name = e.src.name
	}
	src := &pfSource{name: name}
	e.list = append(e.list, src.errorAt(tk, path, msg))
}

func (e *pfErrs) err() error {
	switch len(e.list) {
	case 0:
		return nil
	case 1:
		return e.list[0]
	}
	return errors.Join(e.list...)
}

// pfMarshalString writes a string plain when YAML reads it back as the same
// string, and double-quoted otherwise: goccy/go-yaml v1.19.2 writes some
// strings plain that then read back as something else (".inf", ".nan",
// "? a").
func pfMarshalString(s string) ([]byte, error) {
	if pfPlainSafe(s) {
		return []byte(s), nil
	}
	// Go's quoting of valid UTF-8 uses only escapes YAML's double-quoted
	// style shares (\n, \t, \", \\, \xNN, \uNNNN, \UNNNNNNNN).
	return []byte(strconv.Quote(s)), nil
}

// pfPlainSafe reports whether s reads back as s when written plain as a
// mapping value.
func pfPlainSafe(s string) bool {
	if s == "" || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return false
	}
	file, err := parser.ParseBytes([]byte("k: "+s+"\n"), 0)
	if err != nil || len(file.Docs) != 1 || file.Docs[0] == nil {
		return false
	}
	m, ok := file.Docs[0].Body.(*ast.MappingNode)
	if !ok || len(m.Values) != 1 {
		return false
	}
	v, ok := m.Values[0].Value.(*ast.StringNode)
	return ok && v.Value == s && v.Token != nil && v.Token.Type == token.StringType
}

// Limits checked before the YAML library sees a file: its parser recurses
// on nesting and builds every node, so a small file nested deeply enough
// would take a lot of memory and stack.
const (
	pfMaxBytes = 8 << 20
	pfMaxDepth = 64
)

// pfPrecheck refuses a file larger than pfMaxBytes or nested deeper than
// pfMaxDepth, counting flow brackets outside quotes and comments, and
// block levels by indentation (a sequence entry "- " opens a level too).
func pfPrecheck(name string, data []byte) error {
	if len(data) > pfMaxBytes {
		return &PolicyFileError{File: name, Msg: fmt.Sprintf("%d bytes: a policy file is at most %d", len(data), pfMaxBytes)}
	}
	flow := 0
	var indents []int // open block levels' indentation
	line, col := 1, 0
	tooDeep := func() error {
		return &PolicyFileError{File: name, Line: line, Column: col + 1,
			Msg: fmt.Sprintf("line %d: nested more than %d levels deep", line, pfMaxDepth)}
	}
	for i := 0; i < len(data); {
		// Start of a line: measure the indentation and any "- " entries.
		ind := 0
		for i < len(data) && data[i] == ' ' {
			i++
			ind++
		}
		blank := i >= len(data) || data[i] == '\n' || data[i] == '\r' || data[i] == '#'
		if !blank && flow == 0 {
			for len(indents) > 0 && indents[len(indents)-1] >= ind {
				indents = indents[:len(indents)-1]
			}
			indents = append(indents, ind)
			for i+1 < len(data) && data[i] == '-' && (data[i+1] == ' ' || data[i+1] == '\t') {
				i += 2
				ind += 2
				for i < len(data) && data[i] == ' ' {
					i++
					ind++
				}
				indents = append(indents, ind)
				if len(indents) > pfMaxDepth {
					return tooDeep()
				}
			}
		}
		col = ind
		if len(indents)+flow > pfMaxDepth {
			return tooDeep()
		}
		// The rest of the line.
		var quote byte
		for ; i < len(data) && data[i] != '\n'; i++ {
			c := data[i]
			col++
			switch {
			case quote != 0:
				if c == '\\' && quote == '"' {
					i++
				} else if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
				for i < len(data) && data[i] != '\n' {
					i++
				}
				i--
			case c == '[' || c == '{':
				flow++
				if len(indents)+flow > pfMaxDepth {
					return tooDeep()
				}
			case c == ']' || c == '}':
				flow = max(0, flow-1)
			}
		}
		i++
		line++
	}
	return nil
}

// pfParse checks a file's size and depth, parses it and indexes its
// anchors. docs are its non-empty documents.
func pfParse(name string, data []byte) (*pfSource, []ast.Node, error) {
	src := &pfSource{name: name}
	if err := pfPrecheck(name, data); err != nil {
		return nil, nil, err
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, nil, src.yamlError(err)
	}
	var docs []ast.Node
	src.anchors = map[string]ast.Node{}
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if _, ok := doc.Body.(*ast.CommentNode); ok {
			continue
		}
		docs = append(docs, doc.Body)
		for _, n := range ast.Filter(ast.AnchorType, doc.Body) {
			if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
				src.anchors[a.Name.GetToken().Value] = a.Value
			}
		}
	}
	return src, docs, nil
}

// decode type-checks doc against out's type (a pointer) and reads it into
// out; errors are located in doc.
func (s *pfSource) decode(doc ast.Node, out any) error {
	s.root = doc
	e := &pfErrs{src: s}
	s.check(reflect.TypeOf(out).Elem(), doc, nil, e, 0)
	if err := e.err(); err != nil {
		return err
	}
	var opts []yaml.DecodeOption
	if !s.lenient {
		opts = append(opts, yaml.DisallowUnknownField())
	}
	if err := yaml.NodeToValue(doc, out, opts...); err != nil {
		return s.yamlError(err)
	}
	return nil
}
