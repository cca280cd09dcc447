"""Sequence charts and rounds grids: well-formed SVG, one lifeline per process, one arrow per delivered
message, faults marked; the draw command on counterexamples and recorded runs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from lockstep.checker.loader import load_model
from lockstep.checker.render.chart import chart_of_trace
from lockstep.checker.render.svg import svg
from lockstep.checker.trace import Trace
from lockstep.executors.actors.run import run as run_actors
from lockstep.executors.faults import parse_faults

SVG = "{http://www.w3.org/2000/svg}"


def parse(text: str) -> ET.Element:
    return ET.fromstring(text.encode())


def classes(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    """Elements `tag` whose class list contains every word of `cls`."""
    want = set(cls.split())
    return [e for e in root.iter(SVG + tag) if want <= set((e.get("class") or "").split())]


def arrows(root: ET.Element, kind: str) -> list[ET.Element]:
    """The message arrows of a kind: straight (a line) or bent round a step they do not join (a path)."""
    return classes(root, "line", f"arrow {kind}") + classes(root, "path", f"arrow {kind}")


def walk(model, choose) -> Trace:
    """A trace from the first initial state, taking at each step the first successor whose label passes
    the next test of `choose`."""
    path = [(None, model.initial_states()[0])]
    for test in choose:
        lid, nxt = next((lid, t) for lid, t in model.successors(path[-1][1]) if test(model.label(lid)))
        path.append((lid, nxt))
    return Trace.from_states(model, path)


def test_counterexample_chart(cli, tmp_path, eager_cex):
    cex = eager_cex
    out = tmp_path / "chart.svg"
    r = cli("draw", str(cex), "--out", str(out))
    assert r.code == 0, r.err
    root = parse(out.read_text())
    lifelines = classes(root, "g", "lifeline")
    assert sorted(g.get("data-pid") for g in lifelines) == ["0", "1", "2"]
    deliveries = [s for s in json.loads(cex.read_text())["states"] if s["#meta"]["action"] == "deliver"]
    assert len(arrows(root, "delivered")) == len(deliveries) == 1
    assert len(arrows(root, "in-flight")) == 2  # Prepare to RM 2 and Prepared to the TM
    bad = classes(root, "g", "event bad")
    assert len(bad) == 1 and "violates follows_tm" in bad[0].get("data-state")
    assert 'rm_state = "committed"' in bad[0].get("data-state")
    assert classes(root, "rect", "band bad")


def test_html_page_is_self_contained(cli, tmp_path, eager_cex):
    cex = eager_cex
    out = tmp_path / "chart.html"
    assert cli("draw", str(cex), "--out", str(out)).code == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<script>" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    assert "<link" not in page and "src=" not in page


def test_crash_drop_and_duplicate_are_marked():
    model = load_model("two_phase_commit", {"lossy": 1, "duplicating": 1})
    trace = walk(model, [lambda a: a.startswith("deliver(src=0, dst=1"), lambda a: a.startswith("deliver(src=0, dst=1"),
                         lambda a: a.startswith("drop(src=1, dst=0"), lambda a: a == "crash(p=0)"])
    chart = chart_of_trace(trace, model)
    root = parse(svg(chart))
    assert len(classes(root, "g", "lifeline")) == 3
    assert len(arrows(root, "delivered")) == 1 and len(arrows(root, "duplicate")) == 1
    assert len(arrows(root, "dropped")) == 1
    assert len(classes(root, "g", "event crash")) == 1
    assert [r.kind for r in chart.rows[3:]] == ["deliver", "deliver", "drop", "crash"]


def test_forged_messages_come_from_the_byzantine_process():
    model = load_model("tests/models/actor_gossip.py:GossipWithForger")
    trace = walk(model, [lambda a: a.startswith("forge(src=0, dst=1"), lambda a: a.startswith("deliver(src=0, dst=1")])
    chart = chart_of_trace(trace, model)
    root = parse(svg(chart))
    forged = arrows(root, "forged")
    assert len(forged) == 1 and "delivered" in forged[0].get("class")
    assert [g for g in classes(root, "g", "head byzantine")]
    assert chart.rows[len(chart.pids)].kind == "forge" and chart.rows[len(chart.pids)].byzantine


def test_run_chart_has_an_arrow_per_delivery(cli, tmp_path):
    path = tmp_path / "run.jsonl"
    faults = parse_faults({"crashes": [{"pid": 1, "at": 0.15, "restart": 0.35}]}, 3)
    rep = run_actors("two_phase_commit", {}, 0.8, faults, str(path), seed=1)
    events = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    out = tmp_path / "run.svg"
    r = cli("draw", str(path), "--out", str(out))
    assert r.code == 0, r.err
    root = parse(out.read_text())
    assert len(classes(root, "g", "lifeline")) == 3
    delivered = [e for e in events if e["kind"] == "message"]
    assert len(arrows(root, "delivered")) + len(arrows(root, "duplicate")) == len(delivered)
    assert len(classes(root, "g", "event crash")) == sum("killed" in n for n in rep.notes) == 1
    assert len(classes(root, "g", "event restart")) == sum(e["kind"] == "restart" for e in events)


def test_rounds_grids(cli, tmp_path):
    cex = tmp_path / "cex.json"
    assert cli("check", "d2_coloring_uncoordinated", "--quiet", "--out", str(cex)).code == 1
    out = tmp_path / "grid.svg"
    assert cli("draw", str(cex), "--out", str(out)).code == 0
    root = parse(out.read_text())
    n = json.loads(cex.read_text())["#meta"]["lockstep"]["params"]["n"]
    rounds = sum(s["#meta"]["action"] == "transmit" for s in json.loads(cex.read_text())["states"])
    assert len(classes(root, "rect", "cell")) == n * rounds
    assert len(classes(root, "rect", "cell broadcast")) >= 1
    run = tmp_path / "run.jsonl"
    assert cli("run", "d2_coloring", "--tree", "path:5", "--trace", str(run)).code == 0
    assert cli("draw", str(run), "--out", str(tmp_path / "grid.html")).code == 0
    page = (tmp_path / "grid.html").read_text()
    assert page.count('class="cell ') == 5 * sum(json.loads(x)["kind"] == "round" and json.loads(x)["pid"] == 0
                                                 for x in run.read_text().splitlines()[1:])


def test_population_run_plot(cli, tmp_path):
    run = tmp_path / "run.jsonl"
    assert cli("run", "phase_clock", "-p", "n=6", "--interactions", "600", "--seed", "2", "--trace", str(run)).code == 0
    out = tmp_path / "counts.png"
    r = cli("draw", str(run), "--out", str(out))
    assert r.code == 0 and "600 interactions" in r.out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000


@pytest.mark.parametrize("args, message", [
    (["--out", "x.txt"], "written as .svg or .html"),
    (["--out", "x.svg", "--spec", "no_such_spec"], "no_such_spec"),
])
def test_draw_refuses_bad_arguments(cli, tmp_path, eager_cex, args, message):
    r = cli("draw", str(eager_cex), *[str(tmp_path / a) if a.startswith("x.") else a for a in args])
    assert r.code == 2 and message in r.err


def test_a_trace_of_an_unregistered_spec_needs_spec(cli, tmp_path):
    model = load_model("tests/models/actor_gossip.py:GossipWithForger")
    trace = walk(model, [lambda a: a.startswith("forge")])
    path = tmp_path / "t.json"
    trace.save(str(path))
    r = cli("draw", str(path), "--out", str(tmp_path / "c.svg"))
    assert r.code == 2 and "--spec tests/models/actor_gossip.py:GossipWithForger" in r.err
    r = cli("draw", str(path), "--out", str(tmp_path / "c.svg"), "--spec", "tests/models/actor_gossip.py:GossipWithForger")
    assert r.code == 0


def test_readme_chart_is_current(cli, tmp_path, eager_cex):
    """docs/pictures/two_phase_commit_eager.svg, embedded in the README, is what `lockstep draw` makes today."""
    from pathlib import Path

    out = tmp_path / "chart.svg"
    assert cli("draw", str(eager_cex), "--out", str(out)).code == 0
    committed = Path(__file__).parents[3] / "docs" / "pictures" / "two_phase_commit_eager.svg"
    assert out.read_text() == committed.read_text(), "regenerate it with the command in the README"


# ------------------------------------------------------------------------- layout: nothing drawn over anything

TEXT_SIZES = {"label": 12, "note": 12, "msg": 11, "legend": 11}


def text_boxes(root: ET.Element) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Every text of the chart's body (not the title lines above the lifelines' heads, nor the legend below the
    chart) with the box it covers at most: 0.62 em a character (bold included), 0.8 em above the baseline, 0.25 below."""
    height = float(root.get("height"))
    out = []
    for t in root.iter(SVG + "text"):
        cls, y = t.get("class") or "", float(t.get("y"))
        if cls not in TEXT_SIZES or (cls == "legend" and (y < 70 or y > height - 40)):
            continue
        size, x, text = TEXT_SIZES[cls], float(t.get("x")), t.text or ""
        w = len(text) * size * 0.62
        left = {"start": x, "middle": x - w / 2, "end": x - w}[t.get("text-anchor") or "start"]
        out.append((text, (left, y - size * 0.8, left + w, y + size * 0.25)))
    return out


