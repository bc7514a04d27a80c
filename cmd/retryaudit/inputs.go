package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/retryaudit/retryaudit/ingest"
)

// inputFlags are the flags of every command that reads trace files: the
// bounds on what reading may hold in memory (README, "Limits").
type inputFlags struct {
	maxDocMiB int64
	maxSpans  int
	maxAttrs  int
}

func (f *inputFlags) bind(fs *pflag.FlagSet) {
	fs.Int64Var(&f.maxDocMiB, "max-document", ingest.DefaultMaxDocumentBytes>>20, "largest single document (JSON file, line or protobuf message) to hold in memory, in `MiB`")
	fs.IntVar(&f.maxSpans, "max-spans", ingest.DefaultMaxSpans, "most spans to read over all inputs; more is an error")
	fs.IntVar(&f.maxAttrs, "max-attributes", ingest.DefaultMaxAttributes, "most attributes (Jaeger: tags) of one span, resource, event or link; more is an error")
}

func (f *inputFlags) validate() error {
	if f.maxDocMiB <= 0 || f.maxDocMiB > 1<<20 {
		return usageError{fmt.Errorf("--max-document %d: want a size in MiB from 1 to 1048576", f.maxDocMiB)}
	}
	if f.maxSpans <= 0 {
		return usageError{fmt.Errorf("--max-spans %d: want a positive number of spans, e.g. --max-spans 5000000", f.maxSpans)}
	}
	if f.maxAttrs <= 0 {
		return usageError{fmt.Errorf("--max-attributes %d: want a positive number, e.g. --max-attributes 5000", f.maxAttrs)}
	}
	return nil
}

// read decodes the named inputs ("-" is stdin). progress, when not nil, is
// told how many bytes have been read so far over all inputs.
func (f *inputFlags) read(ctx context.Context, io *streams, names []string, progress func(read int64)) (*ingest.Set, error) {
	opts := ingest.Options{MaxDocumentBytes: f.maxDocMiB << 20, Limits: ingest.Limits{MaxSpans: f.maxSpans, MaxAttributes: f.maxAttrs}}
	if progress != nil {
		var before, current int64
		var last string
		opts.Progress = func(name string, read, _ int64) {
			if name != last {
				before += current
				last, current = name, 0
			}
			current = read
			progress(before + current)
		}
	}
	return ingest.ReadFiles(ctx, names, io.In, opts)
}

// inputBytes is the total size of the named regular files (directories
// and stdin count 0), the length of an ingest progress bar.
func inputBytes(names []string) int64 {
	var total int64
	for _, name := range names {
		if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
			total += st.Size()
		}
	}
	return total
}
