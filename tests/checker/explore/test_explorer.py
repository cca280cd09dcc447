"""The explorer end to end: its HTTP API (token, host check, moves) and a real browser (Playwright driving
Debian's Chromium) clicking through a counterexample of two_phase_commit_eager to the violation."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

from lockstep.checker.explore.app import Server
from lockstep.checker.explore.session import Session
from lockstep.checker.loader import load_model
from lockstep.checker.trace import Trace

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture
def server(eager_cex):
    trace = Trace.load(str(eager_cex))
    srv = Server(Session(load_model("two_phase_commit_eager", trace.params), trace)).start()
    yield srv
    srv.stop()


def request(url: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict | str]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read().decode()
            return r.status, json.loads(text) if r.headers.get_content_type() == "application/json" else text
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_api_moves_and_protection(server):
    code, view = request(server.url + "api/state")
    assert code == 200 and view["step"] == 0 and view["trace"]["length"] == 2
    assert {a["label"] for a in view["actions"]} >= {"deliver(src=0, dst=1, msg=Prepare())", "crash(p=0)"}
    code, view = request(server.url + "api/follow", {"index": 2})
    assert code == 200 and [i["holds"] for i in view["invariants"]] == [True, False]
    assert view["chart"].count('class="lifeline"') == 3
    code, view = request(server.url + "api/back", {})
    assert code == 200 and view["step"] == 1 and view["trace"]["position"] == 1
    code, err = request(server.url + "api/step", {"index": 99})
    assert code == 409 and "no step 99" in err
    base = f"http://127.0.0.1:{server.port}/"
    assert request(base + "not-the-token/api/state")[0] == 404
    assert request(base)[0] == 404
    assert request(server.url + "api/state", headers={"Host": "attacker.example:80"})[0] == 400
    req = urllib.request.Request(server.url + "api/reset", data=b"index=1", method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 415
    nested = urllib.request.Request(server.url + "api/step", data=b"[" * 2000 + b"]" * 2000, method="POST",
                                    headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(nested, timeout=10)
    assert e.value.code == 400 and "nested more than 4 levels" in e.value.read().decode()


def test_server_listens_on_loopback_only(server):
    assert server.sock.getsockname()[0] == "127.0.0.1"


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_browser_clicks_through_the_counterexample(server, tmp_path):
    from PIL import Image
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(server.url)
            expect(page.get_by_test_id("invariant")).to_have_count(2)
            expect(page.locator("#status")).to_have_text("")
            trace_steps = page.get_by_test_id("trace-step")
            expect(trace_steps).to_have_count(3)
            page.get_by_test_id("trace-next").click()  # step 1: the RM prepares
            expect(page.locator("#trace-info")).to_contain_text("at step 1 of 2")
            expect(page.get_by_test_id("state")).to_contain_text('rm_state = "prepared"')
            page.get_by_test_id("back").click()  # and back, then by hand: the enabled step of the trace
            expect(page.get_by_test_id("path-step")).to_have_count(1)
            page.get_by_test_id("action").filter(has_text="deliver(src=0, dst=1, msg=Prepare())").click()
            expect(page.locator("#trace-info")).to_contain_text("at step 1 of 2")
            page.get_by_test_id("action").filter(has_text='timeout(p=1, timer="timeout")').click()
            expect(page.locator("#status")).to_have_text("Violation: follows_tm")
            expect(page.locator('[data-testid="invariant"][data-holds="false"]')).to_have_text("follows_tm")
            expect(page.locator("#trace-info")).to_contain_text("at step 2 of 2")
            expect(page.get_by_test_id("state")).to_contain_text('rm_state = "committed"')
            chart = page.get_by_test_id("chart")
            expect(chart.locator("g.lifeline")).to_have_count(3)
            expect(chart.locator("line.arrow.delivered")).to_have_count(1)
            expect(chart.locator("g.event.bad")).to_have_count(1)
            page.get_by_test_id("reset").click()
            page.get_by_test_id("trace-end").click()  # the jump straight to the violation
            expect(page.locator("#status")).to_have_text("Violation: follows_tm")
            shot = tmp_path / "explorer.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    img = Image.open(shot).convert("RGB")
    assert img.size[0] >= 1280 and img.size[1] >= 900
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, buttons and the chart, not a blank page
    white = max(count for count, c in colours if c == (255, 255, 255)) if any(c == (255, 255, 255) for _, c in colours) else 0
    assert white < 0.95 * img.size[0] * img.size[1]
