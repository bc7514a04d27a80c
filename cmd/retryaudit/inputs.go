package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/retryaudit/retryaudit/ingest"
)

// inputFlags are the flags of every command that reads trace files.
type inputFlags struct {
	maxDocMiB int64
}

func (f *inputFlags) bind(fs *pflag.FlagSet) {
	fs.Int64Var(&f.maxDocMiB, "max-document", 1024, "largest single document (JSON file, line or protobuf message) to hold in memory, in `MiB`")
}

func (f *inputFlags) validate() error {
	if f.maxDocMiB <= 0 {
		return usageError{fmt.Errorf("--max-document %d: want a positive size in MiB", f.maxDocMiB)}
	}
	return nil
}

// read decodes the named inputs ("-" is stdin).
func (f *inputFlags) read(ctx context.Context, io *streams, names []string) (*ingest.Set, error) {
	return ingest.ReadFiles(ctx, names, io.In, ingest.Options{MaxDocumentBytes: f.maxDocMiB << 20})
}
