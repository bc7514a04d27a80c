package main

import (
	"io/fs"
	"path/filepath"
	"testing"
)

// samplesLimit is the most the committed samples may weigh together
// (issue 11: "keeping the committed samples under 5 MB"): every file under
// samples/ but this generator, whose programs and node_modules are tools,
// not samples.
const samplesLimit = 5_000_000

// TestSamplesSize holds the samples directory under samplesLimit, so a new
// scenario that would push it over fails here rather than in review.
func TestSamplesSize(t *testing.T) {
	var total int64
	biggest := map[string]int64{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join("..", "generator") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		biggest[filepath.Dir(path)] += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 {
		t.Fatal("no sample files found under ..")
	}
	if total > samplesLimit {
		t.Errorf("samples weigh %d bytes, over the %d limit; by directory: %v", total, samplesLimit, biggest)
	}
	t.Logf("samples: %d bytes of %d", total, samplesLimit)
}
