"""The learner's own copies of the notebooks, so that answers never land in the course's tracked files.

`make lab` and `make lab-zh` call this before JupyterLab starts:

    python tools/learner_copies.py notebooks    my-notebooks/en
    python tools/learner_copies.py notebooks/zh my-notebooks/zh

For each course notebook (SOURCE/NN_*.ipynb) it decides what the learner's folder (DEST, git-ignored)
gets, without ever writing over a byte the learner wrote:

    not in DEST                                    -> copied                   ("new")
    DEST's copy is the course's current version    -> left alone               ("same")
    DEST's copy is untouched, the course changed   -> replaced by the new one  ("updated")
    DEST's copy was edited, the course changed     -> the new one goes beside it ("offered")
    the course no longer has it                    -> the learner is told once, the copy stays

A file is replaced only if it still holds the bytes the decision was made on, checked once the new
bytes are on disk (a save from a JupyterLab left open meanwhile makes it decide again).

"Untouched" means byte-identical to a version the course published (data/published_notebooks.json:
the SHA-256 of every version of every notebook that landed on main, so a ZIP download or a shallow
clone knows them too) or to what this tool last copied there. An offer is NN_x.updated.ipynb; an offer
that is still what this tool wrote is replaced by the next one, an offer the learner edited is theirs
and the next one goes to NN_x.updated-2.ipynb (-3, ...). An offer is made once per course version:
delete it and it comes back only when the course changes the notebook again.

DEST/.course-copies.json records the edition (en or zh, never a path: the clone may move) and per
notebook the SHA-256 of what was copied and offered. It is rewritten atomically after each notebook; a
missing, empty, corrupt or wrongly shaped one is rebuilt from the published hashes (one line says so;
an edited copy, whose starting version is then unknown, gets the course's current one beside it once).
DEST/.course-copies.lock keeps a second run on the same folder waiting (--wait seconds, then it stops
with a message). Each failure is one line on stderr naming the path and what to do, exit status 1;
the next run after the cause is fixed picks up where this one stopped. The course's own files are
only read. After a notebook changes: `python tools/learner_copies.py --record-published`.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "data" / "published_notebooks.json"
RECORD_COMMAND = "python tools/learner_copies.py --record-published"
MANIFEST, LOCK = ".course-copies.json", ".course-copies.lock"
FOLDERS = {"en": "notebooks", "zh": "notebooks/zh"}          # edition -> the course's folder
DESTS = {"en": "my-notebooks/en", "zh": "my-notebooks/zh"}   # edition -> the learner's, in the Makefile
MAKE = {"en": "make lab", "zh": "make lab-zh"}
NOTEBOOK = "[0-9][0-9]_*.ipynb"
COURSE_PATH = re.compile(r"notebooks/(zh/)?([0-9][0-9]_[^/]*\.ipynb)\Z")   # a path in the repository
SHA = re.compile(r"[0-9a-f]{64}\Z")
NAME = re.compile(r"[0-9][0-9]_[^/\\]*\.ipynb\Z")                # a notebook's file name, no folder
PARTIAL = re.compile(r"\..+\.[0-9]+\.partial\Z")             # _write's temporary files
ABOUT = ("SHA-256 of every version of every course notebook published on main, per edition; "
         f"made by `{RECORD_COMMAND}`, which only adds")


class Refusal(Exception):
    """The run stops here: one line naming the path and what to do."""


class Skipped(Exception):
    """This notebook is left as it is (one line naming the path and what to do); the others go on."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_sha(value) -> bool:
    return isinstance(value, str) and SHA.match(value) is not None


