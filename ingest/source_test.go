package ingest

import (
	"bufio"
	"bytes"
	"context"
)

// testSource wraps b as a decompressed input named name, for tests and fuzz
// targets that call one decoder directly.
func testSource(name string, b []byte, maxDoc int64) *source {
	lim := Limits{}.withDefaults()
	cr := &countingReader{r: bytes.NewReader(b)}
	return &source{ctx: context.Background(), name: name, cr: cr, raw: cr, r: bufio.NewReaderSize(cr, 64<<10), maxDoc: maxDoc, lim: &lim}
}
