package trace

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func lines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	s := bufio.NewScanner(f)
	for s.Scan() {
		var m map[string]any
		if err := json.Unmarshal(s.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON object per line: %q: %v", s.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestEventsAreNumberedAndClocksMerged(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(filepath.Join(dir, "a.jsonl"), "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(filepath.Join(dir, "b.jsonl"), "b")
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := a.Event("send", map[string]any{"v": 1}, map[string]any{"sent": 1})
	if _, err := b.Event("receive", map[string]any{"v": 1}, nil, sent); err != nil {
		t.Fatal(err)
	}
	got, _ := b.Event("ack", nil, map[string]any{"got": 1})
	if want := (Clock{"a": 1, "b": 2}); !reflect.DeepEqual(got, want) {
		t.Fatalf("clock %v, want %v", got, want)
	}
	a.Close()
	b.Close()
	bl := lines(t, filepath.Join(dir, "b.jsonl"))
	if bl[0]["schema"] != Schema || bl[0]["node"] != "b" {
		t.Fatalf("header %v", bl[0])
	}
	if bl[1]["seq"] != float64(1) || bl[2]["seq"] != float64(2) || bl[1]["action"] != "receive" {
		t.Fatalf("events %v", bl[1:])
	}
	if vc := bl[1]["vc"].(map[string]any); vc["a"] != float64(1) || vc["b"] != float64(1) {
		t.Fatalf("the receive's clock %v", vc)
	}
	if last := bl[len(bl)-1]; last["end"] != true {
		t.Fatalf("no end record: %v", last)
	}
	if _, err := b.Event("late", nil, nil); err == nil {
		t.Fatal("an event after Close was accepted")
	}
}

func TestValuesWithoutJSONFormAreRefused(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "n.jsonl"), "n")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Event("x", map[string]any{"f": func() {}}, nil); err == nil {
		t.Fatal("a function value was written")
	}
}
