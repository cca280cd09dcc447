// Command example writes the logs of a sender and a receiver (nodes 0 and 1) in Lockstep's event schema:
// node 0 sends 1 and 2 over a channel of capacity 1 and then confirms; node 1 receives them. Lockstep's test
// validates them against tests/models/relay_log.py.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	trace "lockstep/emit/go/trace"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: example DIR")
		os.Exit(2)
	}
	a, err := trace.Open(filepath.Join(os.Args[1], "n0.jsonl"), "0")
	check(err)
	b, err := trace.Open(filepath.Join(os.Args[1], "n1.jsonl"), "1")
	check(err)
	for v := 1; v <= 2; v++ {
		sent, err := a.Event("send", map[string]any{"v": v}, map[string]any{"sent": v})
		check(err)
		_, err = b.Event("receive", map[string]any{"v": v}, map[string]any{"got": v}, sent)
		check(err)
	}
	_, err = a.Event("confirm", nil, map[string]any{"confirmed": 2})
	check(err)
	check(a.Close())
	check(b.Close())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
