package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// ErrNoSpans means the input is a trace format but holds no span (an empty
// query result, a trace that was not found).
var ErrNoSpans = errors.New("holds no spans")

// Options bound what one input may cost. The zero value takes the defaults.
type Options struct {
	// MaxDocumentBytes bounds a document that must be held whole (a single
	// JSON or protobuf message, one JSON line, one length-prefixed message)
	// after decompression. Default 128 MiB: a library unmarshals such a
	// document whole, at two to three times its size.
	MaxDocumentBytes int64
	// Limits bound what decoding holds; see Limits. Decode applies them to
	// the Set it fills.
	Limits Limits
	// Progress, when set, is called with the number of compressed bytes read
	// so far from the current input and its total size (0 for stdin).
	Progress func(name string, read, total int64)
}

// DefaultMaxDocumentBytes is the default of Options.MaxDocumentBytes.
const DefaultMaxDocumentBytes = 128 << 20

func (o Options) maxDoc() int64 {
	if o.MaxDocumentBytes > 0 {
		return o.MaxDocumentBytes
	}
	return DefaultMaxDocumentBytes
}

// ReadFiles decodes every named input into one Set. A name may be a file, a
// directory (read recursively, in lexical order, skipping hidden entries), or
// "-" for stdin. The first failing input stops the read and its error names
// the input and position. Inside a directory, files whose content is no
// trace format at all (ErrUnrecognised) are listed in Set.Skipped instead.
func ReadFiles(ctx context.Context, names []string, stdin io.Reader, opts Options) (*Set, error) {
	set := NewSet()
	if err := set.ReadFiles(ctx, names, stdin, opts); err != nil {
		return nil, err
	}
	return set, nil
}

// ReadFiles decodes the named inputs, as the function ReadFiles does, into
// s, beside what it holds already.
func (s *Set) ReadFiles(ctx context.Context, names []string, stdin io.Reader, opts Options) error {
	for _, name := range names {
		if name == "-" {
			if err := Decode(ctx, s, "-", stdin, opts); err != nil {
				return err
			}
			continue
		}
		files, err := expand(name)
		if err != nil {
			return err
		}
		for i, f := range files {
			s.pendingBytes = totalSize(files[i+1:])
			err := readFile(ctx, s, f, opts)
			if errors.Is(err, ErrUnrecognised) && f != name {
				// A directory may hold READMEs and scripts beside its
				// traces: skip what is no trace format, and say so.
				s.Skipped = append(s.Skipped, Skip{Name: f, Reason: err.Error()})
				continue
			}
			if err != nil {
				return err
			}
		}
	}
	s.pendingBytes = 0
	return nil
}

// totalSize is the sum of the sizes of the named files.
func totalSize(files []string) int64 {
	var n int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// expand lists the regular files under name (name itself if it is a file).
func expand(name string) ([]string, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("ingest %s: %w", name, err)
	}
	if !st.IsDir() {
		return []string{name}, nil
	}
	var files []string
	err = filepath.WalkDir(name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != name && len(d.Name()) > 0 && d.Name()[0] == '.' {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ingest %s: %w", name, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("ingest %s: directory holds no files", name)
	}
	sort.Strings(files)
	return files, nil
}

func readFile(ctx context.Context, set *Set, name string, opts Options) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("ingest %s: %w", name, err)
	}
	defer f.Close()
	var r io.Reader = f
	var total int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		total = st.Size()
	}
	if opts.Progress != nil {
		r = &progressReader{r: f, name: name, total: total, fn: opts.Progress}
	}
	return decode(ctx, set, name, r, total, opts)
}

