"""The arena's cache for 07's protocol, in the format of posenc_lib.experiments.record_cache (shared with notebook
14's flip-flop task): one JSON file per run, so a rerun only fills what is missing and a crash loses one run at most.

    <out>/runs/<method>.seed<k>.json    one record: method, kind, seed, the protocol, the corpus's hash, the code
                                        and torch versions, threads, world size, device, and the measurements
    <out>/states/<method>.seed<k>.pt    the trained weights an inference method needs (RoPE's), so a rerun that
                                        adds one does not train again

Every file is written atomically (a temporary file in the same folder, flushed, then os.replace): a reader sees the
old file or the new one, never half of one. A file that is not a complete record, or one made with another
protocol or corpus, is refused with one line naming it: nothing here overwrites it silently.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..experiments import record_cache
from ..experiments.config import ExperimentConfig, config_of
from ..experiments.record_cache import RECORD_VERSION, atomic_write, record_path  # noqa: F401 (this module's API)
from .presets import config_differences

RECORD_KEYS = record_cache.HEADER + ("kind", "protocol", "corpus_sha256", "loss", "sliding_loss", "probe",
                                     "posenc_lib_version", "torch_version", "threads", "world_size")


def state_path(out_dir: Path | str, method: str, seed: int) -> Path:
    return Path(out_dir) / "states" / f"{method}.seed{seed}.pt"


def write_record(out_dir: Path | str, record: dict) -> Path:
    """Write one run's record (atomically) to record_path; returns the path."""
    return record_cache.write_record(out_dir, record, RECORD_KEYS)


def write_state(out_dir: Path | str, method: str, seed: int, state: dict) -> Path:
    path = state_path(out_dir, method, seed)
    atomic_write(path, lambda f: torch.save({k: v.detach().cpu() for k, v in state.items()}, f))
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
    record = record_cache.read_record(path, RECORD_KEYS)
    if protocol is not None:
        diff = config_differences(record["protocol"], protocol)
        if diff:
            raise ValueError(f"{path}: made with another protocol ({'; '.join(diff)}); delete it or choose "
                             f"another --out")
    if corpus_sha256 is not None and record["corpus_sha256"] != corpus_sha256:
        raise ValueError(f"{path}: made on another corpus (text sha256 {record['corpus_sha256'][:12]}.. vs "
                         f"{corpus_sha256[:12]}..); delete it or choose another --out")
    return record


def record_protocol(record: dict) -> ExperimentConfig:
    """The ExperimentConfig a record was made with (its stored `protocol`)."""
    return config_of(record["protocol"], ExperimentConfig)


def cached_records(out_dir: Path | str, methods, seeds, *, protocol, corpus_sha256: str) -> dict:
    """{(method, seed): record} of the runs already in the cache (each checked by read_record)."""
    return record_cache.cached_records(out_dir, methods, seeds, lambda path: read_record(
        path, protocol=protocol, corpus_sha256=corpus_sha256))
