package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run this binary's run() as the command
// "retryaudit" inside scripts and BenchmarkIngestVsPdata run its baseline
// as the command "pdata-unmarshal", and makes the binary a measuring
// launcher when TestBombMemory asks for one.
func TestMain(m *testing.M) {
	if out := os.Getenv(rssLauncherEnv); out != "" {
		os.Exit(launchMeasured(out, os.Args[1:]))
	}
	testscript.Main(m, map[string]func(){
		"retryaudit":      func() { os.Exit(cli()) },
		"pdata-unmarshal": pdataUnmarshal,
	})
}

// TestScripts runs the end-to-end scripts in testdata/script. $SAMPLES and
// $REALTRACES point at the committed samples and the shared reference
// traces (scripts that need the latter skip without it).
func TestScripts(t *testing.T) {
	samples, _ := filepath.Abs(filepath.Join("..", "..", "samples"))
	real, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "realtraces"))
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("SAMPLES", samples)
			env.Setenv("REALTRACES", real)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "realtraces" {
				_, err := os.Stat(real)
				return err == nil, nil
			}
			return false, nil
		},
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") != "",
	})
}