type progressReader struct {
	r           io.Reader
	name        string
	read, total int64
	fn          func(string, int64, int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	p.fn(p.name, p.read, p.total)
	return n, err
}

// Decode detects the format of r from its content (never its name),
// decompresses gzip or zstd transparently, and appends its spans to set with
// an Input record. name is used in errors and in the Input.
func Decode(ctx context.Context, set *Set, name string, r io.Reader, opts Options) error {
	var size int64
	if sr, ok := r.(interface{ Size() int64 }); ok { // bytes.Reader, strings.Reader
		size = sr.Size()
	}
	return decode(ctx, set, name, r, size, opts)
}

// decode is Decode of an input of size bytes as stored (0 when unknown),
// which lets the decoders size the span table once.
func decode(ctx context.Context, set *Set, name string, r io.Reader, size int64, opts Options) error {
	in := Input{Name: name, First: len(set.Spans)}
	firstLink := len(set.Links)
	set.lim = opts.Limits.withDefaults()
	raw := &countingReader{r: &ctxReader{ctx: ctx, r: r}}
	src := &source{name: name, maxDoc: opts.maxDoc(), ctx: ctx, lim: &set.lim, raw: raw, rawSize: size, first: in.First}
	br := bufio.NewReaderSize(raw, 64<<10)
	head, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return src.errAt(0, fmt.Errorf("gzip: %w", err))
		}
		defer zr.Close()
		in.Compression = "gzip"
		br = bufio.NewReaderSize(zr, 64<<10)
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderMaxMemory(uint64(src.maxDoc)), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return src.errAt(0, fmt.Errorf("zstd: %w", err))
		}
		defer zr.Close()
		in.Compression = "zstd"
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	src.compression = in.Compression
	src.cr = &countingReader{r: br}
	src.r = bufio.NewReaderSize(src.cr, 64<<10)
	if bom, _ := src.r.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		src.r.Discard(3)
	}

	format, err := sniff(src)
	if err != nil {
		return err
	}
	in.Format = format
	var w warnings
	switch format {
	case FormatOTLPProto:
		err = decodeOTLPProto(src, set, &w)
	case FormatOTLPProtoStream:
		err = decodeOTLPProtoStream(src, set, &w)
	case FormatOTLPJSON, FormatOTLPJSONLines, FormatJaegerAPIv3, FormatTempoJSON:
		err = decodeOTLPJSONStream(src, set, &w, format)
	case FormatZipkinJSON:
		err = decodeZipkinJSON(src, set, &w)
	case FormatJaegerJSON:
		err = decodeJaegerJSON(src, set, &w)
	case FormatJaegerProto:
		err = decodeJaegerProto(src, set, &w)
	}
	if err != nil {
		set.Spans, set.Links = set.Spans[:in.First], set.Links[:firstLink]
		return err
	}
	if format == FormatOTLPJSONLines && src.docs == 1 {
		in.Format = FormatOTLPJSON // one request on one line: a plain document
	}
	in.Count = len(set.Spans) - in.First
	in.Bytes = src.cr.n
	if in.Count == 0 {
		return src.errAt(src.cr.n, fmt.Errorf("%s input %w%s", format, ErrNoSpans, w.summary()))
	}
	in.Warnings = w.list
	set.Inputs = append(set.Inputs, in)
	return nil
}

// summary renders collected warnings for an error message.
func (w *warnings) summary() string {
	if len(w.list) == 0 {
		return ""
	}
	s := " ("
	for i, x := range w.list {
		if i > 0 {
			s += "; "
		}
		s += x.String()
	}
	return s + ")"
}

// source is one decompressed input being decoded.
type source struct {
	ctx    context.Context
	name   string
	r      *bufio.Reader
	cr     *countingReader
	maxDoc int64
	lim    *Limits
	// compression is "gzip" or "zstd" when offsets count decompressed bytes.
	compression string
	docs        int // documents (lines, messages) decoded so far

	raw      *countingReader // the input as stored (compressed or not)
	rawSize  int64           // its size, 0 when unknown
	first    int             // index in Set.Spans of its first span
	presized bool
}

// presizeAfter is how much of an input presize reads before it estimates:
// enough for the read-ahead of the buffers and decompressors not to skew
// the spans-per-byte ratio. (A variable so that tests can reach it with
// small compressed inputs.)
var presizeAfter int64 = 4 << 20

