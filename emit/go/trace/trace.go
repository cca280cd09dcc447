// Package trace writes a node's log in Lockstep's event schema (lockstep-trace/1): JSON Lines, one
// file per node, each event with the node, its sequence number, its vector clock, the action, its
// arguments and the variables the node chooses to log. `lockstep validate LOG... --spec SPEC
// [--map MAPPING.py]` checks the logs of every node against a Lockstep spec. Standard library only.
package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// Schema is the version of the event schema this package writes.
const Schema = "lockstep-trace/1"

// Clock is a vector clock: node -> number of that node's events that happen before (or are) an event.
type Clock map[string]int

// Log is one node's log. It is safe for concurrent use: events are numbered in the order Event is called.
type Log struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	node   string
	vc     Clock
	closed bool
}

// Open creates the log of `node` at `path` (an existing file is replaced) and writes its header.
func Open(path, node string) (*Log, error) {
	if node == "" {
		return nil, errors.New("trace: a node needs a non-empty id")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	l := &Log{f: f, w: bufio.NewWriter(f), node: node, vc: Clock{node: 0}}
	if err := l.write(map[string]any{"schema": Schema, "node": node}); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// Seq is the sequence number of the node's last event (0 before the first).
func (l *Log) Seq() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.vc[l.node]
}

// Clock is the vector clock of the node's last event: carry it on the messages that event sends.
func (l *Log) Clock() Clock {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.vc.copy()
}

// Event logs an event. `after` are the clocks of events elsewhere that happen before it (those of the
// messages it received). It returns the event's vector clock.
func (l *Log) Event(action string, args, vars map[string]any, after ...Clock) (Clock, error) {
	if action == "" {
		return nil, errors.New("trace: an event needs an action")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("trace: the log of node %s is closed", l.node)
	}
	for _, c := range after {
		for k, v := range c {
			if k != l.node && v > l.vc[k] {
				l.vc[k] = v
			}
		}
	}
	l.vc[l.node]++
	e := map[string]any{"node": l.node, "seq": l.vc[l.node], "action": action, "vc": l.vc.copy()}
	if len(args) > 0 {
		e["args"] = args
	}
	if len(vars) > 0 {
		e["vars"] = vars
	}
	if err := l.write(e); err != nil {
		return nil, err
	}
	return l.vc.copy(), nil
}

// Flush writes what is buffered to the file.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Flush()
}

// Close writes the end record (the log is complete) and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.write(map[string]any{"node": l.node, "end": true})
	if ferr := l.w.Flush(); err == nil {
		err = ferr
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *Log) write(v map[string]any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("trace: an event's values have no JSON form: %w", err)
	}
	if _, err := l.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return nil
}

func (c Clock) copy() Clock {
	out := make(Clock, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}
