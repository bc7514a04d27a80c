package main

import (
	"bufio"
	"os"
	"strconv"

	"github.com/retryaudit/retryaudit/samples/synth"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	f, _ := os.Create(os.Args[2])
	w := bufio.NewWriter(f)
	if err := synth.StreamHTTP(w, n, 11, synth.WriteProtoStream); err != nil {
		panic(err)
	}
	w.Flush()
	f.Close()
}
