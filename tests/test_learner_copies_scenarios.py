"""tools/learner_copies.py as a learner's machine really behaves: crashes mid-run, two terminals, a lost or
damaged record, hand-edited files and offers, folders without permission, the other edition's source.

Each scenario runs the tool as `make lab` does (a real process, in a throwaway clone with the tool, its
published-hash list and a small course) and checks that every byte the learner wrote is still there and
that every line the tool printed is true. The permission scenarios run the tool as an unprivileged user
(root, as in CI, ignores file modes); the concurrent ones pause a run at a named point
(LEARNER_COPIES_TEST_PAUSE, read only by tests) or hold its lock from the test.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "learner_copies.py"
MINE = "my-notebooks/en"                       # the learner's folder in the clone, as in the Makefile
HEADER = f"your notebooks: {MINE}/ (answers you type are saved there, never in notebooks/)"


def _notebook(text: str) -> bytes:
    return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": [text]}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1).encode()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=None)
def _unprivileged() -> tuple[str, dict]:
    """(a Python the unprivileged user can run, the subprocess arguments that run as that user)."""
    if os.geteuid() != 0:                      # file modes already apply to this user
        return sys.executable, {}
    nobody = pwd.getpwnam("nobody")
    drop = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
    for python in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3")):
        try:                                   # sys.executable may sit under root's 0700 home
            if python and subprocess.run([python, "-c", "import fcntl, hashlib, json"], cwd="/",
                                         capture_output=True, **drop).returncode == 0:
                return python, drop
        except OSError:
            continue
    pytest.fail("no Python that the user nobody can run (/usr/bin/python3 is the usual one)")


class Result:
    def __init__(self, rc: int, out: str, err: str):
        self.rc, self.out, self.err = rc, out.splitlines(), err.splitlines()
        assert "Traceback" not in err, err
        assert all(line.startswith("learner_copies: ") for line in self.err), err

    def failed_with(self, *fragments: str) -> None:
        """Exit status 1 and one line on stderr, naming each fragment (a path, what to do)."""
        assert self.rc == 1 and len(self.err) == 1, (self.rc, self.err)
        for fragment in fragments:
            assert fragment in self.err[0], (fragment, self.err[0])


class Clone:
    """A throwaway clone: tools/ (the tool), data/ (its hash list), notebooks/ (en) and notebooks/zh/."""

    def __init__(self, root: Path):
        self.root = root
        (root / "tools").mkdir()
        shutil.copy(TOOL, root / "tools")
        (root / "data").mkdir()
        self.hooks = root / "hooks"
        self.hooks.mkdir()
        (root / "notebooks" / "zh").mkdir(parents=True)
        self.published: dict[str, dict[str, list[str]]] = {"en": {}, "zh": {}}
        for name in ("01_a.ipynb", "02_b.ipynb", "03_c.ipynb"):
            self.publish(name, name[3] + " v1")
            self.publish(name, name[3] + " v1 (中文)", edition="zh")

    @property
    def dest(self) -> Path:
        return self.root / MINE

    def publish(self, name: str, text: str, edition: str = "en") -> bytes:
        """The course's new version of a notebook, as a `git pull` brings it (and its hash, listed)."""
        data = _notebook(text)
        (self.root / "notebooks" / ("zh" if edition == "zh" else "") / name).write_bytes(data)
        self.published[edition].setdefault(name, []).append(_sha(data))
        (self.root / "data" / "published_notebooks.json").write_text(json.dumps(self.published))
        return data

    def edit(self, name: str, text: str) -> bytes:
        """The learner saves their own version of a file in their folder."""
        data = _notebook(text)
        (self.dest / name).write_bytes(data)
        return data

    def mine(self, name: str) -> bytes:
        return (self.dest / name).read_bytes()

    def files(self) -> dict[str, bytes]:
        """Every file under the learner's folder, by relative path."""
        return {str(p.relative_to(self.dest)): p.read_bytes() for p in sorted(self.dest.rglob("*"))
                if p.is_file()}

    def kept(self, learner: dict[str, bytes]) -> None:
        for name, data in learner.items():
            assert (self.dest / name).read_bytes() == data, f"{name}: the learner's bytes were lost"

    def offers(self) -> list[str]:
        return sorted(p.name for p in self.dest.glob("*.updated*.ipynb"))

    def record(self) -> dict:
        return json.loads((self.dest / ".course-copies.json").read_text())

    def _command(self, source: str, dest: str, args: tuple, unprivileged: bool):
        python, drop = _unprivileged() if unprivileged else (sys.executable, {})
        if drop:
            for path in [self.root, *self.root.rglob("*")]:
                os.lchown(path, drop["user"], drop["group"])
        return [python, "tools/learner_copies.py", source, dest, *args], drop

    def run(self, source: str = "notebooks", dest: str = MINE, *args: str, unprivileged: bool = False,
            pause: str = "") -> Result:
        command, drop = self._command(source, dest, args, unprivileged)
        done = subprocess.run(command, cwd=self.root, capture_output=True, text=True, timeout=60,
                              env=self._env(pause), **drop)
        return Result(done.returncode, done.stdout, done.stderr)

    def start(self, *args: str, pause: str = "") -> subprocess.Popen:
        """A run in the background that stops at the named point until go(point)."""
        command, _ = self._command("notebooks", MINE, args, unprivileged=False)
        # Ctrl-C as in a learner's terminal: SIGINT at its default in the child, also when this test runs
        # under a parent that ignores it (a shell's background job), which Python would otherwise inherit
        process = subprocess.Popen(command, cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=self._env(pause),
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        if pause:
            _wait_for(self.hooks / f"{pause}.reached", process)
        return process

    def go(self, point: str) -> None:
        (self.hooks / f"{point}.go").touch()

    def run_interrupted(self, point: str, name: str, text: str) -> tuple[Result, bytes]:
        """A run stopped at the named point while the learner saves name, then let go."""
        process = self.start(pause=point)
        saved = self.edit(name, text)
        self.go(point)
        return _finish(process), saved

    def _env(self, pause: str) -> dict:
        return {**os.environ, "LEARNER_COPIES_TEST_DIR": str(self.hooks), "LEARNER_COPIES_TEST_PAUSE": pause}


def _wait_for(path: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while not path.exists():
        assert process.poll() is None, f"the run ended before {path.name}: {process.communicate()}"
        assert time.monotonic() < deadline, f"the run never reached {path.name}"
        time.sleep(0.01)


def _finish(process: subprocess.Popen) -> Result:
    out, err = process.communicate(timeout=30)
    return Result(process.returncode, out, err)


@pytest.fixture
def clone():
    """Under the system's temp folder, readable by everyone: the unprivileged user must reach it."""
    root = Path(tempfile.mkdtemp(prefix="learner-copies-"))
    root.chmod(0o755)
    made = Clone(root)
    yield made
    root = made.root                          # a scenario may move the clone
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(root)


# ---- offers ----------------------------------------------------------------------------------------------

def test_an_offer_the_learner_edited_is_kept_and_the_next_version_goes_beside_it(clone):
    clone.run()
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    v2 = clone.publish("01_a.ipynb", "a v2")
    clone.run()
    assert clone.mine("01_a.updated.ipynb") == v2
    offer_answer = clone.edit("01_a.updated.ipynb", "a v2 + my answer, started over in the offer")
    v3 = clone.publish("01_a.ipynb", "a v3")
    result = clone.run()
    assert result.rc == 0 and result.out == [
        HEADER, "  01_a.ipynb: the course changed it and you edited your copy: yours is untouched, the "
        "new version is beside it as 01_a.updated-2.ipynb (01_a.updated.ipynb differ from what "
        "this tool wrote there, so they are yours: kept)"]
    clone.kept({"01_a.ipynb": answer, "01_a.updated.ipynb": offer_answer, "01_a.updated-2.ipynb": v3})
    v4 = clone.publish("01_a.ipynb", "a v4")     # the -2 offer is still the tool's: the next one replaces it
    assert "beside it as 01_a.updated-2.ipynb" in clone.run().out[1]
    clone.kept({"01_a.ipynb": answer, "01_a.updated.ipynb": offer_answer, "01_a.updated-2.ipynb": v4})
    assert clone.offers() == ["01_a.updated-2.ipynb", "01_a.updated.ipynb"]


def test_an_untouched_offer_follows_the_course_without_piling_up(clone):
    clone.run()
    answer = clone.edit("02_b.ipynb", "b v1 + my answer")
    clone.publish("02_b.ipynb", "b v2")
    clone.run()
    v3 = clone.publish("02_b.ipynb", "b v3")
    result = clone.run()
    assert result.rc == 0 and result.out[1:] == [
        "  02_b.ipynb: the course changed it and you edited your copy: yours is untouched, the new "
        "version is beside it as 02_b.updated.ipynb"]
    clone.kept({"02_b.ipynb": answer, "02_b.updated.ipynb": v3})
    assert clone.offers() == ["02_b.updated.ipynb"]


def test_a_deleted_offer_comes_back_only_with_the_next_version(clone):
    clone.run()
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    clone.publish("01_a.ipynb", "a v2")
    clone.run()
    (clone.dest / "01_a.updated.ipynb").unlink()
    assert clone.run().out == [HEADER] and clone.offers() == []
    v3 = clone.publish("01_a.ipynb", "a v3")
    assert "beside it as 01_a.updated.ipynb" in clone.run().out[1]
    clone.kept({"01_a.ipynb": answer, "01_a.updated.ipynb": v3})


# ---- the record (.course-copies.json) ----------------------------------------------------------------------

BROKEN_RECORDS = {
    "missing": None,
    "empty": b"",
    "cut short by a crash": b'{"edition": "en", "format": 2, "notebooks": {"01_a.ipynb": {"cop',
    "a list": b"[]",
    "another edition name": json.dumps({"edition": "fr", "format": 2, "notebooks": {}}).encode(),
    "a hash that is not one": json.dumps({"edition": "en", "format": 2,
                                          "notebooks": {"01_a.ipynb": {"copied": "abc"}}}).encode(),
    "a record that is not a table": json.dumps({"edition": "en", "format": 2,
                                                "notebooks": {"01_a.ipynb": ["copied"]}}).encode(),
    "an absolute path instead of an edition": json.dumps({"source": "/home/me/posenc/notebooks"}).encode(),
    "a list for the edition": json.dumps({"edition": [], "format": 2, "notebooks": {}}).encode(),
    "a path for a notebook's name": json.dumps({"edition": "en", "format": 2,
                                                "notebooks": {"../../01_a.ipynb": {}}}).encode(),
    "not UTF-8": b"\xff\xfe{",
}


@pytest.mark.parametrize("damage", BROKEN_RECORDS)
def test_a_lost_or_damaged_record_is_rebuilt_from_the_published_hashes(clone, damage):
    """No git history here (a ZIP download): the shipped hash list alone tells untouched from edited."""
    clone.run()
    answer = clone.edit("02_b.ipynb", "b v1 + my answer")
    v2 = clone.publish("01_a.ipynb", "a v2")
    b2 = clone.publish("02_b.ipynb", "b v2")
    record = clone.dest / ".course-copies.json"
    record.unlink()
    if BROKEN_RECORDS[damage] is not None:
        record.write_bytes(BROKEN_RECORDS[damage])
    result = clone.run()
    why = {"missing": "missing", "empty": "empty", "cut short by a crash": "not valid JSON",
           "not UTF-8": "not valid JSON"}.get(
        damage, "not in the shape this tool writes")
    assert result.rc == 0 and result.err == [] and result.out == [
        HEADER,
        f"  {MINE}/.course-copies.json was {why}: rebuilt (copies matching a published version of the "
        "course count as untouched, the others as yours)",
        "  01_a.ipynb: the course changed it and you had not: replaced by the new version",
        "  02_b.ipynb: your copy matches no version the course published, so it is yours: it is "
        "untouched, the course's current version is beside it as 02_b.updated.ipynb"]
    clone.kept({"01_a.ipynb": v2, "02_b.ipynb": answer, "02_b.updated.ipynb": b2})
    assert clone.record()["edition"] == "en"
    assert clone.run().out == [HEADER]        # rebuilt once: the next run has nothing to say


def test_the_first_format_of_the_record_is_carried_over(clone):
    """{name: {"copied", "offered"}} from the tool's first version: kept, offers it remembers not re-made."""
    clone.run()
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    v1 = clone.published["en"]["01_a.ipynb"][0]
    v2 = clone.publish("01_a.ipynb", "a v2")
    (clone.dest / ".course-copies.json").write_text(json.dumps(
        {"01_a.ipynb": {"copied": v1, "offered": _sha(v2)},
         "02_b.ipynb": {"copied": clone.published["en"]["02_b.ipynb"][0]}}))
    result = clone.run()                      # the learner had deleted the offer of v2: not made again
    assert result.rc == 0 and result.out == [HEADER] and clone.offers() == []
    clone.kept({"01_a.ipynb": answer})
    offer = {"name": "01_a.updated.ipynb", "sha": _sha(v2)}
    assert clone.record()["notebooks"]["01_a.ipynb"] == {"copied": v1, "offer": offer}


def test_a_moved_clone_keeps_its_copies(clone):
    clone.run()
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    assert str(clone.root) not in (clone.dest / ".course-copies.json").read_text()
    moved = clone.root.with_name(clone.root.name + "-moved")
    clone.root.rename(moved)
    clone.root = moved
    result = clone.run()
    assert result.rc == 0 and result.out == [HEADER]
    clone.kept({"01_a.ipynb": answer})


@pytest.mark.parametrize("record", ["kept", "deleted"])
def test_the_other_editions_source_is_refused_naming_both(clone, record):
    clone.run()
    clone.edit("01_a.ipynb", "a v1 + my answer")
    if record == "deleted":                   # then the copies' hashes tell which edition they are
        (clone.dest / ".course-copies.json").unlink()
    before = clone.files()
    result = clone.run("notebooks/zh", MINE)
    result.failed_with(f"{MINE} holds copies of the en edition (notebooks), and notebooks/zh is the zh "
                       "edition: give it its own folder (my-notebooks/zh: make lab-zh)")
    assert result.out == [] and clone.files() == {**before, ".course-copies.lock": b""}
    assert clone.run("notebooks/zh", "my-notebooks/zh").rc == 0
    assert (clone.root / "my-notebooks/zh/01_a.ipynb").read_bytes() == _notebook("a v1 (中文)")


def test_a_folder_without_course_notebooks_is_refused_before_anything_is_made(clone):
    clone.run("tools", MINE).failed_with(
        "tools is not a folder of course notebooks (NN_*.ipynb): give the course's notebooks folder "
        "(run make lab from the repository's root)")
    assert not (clone.root / "my-notebooks").exists()


# ---- what stands in the way ------------------------------------------------------------------------------

def test_a_file_where_the_folder_should_be(clone):
    (clone.root / "my-notebooks").mkdir()
    clone.dest.write_bytes(b"the learner's notes")
    clone.run().failed_with(f"{MINE} is a file where your notebooks' folder should be: rename or move it, "
                            "then run make lab again")
    assert clone.dest.read_bytes() == b"the learner's notes"
    clone.dest.rename(clone.root / "my-notebooks" / "notes.txt")
    assert clone.run().out == [HEADER, "  copied 3 notebook(s) from the course"]


def test_a_file_where_a_parent_folder_should_be(clone):
    (clone.root / "my-notebooks").write_bytes(b"the learner's notes")
    clone.run().failed_with("my-notebooks is a file where a folder should be (your notebooks go in "
                            f"{MINE}): rename or move it")
    assert (clone.root / "my-notebooks").read_bytes() == b"the learner's notes"


def test_a_folder_where_a_notebook_should_be(clone):
    (clone.dest / "02_b.ipynb").mkdir(parents=True)
    (clone.dest / "02_b.ipynb" / "draft.txt").write_bytes(b"mine")
    result = clone.run()
    result.failed_with(f"{MINE}/02_b.ipynb is a folder (or not a file) where a notebook should be: "
                       "rename or move it, then run make lab again; it is left as it is")
    assert result.out == [HEADER, "  copied 2 notebook(s) from the course"]     # the others went on
    assert (clone.dest / "02_b.ipynb" / "draft.txt").read_bytes() == b"mine"
    (clone.dest / "02_b.ipynb").rename(clone.dest / "drafts")
    result = clone.run()
    assert result.rc == 0 and result.out == [HEADER, "  copied 1 notebook(s) from the course"]
    assert clone.mine("02_b.ipynb") == _notebook("b v1")


def test_a_folder_where_the_record_should_be(clone):
    clone.run()
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    (clone.dest / ".course-copies.json").unlink()
    (clone.dest / ".course-copies.json").mkdir()
    clone.run().failed_with(f"{MINE}/.course-copies.json is a folder (or not a file) where this tool keeps "
                            "its record: rename or move it")
    (clone.dest / ".course-copies.json").rmdir()
    result = clone.run()                      # where the edited copy started is unknown: offered once
    assert result.rc == 0 and "was missing: rebuilt" in result.out[1] and result.out[2:] == [
        "  01_a.ipynb: your copy matches no version the course published, so it is yours: it is "
        "untouched, the course's current version is beside it as 01_a.updated.ipynb"]
    clone.kept({"01_a.ipynb": answer, "01_a.updated.ipynb": _notebook("a v1")})


# ---- permissions (run as an unprivileged user: root ignores file modes) ----------------------------------

def test_a_read_only_folder(clone):
    clone.run(unprivileged=True)
    answer = clone.edit("02_b.ipynb", "b v1 + my answer")
    clone.publish("01_a.ipynb", "a v2")
    clone.publish("02_b.ipynb", "b v2")
    before = clone.files()
    clone.dest.chmod(0o555)
    clone.run(unprivileged=True).failed_with(
        f"cannot write in {MINE} (Permission denied): make the folder writable (chmod u+w {MINE}), then "
        "run make lab again; nothing in it was lost")
    assert clone.files() == before
    clone.dest.chmod(0o755)
    result = clone.run(unprivileged=True)
    assert result.rc == 0 and [line.split(":")[0] for line in result.out[1:]] == ["  01_a.ipynb",
                                                                                 "  02_b.ipynb"]
    clone.kept({"01_a.ipynb": _notebook("a v2"), "02_b.ipynb": answer,
                "02_b.updated.ipynb": _notebook("b v2")})


def test_a_folder_that_cannot_be_made(clone):
    (clone.root / "my-notebooks").mkdir(mode=0o555)
    clone.run(unprivileged=True).failed_with(
        f"cannot create {MINE} (Permission denied in my-notebooks): make my-notebooks writable "
        "(chmod u+w my-notebooks), then run make lab again")
    (clone.root / "my-notebooks").chmod(0o755)
    assert clone.run(unprivileged=True).out == [HEADER, "  copied 3 notebook(s) from the course"]


def test_an_unreadable_course_notebook(clone):
    (clone.root / "notebooks" / "02_b.ipynb").chmod(0)
    result = clone.run(unprivileged=True)
    result.failed_with("cannot read the course's notebooks/02_b.ipynb (Permission denied): make it "
                       "readable or restore it (git checkout -- notebooks/02_b.ipynb), then run make lab "
                       "again")
    assert result.out == [HEADER, "  copied 2 notebook(s) from the course"]
    assert sorted(clone.files()) == [".course-copies.json", ".course-copies.lock", "01_a.ipynb", "03_c.ipynb"]
    (clone.root / "notebooks" / "02_b.ipynb").chmod(0o644)
    result = clone.run(unprivileged=True)
    assert result.rc == 0 and result.out == [HEADER, "  copied 1 notebook(s) from the course"]


def test_an_unreadable_copy_is_left_as_it_is(clone):
    clone.run(unprivileged=True)
    answer = clone.edit("02_b.ipynb", "b v1 + my answer")
    clone.publish("02_b.ipynb", "b v2")
    (clone.dest / "02_b.ipynb").chmod(0)
    result = clone.run(unprivileged=True)
    result.failed_with(f"cannot read {MINE}/02_b.ipynb (Permission denied): make it readable "
                       f"(chmod u+r {MINE}/02_b.ipynb), then run make lab again; it is left as it is")
    assert result.out == [HEADER] and clone.offers() == []
    (clone.dest / "02_b.ipynb").chmod(0o644)
    assert "beside it as 02_b.updated.ipynb" in clone.run(unprivileged=True).out[1]
    clone.kept({"02_b.ipynb": answer})


def test_a_folder_that_cannot_be_listed(clone):
    clone.run(unprivileged=True)
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    clone.dest.chmod(0o300)                   # writable and enterable, not readable
    clone.run(unprivileged=True).failed_with(f"cannot use {MINE} (Permission denied): fix that (its "
                                             "permissions?), then run the same command again")
    clone.dest.chmod(0o755)
    assert clone.run(unprivileged=True).out == [HEADER]
    clone.kept({"01_a.ipynb": answer})


# ---- crashes and two runs at once -------------------------------------------------------------------

def test_a_run_killed_after_writing_a_copy_leaves_the_next_run_right(clone):
    clone.run()
    v2 = clone.publish("01_a.ipynb", "a v2")
    b2 = clone.publish("02_b.ipynb", "b v2")
    run = clone.start(pause="wrote:01_a.ipynb")  # 01 written, not yet in the record
    run.kill()
    run.wait()
    assert clone.mine("01_a.ipynb") == v2
    (clone.dest / ".02_b.ipynb.4242.partial").write_bytes(b"half a notebook")   # as a kill mid-write leaves
    (clone.dest / "notes.partial").write_bytes(b"the learner's")
    result = clone.run()
    assert result.rc == 0 and result.out == [
        HEADER, "  02_b.ipynb: the course changed it and you had not: replaced by the new version"]
    clone.kept({"01_a.ipynb": v2, "02_b.ipynb": b2, "notes.partial": b"the learner's"})
    assert not (clone.dest / ".02_b.ipynb.4242.partial").exists() and clone.offers() == []


def test_a_run_killed_after_writing_an_offer_makes_no_second_offer(clone):
    clone.run()
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    v2 = clone.publish("01_a.ipynb", "a v2")
    run = clone.start(pause="wrote:01_a.ipynb")
    run.kill()
    run.wait()
    assert clone.mine("01_a.updated.ipynb") == v2
    result = clone.run()                      # the offer is the tool's bytes: recognised, not doubled
    assert result.rc == 0 and result.out[1].endswith("beside it as 01_a.updated.ipynb")
    assert clone.run().out == [HEADER] and clone.offers() == ["01_a.updated.ipynb"]
    clone.kept({"01_a.ipynb": answer, "01_a.updated.ipynb": v2})


def test_a_run_stopped_with_ctrl_c_says_so_and_the_next_run_finishes(clone):
    clone.run()
    answer = clone.edit("02_b.ipynb", "b v1 + my answer")
    clone.publish("01_a.ipynb", "a v2")
    b2 = clone.publish("02_b.ipynb", "b v2")
    run = clone.start(pause="recorded:01_a.ipynb")
    run.send_signal(signal.SIGINT)
    result = _finish(run)
    result.failed_with(f"stopped (Ctrl-C) before {MINE} was up to date: run the same command again")
    assert result.out[1:] == [
        "  01_a.ipynb: the course changed it and you had not: replaced by the new version"]
    result = clone.run()
    assert result.rc == 0 and result.out[1:] == [
        "  02_b.ipynb: the course changed it and you edited your copy: yours is untouched, the new "
        "version is beside it as 02_b.updated.ipynb"]
    clone.kept({"01_a.ipynb": _notebook("a v2"), "02_b.ipynb": answer, "02_b.updated.ipynb": b2})


def test_the_record_is_written_after_each_notebook(clone):
    run = clone.start(pause="recorded:01_a.ipynb")
    assert clone.record()["notebooks"] == {"01_a.ipynb": {"copied": clone.published["en"]["01_a.ipynb"][0]}}
    clone.go("recorded:01_a.ipynb")
    result = _finish(run)
    assert result.rc == 0 and result.out == [HEADER, "  copied 3 notebook(s) from the course"]
    assert sorted(clone.record()["notebooks"]) == ["01_a.ipynb", "02_b.ipynb", "03_c.ipynb"]


def test_a_second_run_stops_with_a_message_while_the_first_holds_the_folder(clone):
    clone.run()
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    clone.publish("01_a.ipynb", "a v2")
    first = clone.start(pause="locked")
    second = clone.run("notebooks", MINE, "--wait", "0")
    second.failed_with(f"another run is still updating {MINE} (it holds {MINE}/.course-copies.lock): let it "
                       "finish (another terminal?), then run make lab again")
    assert second.out == [] and clone.offers() == []
    clone.go("locked")
    assert _finish(first).out[1].endswith("beside it as 01_a.updated.ipynb")
    clone.kept({"01_a.ipynb": answer, "01_a.updated.ipynb": _notebook("a v2")})


def test_a_second_run_waits_for_the_first_and_finds_its_work_done(clone):
    clone.run()
    answer = clone.edit("01_a.ipynb", "a v1 + my answer")
    clone.publish("01_a.ipynb", "a v2")
    clone.publish("02_b.ipynb", "b v2")
    first = clone.start(pause="locked")
    second = clone.start(pause="waiting")     # it found the folder locked
    clone.go("waiting")
    clone.go("locked")
    first, second = _finish(first), _finish(second)
    assert first.rc == 0 and len(first.out) == 3
    assert second.rc == 0 and second.out == [
        f"  another run is updating {MINE}: waiting for it (at most 30 s)", HEADER]
    assert clone.offers() == ["01_a.updated.ipynb"]
    clone.kept({"01_a.ipynb": answer, "02_b.ipynb": _notebook("b v2")})


def test_a_lock_held_too_long_ends_the_wait_with_a_message(clone):
    clone.run()
    (clone.dest / ".course-copies.lock").touch()
    with open(clone.dest / ".course-copies.lock") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = clone.run("notebooks", MINE, "--wait", "0.3")
    result.failed_with(f"another run is still updating {MINE}")
    assert result.out == [f"  another run is updating {MINE}: waiting for it (at most 0.3 s)"]
    assert clone.run().out == [HEADER]        # flock: freed with its holder, nothing stale is left


def test_an_edit_saved_while_a_run_is_under_way_is_kept(clone):
    clone.run()
    clone.publish("01_a.ipynb", "a v2")
    b2 = clone.publish("02_b.ipynb", "b v2")
    result, answer = clone.run_interrupted("recorded:01_a.ipynb", "02_b.ipynb",
                                           "b v1 + typed while the run was at 01")
    assert result.rc == 0 and result.out[1:] == [
        "  01_a.ipynb: the course changed it and you had not: replaced by the new version",
        "  02_b.ipynb: the course changed it and you edited your copy: yours is untouched, the new "
        "version is beside it as 02_b.updated.ipynb"]
    clone.kept({"02_b.ipynb": answer, "02_b.updated.ipynb": b2})


# ---- the course removes or renames a notebook --------------------------------------------------------------

def test_a_removed_notebook_is_kept_and_said_once(clone):
    clone.run()
    answer = clone.edit("03_c.ipynb", "c v1 + my answer")
    (clone.root / "notebooks" / "03_c.ipynb").unlink()
    result = clone.run()
    assert result.rc == 0 and result.out == [
        HEADER, f"  03_c.ipynb: the course no longer has this notebook (removed or renamed): your copy "
        f"{MINE}/03_c.ipynb is kept"]
    assert clone.run().out == [HEADER]
    clone.kept({"03_c.ipynb": answer})


def test_a_renamed_notebook_comes_under_its_new_name_and_the_old_copy_stays(clone):
    clone.run()
    untouched = clone.mine("02_b.ipynb")
    (clone.root / "notebooks" / "02_b.ipynb").rename(clone.root / "notebooks" / "02_bee.ipynb")
    clone.publish("02_bee.ipynb", "b v1")
    result = clone.run()
    assert result.rc == 0 and result.out == [
        HEADER, f"  02_b.ipynb: the course no longer has this notebook (removed or renamed): your copy "
        f"{MINE}/02_b.ipynb is kept", "  copied 1 notebook(s) from the course"]
    clone.kept({"02_b.ipynb": untouched, "02_bee.ipynb": _notebook("b v1")})


def test_an_edit_saved_just_before_its_copy_is_replaced_is_kept(clone):
    """The learner saves (JupyterLab open in another terminal) after the run read the untouched copy
    and before it replaces it: the run sees other bytes at the last moment and offers instead."""
    clone.run()
    b2 = clone.publish("02_b.ipynb", "b v2")
    result, answer = clone.run_interrupted("replacing:02_b.ipynb", "02_b.ipynb",
                                           "b v1 + saved at the last moment")
    assert result.rc == 0 and result.out[1:] == [
        "  02_b.ipynb: the course changed it and you edited your copy: yours is untouched, the new "
        "version is beside it as 02_b.updated.ipynb"]
    clone.kept({"02_b.ipynb": answer, "02_b.updated.ipynb": b2})


def test_a_notebook_the_learner_creates_just_before_its_copy_lands_is_kept(clone):
    result, answer = clone.run_interrupted("replacing:03_c.ipynb", "03_c.ipynb",
                                           "my own notebook, saved under the course's name")
    assert result.rc == 0 and result.out == [
        HEADER, "  03_c.ipynb: your copy matches no version the course published, so it is yours: it is "
        "untouched, the course's current version is beside it as 03_c.updated.ipynb",
        "  copied 2 notebook(s) from the course"]
    clone.kept({"03_c.ipynb": answer, "03_c.updated.ipynb": _notebook("c v1")})
