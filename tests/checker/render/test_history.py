"""`lockstep draw HISTORY`: a client history checked and drawn as bars per client, the window of a violation
highlighted; the page opened in Debian's Chromium (as the explorer's test does)."""

from __future__ import annotations

import json
import os
import re

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
CORPUS = "/work/shared/corpora/porcupine"

# client 0 writes 1, client 1 then writes 2, client 2 then reads 1: a stale read. Whether or not the first write
# happened, the second and the read cannot be linearized together: they are the window.
STALE = [(0, "invoke", "write", 1), (0, "ok", "write", 1), (3, "invoke", "read", None), (1, "invoke", "write", 2),
         (1, "ok", "write", 2), (3, "ok", "read", 2), (2, "invoke", "read", None), (2, "ok", "read", 1)]


def history(tmp_path, events, name="h.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"process": p, "type": t, "f": f, "key": "x", "value": v}) + "\n"
                            for p, t, f, v in events))
    return str(path)


def bars(page: str, kind: str) -> list[str]:
    """The data-id of every bar whose classes include `kind`."""
    return [i for classes, i in re.findall(r'<g class="([^"]*)" data-id="(\d+)"', page) if kind in classes.split()]


def test_draw_marks_the_window_of_a_stale_read(cli, tmp_path):
    out = tmp_path / "w.html"
    r = cli("draw", history(tmp_path, STALE), "--out", str(out))
    assert r.code == 0, r.err
    assert "model cas-register (from the operations' names" in r.out
    assert "not linearizable: the window of 2 operation(s) highlighted" in r.out
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and 'data-testid="cut"' in page and 'data-testid="window-span"' in page
    assert bars(page, "op") == ["0", "1", "2", "3"] and bars(page, "window") == ["2", "3"] and bars(page, "last") == ["3"]
    assert "client 2: read &#x27;x&#x27; -&gt; 1" in page or "client 2: read 'x' -&gt; 1" in page
    svg = tmp_path / "w.svg"
    assert cli("draw", history(tmp_path, STALE), "--out", str(svg), "-m", "register").code == 0
    assert svg.read_text().startswith('<?xml version="1.0"')


def test_draw_of_a_linearizable_history(cli, tmp_path):
    good = [e for e in STALE if e[0] != 2]
    out = tmp_path / "ok.html"
    r = cli("draw", history(tmp_path, good), "--out", str(out))
    assert r.code == 0 and "(linearizable) drawn to" in r.out
    assert bars(out.read_text(), "window") == [] and len(bars(out.read_text(), "op")) == 3


def test_draw_refusals(cli, tmp_path):
    h = history(tmp_path, STALE)
    r = cli("draw", h, "--out", str(tmp_path / "x.png"))
    assert r.code == 2 and "a history is drawn as .html or .svg" in r.err
    r = cli("draw", h, "--out", str(tmp_path / "x.html"), "--spec", "two_phase")
    assert r.code == 2 and "--spec names a trace's spec" in r.err
    r = cli("draw", history(tmp_path, [(0, "invoke", "incr", None), (0, "ok", "incr", None)], "i.jsonl"),
            "--out", str(tmp_path / "x.html"))
    assert r.code == 2 and "no built-in model has the operations incr" in r.err


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="the Porcupine corpus is not on this machine")
def test_draw_a_corpus_violation(cli, tmp_path):
    out = tmp_path / "c.html"
    r = cli("draw", os.path.join(CORPUS, "kv/c10-bad.txt"), "--out", str(out))
    assert r.code == 0 and "model kv" in r.out
    page = out.read_text()
    assert len(bars(page, "window")) >= 1 and len(bars(page, "last")) == 1


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_window_in_chromium(cli, tmp_path):
    from PIL import Image
    from playwright.sync_api import expect, sync_playwright

    out = tmp_path / "w.html"
    assert cli("draw", history(tmp_path, STALE), "--out", str(out)).code == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 500})
            page.goto(out.as_uri())
            picture = page.get_by_test_id("history")
            expect(picture.locator("g.op")).to_have_count(4)
            expect(picture.locator("g.op.window")).to_have_count(2)
            expect(picture.locator("g.op.last")).to_have_count(1)
            last = picture.locator("g.op.last rect").bounding_box()
            first = picture.locator('g.op[data-id="0"] rect').bounding_box()
            assert last["x"] > first["x"] + first["width"]  # the stale read comes after the first write completed
            fill = page.evaluate("getComputedStyle(document.querySelector('g.op.window rect')).fill")
            assert fill == "rgb(239, 154, 154)"  # the window is drawn red
            picture.locator("g.op.last rect").hover()
            expect(page.locator("#panel")).to_contain_text("client 2: read 'x' -> 1")
            shot = tmp_path / "w.png"
            page.screenshot(path=str(shot))
        finally:
            browser.close()
    img = Image.open(shot).convert("RGB")
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is not None and (239, 154, 154) in {c for _, c in colours}  # the red bars are on screen


def test_draw_of_an_unknown_verdict_marks_how_far_the_search_got(cli, tmp_path):
    """All operations overlap and reads see the writes in the opposite order: the search runs out of time."""
    n, events = 2000, []
    for i in range(n):
        events.append((i, "invoke", "read" if i % 2 else "write", None if i % 2 else i))
    for i in range(n):
        events.append((i, "ok", "read" if i % 2 else "write", n - 1 - i if i % 2 else i))
    out = tmp_path / "u.html"
    r = cli("draw", history(tmp_path, events), "--out", str(out), "--budget", "5")
    assert r.code == 0 and "unknown: where the longest linearizable prefix found ends marked" in r.out
    page = out.read_text()
    assert 'data-testid="cut"' in page and 0 < len(bars(page, "linearized")) < n
    assert len(bars(page, "op")) == 600  # the operations nearest the end of the prefix
