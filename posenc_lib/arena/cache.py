"""The arena's cache: one JSON file per run, so a rerun only fills what is missing and a crash loses one run at most.

    <out>/runs/<method>.seed<k>.json    one record: method, kind, seed, the protocol, the corpus's hash, the code
                                        and torch versions, threads, world size, device, and the measurements
    <out>/states/<method>.seed<k>.pt    the trained weights an inference method needs (RoPE's), so a rerun that
                                        adds one does not train again

Every file is written atomically (a temporary file in the same folder, flushed, then os.replace): a reader sees the
old file or the new one, never half of one. A file that is not a complete record, or one made with another
protocol or corpus, is refused with one line naming it: nothing here overwrites it silently.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import torch

from .presets import config_differences

RECORD_VERSION = 1
RECORD_KEYS = ("arena_record", "method", "kind", "seed", "protocol", "corpus_sha256", "loss", "sliding_loss",
               "probe", "posenc_lib_version", "torch_version", "threads", "world_size")


def record_path(out_dir: Path | str, method: str, seed: int) -> Path:
    return Path(out_dir) / "runs" / f"{method}.seed{seed}.json"


def state_path(out_dir: Path | str, method: str, seed: int) -> Path:
    return Path(out_dir) / "states" / f"{method}.seed{seed}.pt"


def _atomic_write(path: Path, write) -> None:
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


def write_record(out_dir: Path | str, record: dict) -> Path:
    """Write one run's record (atomically) to record_path; returns the path."""
    missing = [k for k in RECORD_KEYS if k not in record]
    if missing:
        raise ValueError(f"record is missing {missing}")
    path = record_path(out_dir, record["method"], record["seed"])
    text = json.dumps(record, indent=1) + "\n"
    _atomic_write(path, lambda f: f.write(text.encode("utf-8")))
    return path


def write_state(out_dir: Path | str, method: str, seed: int, state: dict) -> Path:
    path = state_path(out_dir, method, seed)
    _atomic_write(path, lambda f: torch.save({k: v.detach().cpu() for k, v in state.items()}, f))
    return path


def read_state(out_dir: Path | str, method: str, seed: int) -> dict:
    path = state_path(out_dir, method, seed)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a truncated or foreign file: say which, do not train over it
        raise ValueError(f"{path}: not a readable state_dict ({type(err).__name__}); delete it to train it "
                         f"again") from None


def read_record(path: Path | str, *, protocol=None, corpus_sha256: str | None = None) -> dict:
    """One cached record, checked: a complete record of the file's own method and seed (ValueError naming the file
    otherwise), made with `protocol` (an ExperimentConfig) and corpus `corpus_sha256` when these are given."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a complete arena record (unreadable: {err}); delete it to run it "
                         f"again") from None
    missing = [k for k in RECORD_KEYS if k not in record] if isinstance(record, dict) else list(RECORD_KEYS)
    if missing:
        raise ValueError(f"{path}: not a complete arena record (missing {missing}); delete it to run it again")
    if path.name != f"{record['method']}.seed{record['seed']}.json" or record["arena_record"] != RECORD_VERSION:
        raise ValueError(f"{path}: holds the record of {record['method']!r} seed {record['seed']} (format "
                         f"{record['arena_record']}), not what its name says (format {RECORD_VERSION})")
    if protocol is not None:
        diff = config_differences(record["protocol"], protocol)
        if diff:
            raise ValueError(f"{path}: made with another protocol ({'; '.join(diff)}); delete it or choose "
                             f"another --out")
    if corpus_sha256 is not None and record["corpus_sha256"] != corpus_sha256:
        raise ValueError(f"{path}: made on another corpus (text sha256 {record['corpus_sha256'][:12]}.. vs "
                         f"{corpus_sha256[:12]}..); delete it or choose another --out")
    return record


def cached_records(out_dir: Path | str, methods, seeds, *, protocol, corpus_sha256: str) -> dict:
    """{(method, seed): record} of the runs already in the cache (each checked by read_record)."""
    found = {}
    for method in methods:
        for seed in seeds:
            path = record_path(out_dir, method, seed)
            if path.exists():
                found[method, seed] = read_record(path, protocol=protocol, corpus_sha256=corpus_sha256)
    return found
