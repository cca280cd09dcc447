"""Files read and written for the user cannot be redirected by another user of the machine: inputs are regular files
read up to a limit, outputs replace their target and never write through another user's link, and private
directories (the cache of compiled code) are checked as ssh's StrictModes checks them and then used by descriptor."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from lockstep.checker import safeio
from lockstep.checker.errors import UsageError
from lockstep.checker.linearizability.models import ModelError, load_model
from lockstep.checker.validation.conformance.mapping import load_mapping

STRANGER = 65534  # another user's uid (nobody); the tests run as root, so ownership is set, not assumed


@pytest.fixture
def victim(tmp_path):
    """A file a planted link points at (root's, in a directory of its own)."""
    path = tmp_path / "root-owned" / "passwd"
    path.parent.mkdir()
    path.write_text("root:x:0:0\n")
    return path


def test_special_files_are_refused_as_inputs_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: opening it for reading would block without O_NONBLOCK
    for path, what in (("/dev/zero", "a character device"), (str(fifo), "a FIFO"), (str(tmp_path), "a directory")):
        with pytest.raises(OSError, match=f"it is {what}, not a regular file"):
            safeio.read_bytes(path, 100)


def test_inputs_are_limited_by_bytes_read(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x" * 101)
    assert safeio.read_bytes(str(f), 101) == b"x" * 101
    with pytest.raises(OSError, match="more than the limit of 100 bytes for a trace"):
        safeio.read_bytes(str(f), 100, "trace")


def test_names_from_data_are_not_followed_through_links(tmp_path, victim):
    os.symlink(victim, tmp_path / "manifest.json")
    with pytest.raises(OSError, match="symbolic link"):
        safeio.read_bytes(str(tmp_path / "manifest.json"), 1000, follow=False)
    assert safeio.read_bytes(str(tmp_path / "manifest.json"), 1000) == victim.read_bytes()  # a name the user gave


def test_an_output_through_another_users_link_is_refused(tmp_path, victim):
    """The attack: another user plants a link at the output's name, pointing at a file of root's."""
    link = tmp_path / "out.json"
    os.symlink(victim, link)
    os.lchown(link, STRANGER, STRANGER)
    for attempt in (lambda: safeio.write_text(str(link), "pwned"), lambda: safeio.check_output(str(link)),
                    lambda: safeio.create_fresh(str(link))):
        with pytest.raises(OSError, match=r"symbolic link owned by another user \(uid 65534\)"):
            attempt()
    assert victim.read_text() == "root:x:0:0\n" and os.path.islink(link)


def test_a_link_swapped_in_while_the_output_is_written_is_replaced(tmp_path, victim):
    """A link planted after the check (while the file is being written) is replaced by the rename, not followed."""
    out = tmp_path / "out.json"
    with safeio.replacing(str(out)) as f:
        f.write("mine")
        os.symlink(victim, out)
        os.lchown(out, STRANGER, STRANGER)
    assert not os.path.islink(out) and out.read_text() == "mine" and victim.read_text() == "root:x:0:0\n"
    assert sorted(os.listdir(tmp_path)) == ["out.json", "root-owned"]


def test_a_hard_link_at_the_output_is_replaced_not_truncated(tmp_path, victim):
    os.link(victim, tmp_path / "log.jsonl")
    with safeio.create_fresh(str(tmp_path / "log.jsonl")) as f:
        f.write("event\n")
    assert victim.read_text() == "root:x:0:0\n" and (tmp_path / "log.jsonl").read_text() == "event\n"


def test_outputs_the_user_owns_are_written(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    target.chmod(0o600)
    os.symlink(target, tmp_path / "mine")  # the user's own link is followed
    safeio.write_text(str(tmp_path / "mine"), "new")
    assert target.read_text() == "new" and os.stat(target).st_mode & 0o777 == 0o600 and os.path.islink(tmp_path / "mine")
    safeio.write_text("/dev/null", "discarded")  # root's device: written in place, not replaced
    with open(tmp_path / "stdout.txt", "w") as out:  # `--out /dev/stdout > stdout.txt`: added after what it holds
        out.write("printed\n")
        out.flush()
        safeio.write_text(f"/proc/self/fd/{out.fileno()}", "saved\n")
    assert (tmp_path / "stdout.txt").read_text() == "printed\nsaved\n"
    os.remove(tmp_path / "stdout.txt")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    with pytest.raises(OSError, match="it is a directory; name a file to write"):
        safeio.write_text(str(tmp_path), "x")
    with pytest.raises(ValueError):
        with safeio.replacing(str(tmp_path / "half.json")) as f:
            f.write("half")
            raise ValueError("the writer failed")
    assert sorted(os.listdir(tmp_path)) == ["mine", "real.json"]  # nothing half-written left behind


def test_files_a_run_makes_for_itself_are_new(tmp_path, victim):
    os.symlink(victim, tmp_path / "process-0.jsonl")
    with pytest.raises(FileExistsError):
        safeio.create_new(str(tmp_path / "process-0.jsonl"))
    with safeio.create_new(str(tmp_path / "process-1.jsonl")) as f:
        f.write("x")
    assert os.stat(tmp_path / "process-1.jsonl").st_mode & 0o777 == 0o600
    os.symlink(victim, tmp_path / "restored.jsonl")
    with pytest.raises(OSError):
        safeio.open_append(str(tmp_path / "restored.jsonl"))
    assert victim.read_text() == "root:x:0:0\n"


@pytest.mark.parametrize("setup, path, why", [
    ("foreign", "theirs", "is owned by uid 65534, not by you"),
    ("foreign", "theirs/cache", "belongs to another user (uid 65534)"),
    ("open", "open/cache", "may be written by other users (mode 0777) and is not sticky"),
    ("link", "link/cache", "symbolic link owned by another user (uid 65534)"),
    ("writable", "writable", "may be written by other users (mode 0775)"),
])
def test_private_directories_refuse_what_another_user_could_change(tmp_path, setup, path, why):
    if setup == "foreign":
        (tmp_path / "theirs").mkdir()
        os.chown(tmp_path / "theirs", STRANGER, STRANGER)
    elif setup == "open":
        (tmp_path / "open").mkdir(mode=0o777)
        os.chmod(tmp_path / "open", 0o777)
    elif setup == "link":
        (tmp_path / "mine").mkdir()
        os.symlink(tmp_path / "mine", tmp_path / "link")
        os.lchown(tmp_path / "link", STRANGER, STRANGER)
    else:
        (tmp_path / "writable").mkdir()
        os.chmod(tmp_path / "writable", 0o775)
    with pytest.raises(OSError, match=re.escape(why)):
        safeio.private_directory(str(tmp_path / path))
    assert not (tmp_path / "mine" / "cache").exists()


def test_private_directories_are_made_0700_and_may_sit_under_a_sticky_shared_one(tmp_path):
    (tmp_path / "tmp").mkdir()
    os.chmod(tmp_path / "tmp", 0o1777)
    os.symlink(tmp_path / "tmp", tmp_path / "mylink")  # the user's (root's) own link is followed
    fd = safeio.private_directory(str(tmp_path / "mylink" / "a" / "b"))
    try:
        assert os.readlink(f"/proc/self/fd/{fd}") == str(tmp_path / "tmp" / "a" / "b")
        assert os.stat(tmp_path / "tmp" / "a" / "b").st_mode & 0o777 == 0o700
    finally:
        os.close(fd)


def _population_kernels(cache: str) -> tuple[list[str], str]:
    """A fresh process's population simulation with the kernel cache at `cache`: the population kernels then in the
    cache, and the run's final configuration."""
    code = ("from lockstep.checker.probabilistic.batched import Simulator\n"
            "from lockstep.specs.phase_clock import PhaseClock\n"
            "p = PhaseClock(n=500)\nsim = Simulator(p, p.start_configurations('spread_out')[0], seed=4)\n"
            "sim.run(20000)\nprint(sim.config())\n")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "LOCKSTEP_CACHE": cache}, capture_output=True,
                          text=True, check=True)
    assert proc.stderr == ""  # compiled, not the Python loops
    kernels = os.path.join(cache, "kernels")
    built = sorted(f for f in os.listdir(kernels) if f.startswith("lockstep_population_")) if os.path.isdir(kernels) \
        else []
    return built, proc.stdout.strip()


def test_population_kernels_are_cached_only_in_the_private_cache(tmp_path):
    built, first = _population_kernels(str(tmp_path / "cache"))
    assert len(built) == 1 and built[0].endswith(".so")
    os.unlink(tmp_path / "cache" / "kernels" / built[0])
    os.chmod(tmp_path, 0o777)  # the cache's parent is now writable by anyone: built for the run only, never cached
    try:
        assert _population_kernels(str(tmp_path / "cache")) == ([], first)
    finally:
        os.chmod(tmp_path, 0o700)


SPEC = ("from lockstep.specs.lang import If, Int, Spec, Var, action\n\n\n"
        "class Counter(Spec):\n    x = Var(Int(0, 3), init=0)\n\n"
        "    @action\n    def inc(s):\n        s.x = If(s.x < 3, s.x + 1, 0)\n")


@pytest.mark.parametrize("setup, why", [
    ("foreign file", "belongs to another user (uid 65534), who could change the spec file's code"),
    ("foreign directory", "theirs belongs to another user (uid 65534)"),
    ("open directory", "may be written by other users (mode 0777)"),
    ("group-writable file", "spec.py may be written by other users (mode 0664)"),
    ("link to a foreign file", "belongs to another user (uid 65534)"),
])
def test_code_another_user_could_change_is_not_loaded(tmp_path, cli, setup, why):
    """A spec file (or --map mapping, or linearizability model) is run only if no other user can change it."""
    here = tmp_path / ("theirs" if setup == "foreign directory" else "open" if setup == "open directory" else "mine")
    here.mkdir()
    spec = here / "spec.py"
    spec.write_text(SPEC + f"\nopen({str(tmp_path / 'ran')!r}, 'w').write('ran')\n")
    if setup == "foreign file":
        os.chown(spec, STRANGER, STRANGER)
    elif setup == "foreign directory":
        os.chown(here, STRANGER, STRANGER)
    elif setup == "open directory":
        os.chmod(here, 0o777)
    elif setup == "group-writable file":
        os.chown(spec, 0, 4242)  # a group that is not the user's own
        os.chmod(spec, 0o664)
    else:
        os.chown(spec, STRANGER, STRANGER)
        os.symlink(spec, tmp_path / "link.py")
        spec = tmp_path / "link.py"
    r = cli("check", f"{spec}:Counter")
    assert r.code == 2 and why in r.err and "Traceback" not in r.err
    assert not (tmp_path / "ran").exists()
    with pytest.raises(OSError, match=re.escape(why)):
        safeio.code_file(str(spec), "spec file")
    with pytest.raises(UsageError, match=re.escape(why.replace("spec file", "mapping"))):
        load_mapping(str(spec), actors=False)
    with pytest.raises(ModelError, match=re.escape(why.replace("spec file", "model file"))):
        load_model(f"{spec}:Counter")
    assert not (tmp_path / "ran").exists()


def test_code_the_user_owns_is_loaded_through_the_users_links_and_under_a_sticky_directory(tmp_path, cli):
    (tmp_path / "tmp").mkdir()
    os.chmod(tmp_path / "tmp", 0o1777)
    (tmp_path / "tmp" / "spec.py").write_text(SPEC)
    os.symlink(tmp_path / "tmp" / "spec.py", tmp_path / "link.py")
    assert safeio.code_file(str(tmp_path / "link.py")) == str(tmp_path / "tmp" / "spec.py")
    r = cli("check", f"{tmp_path / 'link.py'}:Counter")
    assert r.code == 0 and "4 distinct states" in r.out
