// Command porcupine_driver times Porcupine's CheckEvents on histories given as JSON, one history per request,
// so that bench/linearizability.py can time Porcupine and Lockstep in turn on the same histories.
//
// Input (argv[1]): {"histories": [{"model": "etcd" | "kv", "events": [[client, kind, id, op, a, b, key, value,
// out_ok, out_exists, out_value, out_unknown, out_str], ...]}]}, kind 0 = call, 1 = return. The models are the
// sequential specifications of Porcupine's test suite: a CAS register whose nil is -1000000 (etcd) and a
// key-value map of strings partitioned by key, hashed with FNV-1a (kv).
//
// Requests (stdin): one history index per line. Reply (stdout): "index ok|illegal nanoseconds", the time of
// CheckEvents alone.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

type registerCall struct {
	op         uint8 // 0 read, 1 write, 2 cas
	arg1, arg2 int
}

type registerReturn struct {
	ok, exists bool
	value      int
	unknown    bool
}

const nilValue = -1000000

var casRegister = porcupine.Model{
	Init: func() interface{} { return nilValue },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st, in, out := state.(int), input.(registerCall), output.(registerReturn)
		switch in.op {
		case 0:
			return out.unknown || (!out.exists && st == nilValue) || (out.exists && out.value == st), state
		case 1:
			return true, in.arg1
		default:
			next := st
			if in.arg1 == st {
				next = in.arg2
			}
			return out.unknown || (in.arg1 == st) == out.ok, next
		}
	},
}

type kvCall struct {
	op         uint8 // 0 get, 1 put, 2 append
	key, value string
}

type kvReturn struct{ value string }

var keyValue = porcupine.Model{
	PartitionEvent: func(history []porcupine.Event) [][]porcupine.Event {
		byKey := map[string][]porcupine.Event{}
		keyOf := map[int]string{}
		for _, e := range history {
			key := keyOf[e.Id]
			if e.Kind == porcupine.CallEvent {
				key = e.Value.(kvCall).key
				keyOf[e.Id] = key
			}
			byKey[key] = append(byKey[key], e)
		}
		var parts [][]porcupine.Event
		for _, p := range byKey {
			parts = append(parts, p)
		}
		return parts
	},
	Init: func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st, in, out := state.(string), input.(kvCall), output.(kvReturn)
		switch in.op {
		case 0:
			return out.value == st, state
		case 1:
			return true, in.value
		default:
			return true, st + in.value
		}
	},
	Hash: func(state interface{}) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
}

type rawHistory struct {
	Model  string              `json:"model"`
	Events [][]json.RawMessage `json:"events"`
}

func field[T any](raw []json.RawMessage, i int) T {
	var v T
	if err := json.Unmarshal(raw[i], &v); err != nil {
		fmt.Fprintf(os.Stderr, "field %d: %v\n", i, err)
		os.Exit(2)
	}
	return v
}

func events(h rawHistory) []porcupine.Event {
	out := make([]porcupine.Event, 0, len(h.Events))
	for _, r := range h.Events {
		e := porcupine.Event{ClientId: field[int](r, 0), Id: field[int](r, 2)}
		call := field[int](r, 1) == 0
		if !call {
			e.Kind = porcupine.ReturnEvent
		}
		switch {
		case h.Model == "etcd" && call:
			e.Value = registerCall{uint8(field[int](r, 3)), field[int](r, 4), field[int](r, 5)}
		case h.Model == "etcd":
			e.Value = registerReturn{field[bool](r, 8), field[bool](r, 9), field[int](r, 10), field[bool](r, 11)}
		case call:
			e.Value = kvCall{uint8(field[int](r, 3)), field[string](r, 6), field[string](r, 7)}
		default:
			e.Value = kvReturn{field[string](r, 12)}
		}
		out = append(out, e)
	}
	return out
}

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var input struct {
		Histories []rawHistory `json:"histories"`
	}
	if err := json.Unmarshal(data, &input); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	histories := make([][]porcupine.Event, len(input.Histories))
	models := make([]porcupine.Model, len(input.Histories))
	for i, h := range input.Histories {
		histories[i] = events(h)
		models[i] = casRegister
		if h.Model == "kv" {
			models[i] = keyValue
		}
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		i, err := strconv.Atoi(strings.TrimSpace(in.Text()))
		if err != nil || i < 0 || i >= len(histories) {
			fmt.Fprintf(os.Stderr, "bad request %q\n", in.Text())
			os.Exit(2)
		}
		start := time.Now()
		ok := porcupine.CheckEvents(models[i], histories[i])
		elapsed := time.Since(start)
		verdict := "illegal"
		if ok {
			verdict = "ok"
		}
		fmt.Printf("%d %s %d\n", i, verdict, elapsed.Nanoseconds())
	}
}