def overlap(a, b) -> bool:
    return not (a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1])


def arrow_points(e: ET.Element) -> list[tuple[float, float]]:
    """Points along an arrow: a line, or a quadratic curve `M ax,ay Q cx,cy bx,by` (self-messages are skipped)."""
    if e.tag == SVG + "line":
        a, b = (float(e.get("x1")), float(e.get("y1"))), (float(e.get("x2")), float(e.get("y2")))
        c = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    else:
        d = e.get("d")
        if "Q" not in d:
            return []
        nums = [float(v) for v in d.replace("M", " ").replace("Q", " ").replace(",", " ").split()]
        a, c, b = (nums[0], nums[1]), (nums[2], nums[3]), (nums[4], nums[5])
    return [((1 - t) ** 2 * a[0] + 2 * (1 - t) * t * c[0] + t * t * b[0],
             (1 - t) ** 2 * a[1] + 2 * (1 - t) * t * c[1] + t * t * b[1]) for t in (i / 200 for i in range(201))]


def random_walk(model, seed: int, steps: int) -> Trace:
    import random

    rng = random.Random(seed)
    path = [(None, model.initial_states()[0])]
    for _ in range(steps):
        succ = model.successors(path[-1][1])
        if not succ:
            break
        path.append(rng.choice(succ))
    return Trace.from_states(model, path)


