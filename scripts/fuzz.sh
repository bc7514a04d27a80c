#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (make fuzz).
# Go's fuzzer can end a short run with "context deadline exceeded" when the
# deadline falls while it is still inside one input (a slow input on a busy
# machine, or minimisation): such a run wrote no failing input, so it is run
# once more; a second such end, or any other failure, fails.
# Minimisation is off (-fuzzminimizetime 0): the fuzzer minimises every new
# interesting input before it goes on, which in a run of a few seconds is
# nearly all the run (FuzzDecodePartial: 117 inputs run in 20 s with it,
# 61,742 in 15 s without); a failing input is still written, unminimised.
# Usage: scripts/fuzz.sh FUZZTIME
set -euo pipefail
fuzztime=${1:?fuzz time, e.g. 4s}
go=${GO:-go}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $($go list ./...); do
	for t in $($go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $t"
		for try in 1 2; do
			if $go test -run '^$' -fuzz "^$t\$" -fuzztime "$fuzztime" -fuzzminimizetime 0 "$pkg" >"$log" 2>&1; then
				break
			fi
			if [ "$try" = 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
				echo "  the fuzzer stopped inside an input at its deadline (no failing input): once more"
				continue
			fi
			cat "$log"
			exit 1
		done
	done
done
