"""Messages about the files validation makes of a user's file (one per process, their projections) name the user's
file and line: `split_traces` and `collect` record where each line goes, `Origins` follows that back."""

from __future__ import annotations

import json

from lockstep.checker.validation.origins import Origins
from lockstep.checker.validation.runtrace import collect, split_traces


def test_a_split_file_and_its_projection_name_the_users_line(tmp_path):
    """Process 1's lines of a combined file (interleaved with process 0's) split out, then a projection of that file
    keeping its second event: each is named at the combined file's line, whatever made file a message names."""
    combined = tmp_path / "run.jsonl"
    rows = [{"kind": "traces", "spec": "psmr", "processes": 2, "notes": []},
            {"pid": 0, "node": 0, "seq": 1, "action": "a"}, {"pid": 1, "node": 1, "seq": 1, "action": "b"},
            {"pid": 0, "node": 0, "seq": 2, "action": "c"}, {"pid": 1, "node": 1, "seq": 2, "action": "d"},
            {"kind": "end", "events": 4}]
    combined.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "split").mkdir()
    got = split_traces(str(combined), str(tmp_path / "split"))
    one = got.paths[1]
    assert [json.loads(x)["action"] for x in open(one)] == ["b", "d"]
    origins = got.origins
    assert origins.locate(one, 2) == (str(combined), 5)
    projected = str(tmp_path / "projected.jsonl")
    origins.add(projected, one, [None, 2])  # its header, then process 1's second line
    assert origins.relocate(f"event 1 ({projected}:2) and its log {projected}") == \
        f"event 1 ({combined}:5) and its log {combined}"
    assert origins.relocate(f"{got.paths[0]}:2: bad") == f"{combined}:4: bad"
    assert origins.relocate(f"{tmp_path}/other.jsonl:2") == f"{tmp_path}/other.jsonl:2"  # not a made file: as it is


def test_collect_records_where_each_process_line_goes_and_unkept_logs_are_labelled(tmp_path):
    """`collect` writes process 0's log, then process 1's: their lines are named at the collected file's lines; a
    process's log that is not kept is named as that process's log."""
    logs = {}
    for pid in (0, 1):
        logs[pid] = str(tmp_path / f"trace-{pid}.jsonl")
        with open(logs[pid], "w") as f:
            f.write(json.dumps({"schema": "lockstep-trace/1", "node": pid}) + "\n\n")  # a blank line: no line of out
            f.write(json.dumps({"node": pid, "seq": 1, "action": "x"}) + "\n")
    out = str(tmp_path / "run.jsonl")
    origins = Origins()
    for pid, path in logs.items():
        origins.label(path, f"process {pid}'s log")
    assert collect(logs, out, "psmr", origins=origins) == 4
    assert origins.relocate(f"at {logs[1]}:3 and {logs[0]}:1") == f"at {out}:5 and {out}:2"
    assert origins.relocate(f"{logs[1]}:2") == out  # the blank line went nowhere: the file, without a line
    alone = Origins()
    alone.label(logs[1], "process 1's log")
    assert alone.relocate(f"event 1 ({logs[1]}:3)") == "event 1 (process 1's log, line 3)"
