"""One cache format for the arena's tasks: one JSON file per run, so a rerun only fills what is missing and a crash
loses one run at most. Its users: posenc_lib.arena.cache (07's protocol, data/arena/<preset>/) and
posenc_lib.experiments.flipflop (notebook 14's task, data/arena/flipflop/).

    <out>/runs/<method>.seed<k>.json    one record: a JSON object with at least HEADER (the format's version,
                                        the method and the seed its name says), and what its task requires

Every file is written atomically (a temporary file in the same folder, flushed, then os.replace): a reader sees the
old file or the new one, never half of one. A file that is not a complete record of its task, or holds another
method or seed than its name says, is refused with one line naming it (ValueError); each task refuses, the same way,
a record made with other settings (`field_differences`). Nothing here overwrites a refused file silently.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

RECORD_VERSION = 1
HEADER = ("arena_record", "method", "seed")   # every record's first keys: the format, what ran, with which seed


def record_path(out_dir: Path | str, method: str, seed: int) -> Path:
    return Path(out_dir) / "runs" / f"{method}.seed{seed}.json"


def atomic_write(path: Path, write) -> None:
    """write(file object) into a temporary file beside `path`, then rename it onto `path` (atomic on POSIX and
    Windows); the temporary file is removed if writing fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)   # mkstemp's 0600 would keep the cache from others who share the clone
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_record(out_dir: Path | str, record: dict, keys: tuple = HEADER) -> Path:
    """Write one run's record (atomically, indented JSON) to record_path; `keys`: the ones it must have (its
    task's, starting with HEADER). Returns the path."""
    missing = [k for k in keys if k not in record]
    if missing:
        raise ValueError(f"record is missing {missing}")
    path = record_path(out_dir, record["method"], record["seed"])
    text = json.dumps(record, indent=1) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))
    return path


def read_record(path: Path | str, keys: tuple = HEADER, *, what: str = "arena record") -> dict:
    """One cached record, checked: readable JSON with every key of `keys` (its task's), of the method and seed its
    file name says, in this format (ValueError naming the file and `what` it should be otherwise)."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a complete {what} (unreadable: {err}); delete it to run it again") from None
    missing = [k for k in keys if k not in record] if isinstance(record, dict) else list(keys)
    if missing:
        raise ValueError(f"{path}: not a complete {what} (missing {missing}); delete it to run it again")
    if path.name != f"{record['method']}.seed{record['seed']}.json" or record["arena_record"] != RECORD_VERSION:
        raise ValueError(f"{path}: holds the record of {record['method']!r} seed {record['seed']} (format "
                         f"{record['arena_record']}), not what its name says (format {RECORD_VERSION})")
    return record


def field_differences(stored: dict, ours: dict, ignore=()) -> list:
    """['field: stored -> ours', ...] between a record's stored settings and the ones asked for (both JSON-like
    dicts), over the fields not in `ignore` (those that do not change a run's numbers)."""
    keys = sorted((set(stored) | set(ours)) - set(ignore))
    return [f"{k}: {stored.get(k)!r} -> {ours.get(k)!r}" for k in keys if stored.get(k) != ours.get(k)]


def cached_records(out_dir: Path | str, methods, seeds, read) -> dict:
    """{(method, seed): read(path)} of the runs already in the cache (`read`: the task's checked reader)."""
    found = {}
    for method in methods:
        for seed in seeds:
            path = record_path(out_dir, method, seed)
            if path.exists():
                found[method, seed] = read(path)
    return found
