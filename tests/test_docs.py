"""The manual cannot rot: the README is a front page (the quickstart's two commands as they are, a spec that
checks as it says), `mkdocs build --strict` builds docs/, the generated pages (command-line reference, protocol
list) are current, every Python block compiles and every excerpt is still in the file it quotes, every `lockstep`
command in the README and docs/ parses with today's options, and every name of the actor language is documented.
The commands that need no file are run, and the self-contained Python blocks executed, with the slow tests."""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys
import textwrap

import pytest

from lockstep.checker import manual
from lockstep.checker.cli import build_parser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md", *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                          recursive=True))]
QUICKSTART = ["python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/lockstep check two_phase --param rm=5",
              "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest -q"]
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*([.=:][A-Za-z0-9_.]*)?$|\[|\]|\.\.\.|^<|^\|$")


def read(page: str) -> str:
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def python_blocks(page: str) -> list[tuple[int, str]]:
    """(line, code) of every fenced Python block of a page."""
    text = read(page)
    return [(text[:m.start()].count("\n") + 1, textwrap.dedent(m.group(2)))
            for m in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S)]


def code_lines(page: str) -> list[tuple[int, str]]:
    """(line, text) of every line inside a code block: fenced, or indented by four spaces after a blank line."""
    out, fence, indented, blank = [], False, False, True
    for i, line in enumerate(read(page).splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            out.append((i, line))
            continue
        indented = line.startswith("    ") and (indented or blank)
        if indented:
            out.append((i, line[4:]))
        blank = not line.strip()
    return out


def commands(page: str) -> list[tuple[int, list[str]]]:
    """(line, argv) of every `lockstep` command in a page's code, without its comment; a usage synopsis (SPEC, FILE,
    [--option], ...) is no command and is left out."""
    out = []
    for i, line in code_lines(page):
        text = line.strip().removeprefix("$ ")
        if "lockstep " not in text or text.startswith(("#", "python -m lockstep.", "pip ")):
            continue
        try:
            words = shlex.split(text, comments=True)
        except ValueError:
            continue
        segment: list[str] = []
        for w in [*words, "&&"]:
            if w in ("&&", "||", "|", ";"):
                if segment and (segment[0] == "lockstep" or segment[0].endswith("/lockstep")):
                    argv = segment[1:]
                    if argv and not any(PLACEHOLDER.search(a) for a in argv):
                        out.append((i, argv))
                segment = []
            else:
                segment.append(w)
    return out


ALL_COMMANDS = [(page, i, argv) for page in PAGES for i, argv in commands(page)]


def test_the_readme_is_a_front_page_with_the_quickstart_as_it_was():
    text = read("README.md")
    assert len(text.splitlines()) <= 250
    assert [line.strip() for line in text.splitlines() if line.strip() in QUICKSTART] == QUICKSTART
    for page in re.findall(r"\]\((docs/[^)#]+)", text):
        assert os.path.exists(os.path.join(ROOT, page)), page


def test_the_readme_example_is_checked_as_it_says(cli, tmp_path):
    (line, code), *_ = python_blocks("README.md")
    (tmp_path / "diehard.py").write_text(code)
    r = cli("check", str(tmp_path / "diehard.py") + ":DieHard", "--quiet")
    assert r.code == 1 and "invariant not_solved is violated" in r.out and "Counterexample (6 steps)" in r.out
    assert 25 <= len(code.splitlines()) <= 45


def test_the_site_builds_strictly(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    assert (tmp_path / "site" / "specs" / "actors" / "index.html").exists()


@pytest.mark.parametrize("path", sorted(manual.PAGES))
def test_the_generated_pages_are_current(path):
    assert read(os.path.join("docs", path)) == manual.PAGES[path](), "regenerate: python -m lockstep.checker.manual"


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_compiles_and_every_excerpt_is_in_its_file(page):
    for line, code in python_blocks(page):
        compile(code, f"{page}:{line}", "exec")
        first = code.splitlines()[0]
        if first.startswith("# from "):
            source = read(first.removeprefix("# from ").split()[0])
            for text in code.splitlines()[1:]:
                bare = text.split("  #")[0].strip()
                assert bare in ("", "...") or bare in source, f"{page}:{line}: {bare!r} is not in the file"


@pytest.mark.parametrize("page, line, argv", ALL_COMMANDS, ids=[f"{p}:{i}" for p, i, _ in ALL_COMMANDS])
def test_every_command_parses_with_todays_options(page, line, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for a in argv:  # an output file's directory, as in the repository
        if "/" in a and not a.startswith(("/", "-")) and os.path.isdir(os.path.join(ROOT, os.path.dirname(a))):
            os.makedirs(os.path.dirname(a), exist_ok=True)
    try:
        build_parser(argv).parse_args(argv)
    except SystemExit as e:
        pytest.fail(f"{page}:{line}: `lockstep {shlex.join(argv)}` no longer parses (exit {e.code})")


def test_the_pages_have_commands_to_test():
    assert len(ALL_COMMANDS) >= 100


def test_every_name_of_the_actor_language_is_documented():
    import lockstep.specs.lang.actors as actors

    page = read("docs/specs/actors.md")
    assert [n for n in actors.__all__ if not re.search(rf"`@?{n}\b", page)] == []


SELF_CONTAINED = [(p, i, argv) for p, i, argv in ALL_COMMANDS
                  if argv[0] in ("check", "simulate", "prove", "list", "analyze") and not any(
                      a.endswith((".json", ".jsonl", ".py", ".dot", ".svg", ".html", ".png")) or "/" in a for a in argv)
                  and "--cluster" not in argv]


@pytest.mark.slow
@pytest.mark.parametrize("page, line, argv", SELF_CONTAINED, ids=[f"{p}:{i}" for p, i, _ in SELF_CONTAINED])
def test_every_command_that_needs_no_file_runs(page, line, argv, tmp_path):
    """Run as a user would; its verdict may be anything but a usage error, an internal error or a spec error."""
    r = subprocess.run([sys.executable, "-m", "lockstep", *argv, "--quiet"] if argv[0] in ("check", "simulate", "prove")
                       else [sys.executable, "-m", "lockstep", *argv], cwd=tmp_path, capture_output=True, text=True,
                       timeout=3600)
    assert r.returncode in (0, 1, 3), f"{page}:{line}: {r.stderr[-2000:]}"


RUNNABLE = ["README.md", "docs/getting-started.md", "docs/python-api.md", "docs/tutorial.md", "docs/specs/language.md"]
"""The pages whose Python blocks, excerpts aside, are complete programs (the others' sketches are compiled above)."""


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE)
def test_every_self_contained_python_block_runs(page, tmp_path):
    """A page's blocks, in order, in one namespace (excerpts, which quote a file, are checked above)."""
    code = "\n".join(c for _, c in python_blocks(page) if not c.startswith("# from "))
    if not code:
        return
    (tmp_path / "page.py").write_text('if __name__ == "__main__":\n' + textwrap.indent(code, "    ") + "\n")
    r = subprocess.run([sys.executable, "page.py"], cwd=tmp_path, capture_output=True, text=True, timeout=3600,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0, f"{page}: {r.stderr[-3000:]}"