@pytest.mark.parametrize("spec", ["bracha", "bracha_low_echo_quorum", "two_phase_commit", "chang_roberts_forward_all"])
def test_no_label_covers_another_and_no_arrow_crosses_a_step_it_does_not_join(spec):
    """Charts of random walks (broadcasts, messages in flight, several labels at one level): parsed, no two texts'
    boxes overlap, no text covers a step's dot, and no message arrow comes within a dot's radius of a step other than
    the two it joins (a broadcast from p0 to p2 bends round p1's dot rather than read as p1 forwarding it)."""
    model = load_model(spec)
    bent = 0
    for seed in range(4):
        root = parse(svg(chart_of_trace(random_walk(model, seed, 30), model)))
        boxes = text_boxes(root)
        dots = [(float(c.get("cx")), float(c.get("cy")), float(c.get("r"))) for c in root.iter(SVG + "circle")]
        for i, (text, box) in enumerate(boxes):
            assert not any(overlap(box, other) for _, other in boxes[i + 1:]), text
            assert not any(overlap(box, (x - r, y - r, x + r, y + r)) for x, y, r in dots), text
        arrows = [e for tag in ("line", "path") for e in classes(root, tag, "arrow") if "stub" not in e.get("class")]
        for e in arrows:
            points = arrow_points(e)
            ends = {points[0], points[-1]} if points else set()
            for x, y, r in dots:
                if any(abs(px - x) <= 8 and abs(py - y) <= 8 for px, py in ends):
                    continue  # a step the arrow joins
                assert all((px - x) ** 2 + (py - y) ** 2 > r * r for px, py in points), (e.get("class"), x, y)
        bent += sum(1 for e in arrows if e.tag == SVG + "path" and "Q" in e.get("d"))
    if spec.startswith("bracha"):  # its broadcasts pass other processes' steps: some arrows had to bend
        assert bent > 0