def _pause(point: str) -> None:
    """Tests only: stop at a named point until the test says go (forced interleavings, crashes)."""
    folder = os.environ.get("LEARNER_COPIES_TEST_DIR")
    if folder and point in os.environ.get("LEARNER_COPIES_TEST_PAUSE", "").split(","):
        Path(folder, point + ".reached").touch()
        deadline = time.monotonic() + 30
        while not Path(folder, point + ".go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)


class Run:
    """What one run did: actions per notebook and the lines it said (printed as they happen)."""

    def __init__(self, echo: bool = False):
        self.echo, self.actions, self.lines, self.problems = echo, {}, [], []

    def say(self, line: str) -> None:
        self.lines.append(line)
        if self.echo:
            print(line, flush=True)

    def problem(self, line: str) -> None:
        self.problems.append(line)
        if self.echo:
            print(f"learner_copies: {line}", file=sys.stderr, flush=True)


# ---- the published hashes ------------------------------------------------------------------------------

def _hash_table(value) -> dict[str, list[str]] | None:
    """{notebook name: [sha, ...]} as stored, or None when the value has another shape."""
    if not isinstance(value, dict):
        return None
    for name, shas in value.items():
        if not (NAME.match(name) and isinstance(shas, list)
                and all(_is_sha(s) for s in shas)):
            return None
    return value


def load_published(path: Path = PUBLISHED) -> dict[str, dict[str, set[str]]]:
    """{edition: {notebook name: {sha of each published version}}}; raises ValueError naming the path."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} cannot be read ({getattr(e, 'strerror', None) or e})") from None
    tables = {ed: _hash_table(data.get(ed)) if isinstance(data, dict) else None for ed in FOLDERS}
    if any(t is None for t in tables.values()):
        raise ValueError(f"{path} is not {{edition: {{notebook: [sha256, ...]}}}}")
    return {ed: {name: set(shas) for name, shas in t.items()} for ed, t in tables.items()}


def _course_versions(root: Path):
    """(edition, name, bytes) of every NN_*.ipynb in HEAD's history (when git is there) and on disk."""
    git = ["git", "-C", str(root)]
    has_history = shutil.which("git") and subprocess.run(git + ["rev-parse", "--verify", "-q", "HEAD"],
                                                         capture_output=True).returncode == 0
    if has_history:
        blobs = {}                                                      # blob id -> repository path
        for commit in subprocess.run(git + ["rev-list", "HEAD"], capture_output=True, text=True,
                                     check=True).stdout.split():
            tree = subprocess.run(git + ["ls-tree", "-r", commit, "--", "notebooks"], capture_output=True,
                                  text=True, check=True).stdout
            for line in tree.splitlines():                              # "<mode> blob <id>\t<path>"
                meta, path = line.split("\t", 1)
                if COURSE_PATH.match(path):
                    blobs.setdefault(meta.split()[2], path)
        ids = "".join(blob + "\n" for blob in blobs).encode()
        out = subprocess.run(git + ["cat-file", "--batch"], input=ids, capture_output=True,
                             check=True).stdout
        at = 0
        for path in blobs.values():                                     # "<id> blob <size>\n<bytes>\n"
            header_end = out.index(b"\n", at)
            size = int(out[at:header_end].split()[2])
            match = COURSE_PATH.match(path)
            yield ("zh" if match[1] else "en"), match[2], out[header_end + 1:header_end + 1 + size]
            at = header_end + 1 + size + 1
    for edition, folder in FOLDERS.items():
        for nb in sorted((root / folder).glob(NOTEBOOK)):
            yield edition, nb.name, nb.read_bytes()


def record_published(root: Path = ROOT, path: Path | None = None) -> tuple[int, int]:
    """Add the hash of every course notebook version to the published list; return (added, total)."""
    path = path or root / "data" / "published_notebooks.json"
    published = load_published(path) if path.exists() else {ed: {} for ed in FOLDERS}
    before = sum(len(s) for table in published.values() for s in table.values())
    for edition, name, data in _course_versions(root):
        published[edition].setdefault(name, set()).add(_sha256(data))
    stored = {"about": ABOUT, **{ed: {name: sorted(shas) for name, shas in sorted(table.items())}
                                 for ed, table in published.items()}}
    path.write_text(json.dumps(stored, indent=1, ensure_ascii=False) + "\n")
    total = sum(len(s) for table in published.values() for s in table.values())
    return total - before, total


# ---- the learner's folder --------------------------------------------------------------------------

def edition_of(source: Path) -> str:
    """The edition a course folder holds: notebooks/zh is the Chinese one."""
    return "zh" if source.resolve().name == "zh" else "en"


def _make_folder(dest: Path, again: str) -> None:
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise Refusal(f"{dest} is a file where your notebooks' folder should be: rename or move it, "
                      f"then run {again} again") from None
    except NotADirectoryError:
        blocker = next(p for p in dest.parents if p.exists() and not p.is_dir())
        raise Refusal(f"{blocker} is a file where a folder should be (your notebooks go in {dest}): "
                      f"rename or move it, then run {again} again") from None
    except PermissionError as e:
        parent = next(p for p in dest.parents if p.exists())
        raise Refusal(f"cannot create {dest} ({e.strerror} in {parent}): make {parent} writable "
                      f"(chmod u+w {parent}), then run {again} again") from None


def _write_refusal(e: OSError, target: Path, dest: Path, again: str) -> Refusal:
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return Refusal(f"cannot write in {dest} ({e.strerror}): make the folder writable "
                       f"(chmod u+w {dest}), then run {again} again; nothing in it was lost")
    return Refusal(f"cannot write {target} ({e.strerror}): fix that (free some space?), "
                   f"then run {again} again; nothing in {dest} was lost")


ANY = object()


def _write(dest: Path, target: Path, data: bytes, again: str, was=ANY) -> bool:
    """target's bytes become data at once (temporary file, fsync, os.replace): never half a file.

    was: the bytes target held when the decision was made (None: no file); when it holds others by
    the time the new bytes are ready (the learner saved meanwhile), nothing is replaced: False."""
    tmp = dest / f".{target.name}.{os.getpid()}.partial"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _pause(f"replacing:{target.name}")
        if was is not ANY and _peek(target) != was:
            tmp.unlink()
            return False
        os.replace(tmp, target)
        return True
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _write_refusal(e, target, dest, again) from None


def _peek(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None if not path.exists() else b"(not a file)"
    except OSError:
        return b"(unreadable)"


def _read_copy(path: Path, again: str) -> bytes | None:
    """The bytes of a file in the learner's folder, None when there is none; Skipped when unusable."""
    if not path.exists() and not path.is_symlink():
        return None
    if not path.is_file():
        raise Skipped(f"{path} is a folder (or not a file) where a notebook should be: rename or move "
                      f"it, then run {again} again; it is left as it is")
    try:
        return path.read_bytes()
    except OSError as e:
        raise Skipped(f"cannot read {path} ({e.strerror}): make it readable (chmod u+r {path}), then "
                      f"run {again} again; it is left as it is") from None


@contextlib.contextmanager
def _locked(dest: Path, wait_s: float, again: str, run: Run):
    """Hold DEST/.course-copies.lock (flock: freed when the process ends, even killed)."""
    path = dest / LOCK
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except IsADirectoryError:
        raise Refusal(f"{path} is a folder where this tool's lock file should be: remove it, then "
                      f"run {again} again") from None
    except OSError as e:
        raise _write_refusal(e, path, dest, again) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if wait_s > 0:
                run.say(f"  another run is updating {dest}: waiting for it (at most {wait_s:g} s)")
                _pause("waiting")
            deadline = time.monotonic() + wait_s
            while True:
                with contextlib.suppress(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                if time.monotonic() >= deadline:
                    raise Refusal(f"another run is still updating {dest} (it holds {path}): let it "
                                  f"finish (another terminal?), then run {again} again") from None
                time.sleep(0.02)
        except OSError as e:                              # a file system without locks (some network mounts)
            run.say(f"  note: cannot lock {path} ({e.strerror}): run only one of these at a time on {dest}")
        yield
    finally:
        os.close(fd)


def _offer_name(name: str, k: int) -> str:
    stem = name[: -len(".ipynb")]
    return f"{stem}.updated.ipynb" if k == 1 else f"{stem}.updated-{k}.ipynb"


# ---- the manifest --------------------------------------------------------------------------------------

def _record_ok(record) -> bool:
    offer = record.get("offer") if isinstance(record, dict) else None
    return (isinstance(record, dict) and set(record) <= {"copied", "offer", "removed"}
            and (record.get("copied") is None or _is_sha(record["copied"]))
            and (offer is None or (isinstance(offer, dict) and set(offer) == {"name", "sha"}
                                   and isinstance(offer["name"], str) and "/" not in offer["name"]
                                   and _is_sha(offer["sha"])))
            and isinstance(record.get("removed", False), bool))


def _parse_manifest(raw: bytes) -> tuple[dict | None, str]:
    """(manifest, "") when raw is a valid manifest (this format or the first one), else (None, why not)."""
    if not raw.strip():
        return None, "empty"
    try:
        data = json.loads(raw)
    except ValueError:
        return None, "not valid JSON"
    misshapen = None, "not in the shape this tool writes"
    if not isinstance(data, dict):
        return misshapen
    if set(data) == {"format", "edition", "notebooks"}:
        records = data["notebooks"]
        shaped = (data["format"] == 2 and isinstance(data["edition"], str) and data["edition"] in FOLDERS
                  and isinstance(records, dict)
                  and all(NAME.match(n) and _record_ok(r) for n, r in records.items()))
        return (data, "") if shaped else misshapen
    # the first format: {name: {"copied": sha, "offered": sha}}, no edition (found from the copies)
    if not data or not all(NAME.match(n) and isinstance(r, dict) and set(r) <= {"copied", "offered"}
                           and all(_is_sha(v) for v in r.values()) for n, r in data.items()):
        return misshapen
    records = {}
    for name, first in data.items():
        records[name] = {"copied": first["copied"]} if "copied" in first else {}
        if "offered" in first:
            records[name]["offer"] = {"name": _offer_name(name, 1), "sha": first["offered"]}
    return {"format": 2, "edition": None, "notebooks": records}, ""


def _edition_of_copies(dest: Path, published: dict) -> set[str]:
    """The editions whose published versions the copies in dest match byte for byte."""
    found = set()
    for edition, table in published.items():
        for name, shas in table.items():
            with contextlib.suppress(OSError):
                if (dest / name).is_file() and _sha256((dest / name).read_bytes()) in shas:
                    found.add(edition)
    return found


def _load_manifest(source: Path, dest: Path, edition: str, published: dict, again: str):
    """(manifest, the bytes on disk, the line saying it was rebuilt or ""); a missing or broken one
    is rebuilt, the other edition's refused."""
    path = dest / MANIFEST
    if path.exists() and not path.is_file():
        raise Refusal(f"{path} is a folder (or not a file) where this tool keeps its record: "
                      f"rename or move it, then run {again} again")
    try:
        raw = path.read_bytes()
        manifest, why = _parse_manifest(raw)
    except FileNotFoundError:
        raw, manifest, why = b"", None, "missing"
    except OSError as e:
        raw, manifest, why = b"", None, f"unreadable ({e.strerror})"
    if manifest and manifest["edition"]:
        found = {manifest["edition"]}
    else:
        found = _edition_of_copies(dest, published)
    if edition not in found and found:
        other = found.pop()
        raise Refusal(f"{dest} holds copies of the {other} edition ({FOLDERS[other]}), and {source} is "
                      f"the {edition} edition: give it its own folder ({DESTS[edition]}: "
                      f"{MAKE[edition]}); none of your files was changed")
    rebuilt = ""
    if manifest is None:
        if any(p.is_file() for p in dest.glob(NOTEBOOK)):
            rebuilt = (f"  {path} was {why}: rebuilt (copies matching a published version of the course "
                       f"count as untouched, the others as yours)")
        manifest = {"format": 2, "edition": edition, "notebooks": {}}
    manifest["edition"] = edition
    return manifest, raw, rebuilt


# ---- one run -------------------------------------------------------------------------------------------

def _bring(name: str, course: bytes, dest: Path, record: dict, known: set[str], again: str,
           run: Run) -> str:
    """Bring one notebook up to date; return what happened ("new", "same", "updated", "offered")."""
    for _ in range(5):                                    # again when the learner saved in between
        action = _bring_once(name, course, dest, record, known, again, run)
        if action:
            return action
    raise Skipped(f"{dest / name} kept changing while this tool ran: run {again} again when nothing "
                  f"is saving to it; it is left as it is")


def _bring_once(name: str, course: bytes, dest: Path, record: dict, known: set[str], again: str,
                run: Run) -> str | None:
    mine, course_hash = dest / name, _sha256(course)
    mine_bytes = _read_copy(mine, again)
    if mine_bytes is None:
        action = "new"
    elif _sha256(mine_bytes) == course_hash:
        action = "same"
    elif _sha256(mine_bytes) in known | {record.get("copied")}:      # a version the course wrote
        action = "updated"
    elif record.get("copied") == course_hash:                           # edited, and nothing new to offer
        return "same"
    else:                                                               # the learner's: never written
        return _offer(name, course, dest, record, known, again, run)
    if action != "same" and not _write(dest, mine, course, again, was=mine_bytes):
        return None
    if action == "updated":
        run.say(f"  {name}: the course changed it and you had not: replaced by the new version")
    record["copied"] = course_hash
    return action


def _offer(name: str, course: bytes, dest: Path, record: dict, known: set[str], again: str,
           run: Run) -> str | None:
    """The new version beside the learner's copy, in an offer file this tool wrote (or a fresh name)."""
    course_hash, offer = _sha256(course), record.get("offer")
    if offer and offer["sha"] == course_hash:
        return "same"                                     # offered once per version (they may delete it)
    ours = known | ({offer["sha"]} if offer else set())
    theirs, k = [], 1
    while True:
        candidate = dest / _offer_name(name, k)
        try:
            held = _read_copy(candidate, again)
        except Skipped:
            held = b"(not ours)"                           # unreadable or a folder: not ours to replace
        if held is None or _sha256(held) in ours:
            break
        theirs.append(candidate.name)
        k += 1
    if not _write(dest, candidate, course, again, was=held):
        return None
    record["offer"] = {"name": candidate.name, "sha": course_hash}
    kept = (f" ({', '.join(theirs)} differ from what this tool wrote there, so they are yours: kept)"
            if theirs else "")
    if record.get("copied"):
        why = "the course changed it and you edited your copy: yours is untouched, the new version"
    else:                                                 # a rebuilt record: where it started is unknown
        why = ("your copy matches no version the course published, so it is yours: it is untouched, "
               "the course's current version")
    run.say(f"  {name}: {why} is beside it as {candidate.name}{kept}")
    return "offered"


def sync(source: Path, dest: Path, *, edition: str | None = None, published: dict | None = None,
         wait_s: float = 30.0, run: Run | None = None) -> dict[str, str]:
    """Bring dest up to date with the notebooks in source; return {notebook name: what happened}.

    Refusal stops the run (the manifest holds every notebook done so far); a Skipped notebook is
    recorded in run.problems and the others go on."""
    run = run or Run()
    edition = edition or edition_of(source)
    again = MAKE[edition]
    try:
        course_notebooks = sorted(source.glob(NOTEBOOK)) if source.is_dir() else []
    except OSError as e:
        raise Refusal(f"cannot list {source} ({e.strerror}): make it readable, then run {again} again") from e
    if not course_notebooks:
        raise Refusal(f"{source} is not a folder of course notebooks (NN_*.ipynb): give the course's "
                      f"{FOLDERS[edition]} folder (run {again} from the repository's root)")
    if published is None:
        try:
            published = load_published()
        except ValueError as e:
            run.say(f"  note: {e}: older untouched copies count as yours; restore it with "
                    f"git checkout -- data/published_notebooks.json")
            published = {ed: {} for ed in FOLDERS}
    _make_folder(dest, again)
    with _locked(dest, wait_s, again, run):
        _pause("locked")
        for stale in dest.iterdir():                      # what a killed run left half-written
            if PARTIAL.match(stale.name) and stale.is_file():
                stale.unlink()
        manifest, saved, rebuilt = _load_manifest(source, dest, edition, published, again)
        run.say(f"your notebooks: {dest}/ (answers you type are saved there, never in {source}/)")
        if rebuilt:
            run.say(rebuilt)
        records = manifest["notebooks"]

        def save() -> None:
            nonlocal saved
            text = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
            if text != saved:
                _write(dest, dest / MANIFEST, text, again)
                saved = text

        for course_nb in course_notebooks:
            name = course_nb.name
            try:
                course = course_nb.read_bytes()
            except OSError as e:
                run.problem(f"cannot read the course's {course_nb} ({e.strerror}): make it readable or "
                            f"restore it (git checkout -- {course_nb}), then run {again} again; "
                            f"your copy of it is left as it is")
                continue
            record = records.setdefault(name, {})
            record.pop("removed", None)
            try:
                run.actions[name] = _bring(name, course, dest, record,
                                           published[edition].get(name, set()), again, run)
            except Skipped as e:
                run.problem(str(e))
                continue
            _pause(f"wrote:{name}")
            save()
            _pause(f"recorded:{name}")
        course_names = {nb.name for nb in course_notebooks}
        for name in sorted((set(records) | set(published[edition])) - course_names):
            if not (dest / name).exists():                # the learner deleted it, or never had it
                records.pop(name, None)
            elif not records.setdefault(name, {}).get("removed"):
                run.say(f"  {name}: the course no longer has this notebook (removed or renamed): your "
                        f"copy {dest / name} is kept")
                records[name]["removed"] = True
        save()
    return run.actions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, nargs="?",
                        help="the course's notebooks (notebooks or notebooks/zh)")
    parser.add_argument("dest", type=Path, nargs="?",
                        help="your folder (my-notebooks/en or my-notebooks/zh)")
    parser.add_argument("--wait", type=float, default=30.0, metavar="SECONDS",
                        help="how long to wait for another run on the same folder (default 30)")
    parser.add_argument("--record-published", action="store_true",
                        help=f"add every notebook version in git history and on disk to {PUBLISHED.name}")
    args = parser.parse_args(argv)
    if args.record_published:
        try:
            added, total = record_published()
        except ValueError as e:
            print(f"learner_copies: {e}: restore it (git checkout -- data/{PUBLISHED.name}), then "
                  f"run this again", file=sys.stderr)
            return 1
        print(f"{PUBLISHED.relative_to(ROOT)}: {added} new version(s), {total} in all")
        return 0
    if args.dest is None:
        parser.error("give SOURCE and DEST (or --record-published)")
    run = Run(echo=True)
    try:
        sync(args.source, args.dest, wait_s=args.wait, run=run)
    except Refusal as e:
        run.problem(str(e))
    except OSError as e:                                  # anything not foreseen above: still one line
        run.problem(f"cannot use {e.filename} ({e.strerror}): fix that (its permissions?), then run the "
                    f"same command again")
    except KeyboardInterrupt:                             # nothing is half-written: the next run finishes
        run.problem(f"stopped (Ctrl-C) before {args.dest} was up to date: run the same command again")
    new = sorted(n for n, a in run.actions.items() if a == "new")
    if new:
        print(f"  copied {len(new)} notebook(s) from the course")
    return 1 if run.problems else 0


if __name__ == "__main__":
    sys.exit(main())