// presize is called after each message of a large input is added, with
// how many stored bytes had been read then: once a few MiB are, it
// reserves the span table for the whole input (and the files after it in
// the same directory) at the density seen so far, plus 5%, so that ten
// million spans are stored without doubling's copies and slack.
func (s *source) presize(set *Set, read int64) {
	if s.presized || s.rawSize <= 2*presizeAfter || read < presizeAfter {
		return
	}
	s.presized = true
	got := len(set.Spans) - s.first
	rest := s.rawSize - read + set.pendingBytes
	if got == 0 || rest <= 0 {
		return
	}
	set.reserve(int(float64(got) * float64(rest) / float64(read) * 1.05))
}

// offset is the byte offset (after decompression) of the next unread byte.
func (s *source) offset() int64 { return s.cr.n - int64(s.r.Buffered()) }

func (s *source) errAt(off int64, err error) error {
	if s.compression != "" {
		// Past the end of a compressed file, and said so.
		return fmt.Errorf("ingest %s: offset %d (after %s decompression): %w", s.name, off, s.compression, err)
	}
	return fmt.Errorf("ingest %s: offset %d: %w", s.name, off, err)
}

func (s *source) errLine(line int, err error) error {
	return fmt.Errorf("ingest %s: line %d: %w", s.name, line, err)
}

// atEnd reports whether nothing but white space is left to read, looking
// no further than the read buffer (past it, it says false).
func (s *source) atEnd() bool {
	b, err := s.r.Peek(s.r.Size())
	return err != nil && len(bytes.TrimLeft(b, " \t\r\n")) == 0
}

// nextLineIsDocument reports whether the next non-blank line, as far as
// the read buffer shows it, is a JSON document on its own.
func (s *source) nextLineIsDocument() bool {
	b, _ := s.r.Peek(s.r.Size())
	b = bytes.TrimLeft(b, " \t\r\n")
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// readAll reads the rest of the input, bounded by maxDoc.
func (s *source) readAll() ([]byte, error) {
	start := s.offset()
	b, err := io.ReadAll(io.LimitReader(s.r, s.maxDoc+1))
	if err != nil {
		return nil, s.errAt(start+int64(len(b)), err)
	}
	if int64(len(b)) > s.maxDoc {
		return nil, s.errAt(start, fmt.Errorf("document exceeds %d bytes after decompression", s.maxDoc))
	}
	return b, nil
}

// readN reads exactly n bytes, bounded by maxDoc, into buf (reallocated
// when too small) and returns them.
func (s *source) readN(buf []byte, n int64) ([]byte, error) {
	start := s.offset()
	if n > s.maxDoc {
		return nil, s.errAt(start, fmt.Errorf("message of %d bytes exceeds the %d byte limit", n, s.maxDoc))
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	b := buf[:n]
	got, err := io.ReadFull(s.r, b)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, s.errAt(start+int64(got), fmt.Errorf("truncated: message needs %d bytes, input has %d", n, got))
		}
		return nil, s.errAt(start+int64(got), err)
	}
	return b, nil
}

// lines calls fn with each non-blank line and its 1-based number. A line
// longer than maxDoc is an error.
func (s *source) lines(fn func(line []byte, n int, off int64) error) error {
	var buf []byte
	for n := 1; ; n++ {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		off := s.offset()
		buf = buf[:0]
		for {
			chunk, err := s.r.ReadSlice('\n')
			buf = append(buf, chunk...)
			if int64(len(buf)) > s.maxDoc {
				return s.errLine(n, fmt.Errorf("line exceeds %d bytes", s.maxDoc))
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if len(bytes.TrimSpace(buf)) > 0 {
					s.docs++
					if ferr := fn(buf, n, off); ferr != nil {
						return ferr
					}
				}
				return nil
			}
			if err != nil {
				return s.errLine(n, err)
			}
			break
		}
		if len(bytes.TrimSpace(buf)) == 0 {
			continue
		}
		s.docs++
		if err := fn(buf, n, off); err != nil {
			return err
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// ctxReader fails reads once its context is done, so that a cancelled
// command stops reading however its decoder reads (a whole document, a
// line, a message).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}
