// Command retryaudit finds which layers of a service graph retry, and how,
// from exported distributed traces, and replays degradations under
// alternative retry policies.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
