"""The committed laptop arena (data/arena/laptop/: runs/*.json, states/rope.seed0.pt, table.json, table.md) reproduces:
cheap arms of it are run again here and must equal the committed records.

    (a) inference: ReRoPE on the committed RoPE seed-0 weights: the loss and the probe's cells at L, 2L and 4L
        (each cell is its own computation, so a subset is the same numbers; 8L and the sliding baseline are left
        out for time: together about 20 s more on one core)
    (b) training: RoPE seed 0 trained for the first log_every steps of the laptop schedule (the same total `steps`,
        so the learning rate of each step is the committed run's): the first point of its train_curve. train() has
        no early stop; the test stops it by raising from its `progress` callback after the first logged point, and
        reads the per-step losses off a forward hook (train's own code, unchanged, computes every number)
    (c) the committed table.json and table.md are what the command writes (write_outputs: arena_table and the
        papers' direction) from the committed records

EXACT equality (==, not approximately) when this torch is the record's torch_version (the thread count is set to
the record's `threads` here, and restored); with another torch the numbers may differ in the last float bits, so the
test then allows a stated tolerance: TOLERANCE below (nats per character). POSENC_ARENA_LAPTOP=<folder> points the
test at another cache of the same layout (e.g. a short stand-in run: its own protocol is then used).
"""
from __future__ import annotations

import json
import os
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from posenc_lib.arena import cache
from posenc_lib.arena.__main__ import write_outputs
from posenc_lib.arena.presets import all_methods, arena_config, config_differences
from posenc_lib.arena.run import _inference_method
from posenc_lib.arena.table import arena_table
from posenc_lib.experiments.arena_methods import build_arena_model
from posenc_lib.experiments.config import ExperimentConfig
from posenc_lib.experiments.corpus import load_corpus
from posenc_lib.experiments.evaluation import eval_ends, losses_at_multiples
from posenc_lib.experiments.paths import data_dir
from posenc_lib.experiments.probe import make_probes, retrieval_probe
from posenc_lib.experiments.training import train

COMMITTED = data_dir() / "arena" / "laptop"
CACHE = Path(os.environ.get("POSENC_ARENA_LAPTOP", COMMITTED))
TOLERANCE = {"evaluation": 1e-3, "training": 1e-2}   # only when torch's version differs from the record's
INFERENCE_MULTIPLES = PROBE_MULTIPLES = (1, 2, 4)


def _record(method: str, seed: int = 0) -> dict:
    path = cache.record_path(CACHE, method, seed)
    assert path.is_file(), f"{path} is missing: the committed laptop arena (python -m posenc_lib.arena)"
    return cache.read_record(path)


def _protocol(record: dict) -> ExperimentConfig:
    cfg = cache.record_protocol(record)
    if CACHE == COMMITTED:   # the committed cache is `make arena`'s: the laptop preset's protocol, nothing else
        assert config_differences(record["protocol"], arena_config("laptop").protocol) == []
    return cfg


def _leaves(x, path: str = "") -> dict:
    """{path: value} of the numbers and strings in nested dicts and lists."""
    if isinstance(x, dict):
        return {k: v for key, item in x.items() for k, v in _leaves(item, f"{path}/{key}").items()}
    if isinstance(x, list):
        return {k: v for i, item in enumerate(x) for k, v in _leaves(item, f"{path}/{i}").items()}
    return {path: x}


def _same(got, want, kind: str, record: dict):
    """got == want exactly with the record's torch; else the same keys and every float within TOLERANCE[kind]."""
    if torch.__version__ == record["torch_version"]:
        assert got == want
        return
    flat_got, flat_want = _leaves(got), _leaves(want)
    assert flat_got.keys() == flat_want.keys()
    for key, w in flat_want.items():
        g = flat_got[key]
        assert (abs(g - w) <= TOLERANCE[kind]) if isinstance(w, float) else g == w, (key, g, w)


@pytest.fixture
def record_threads():
    before = torch.get_num_threads()
    yield lambda record: torch.set_num_threads(record["threads"])
    torch.set_num_threads(before)


def _rope_seed0(cfg: ExperimentConfig):
    model, _ = build_arena_model("rope", cfg, 0)
    model.load_state_dict(cache.read_state(CACHE, "rope", 0))
    return model.eval()


def test_an_inference_arm_reproduces_from_the_committed_rope_weights(record_threads):
    record = _record("rerope")
    assert record["kind"] == "inference" and record["world_size"] == 1 and record["device"] == "cpu"
    record_threads(record)
    cfg = _protocol(record)
    valid = load_corpus().valid
    model = _rope_seed0(cfg)
    ends = eval_ends(valid, cfg.train_len * max(cfg.eval_multiples), cfg.eval_windows)
    part = replace(cfg, eval_multiples=INFERENCE_MULTIPLES)
    loss = losses_at_multiples(model, valid, part, ends, within=lambda m: _inference_method(model, "rerope", cfg, m))
    _same(loss, {str(m): record["loss"][str(m)] for m in INFERENCE_MULTIPLES}, "evaluation", record)
    probes, probe = make_probes(valid, cfg), []
    for m in PROBE_MULTIPLES:
        with _inference_method(model, "rerope", cfg, m):
            cells = retrieval_probe(model, valid, replace(cfg, eval_multiples=tuple(sorted({1, m}))), probes)
        probe += [c for c in cells if c["multiple"] == m]
    _same(probe, [c for c in record["probe"] if c["multiple"] in PROBE_MULTIPLES], "evaluation", record)


class _FirstLog(Exception):
    pass


def test_the_first_logged_training_loss_reproduces(record_threads):
    record = _record("rope")
    assert record["kind"] == "training" and record["world_size"] == 1 and record["device"] == "cpu"
    record_threads(record)
    cfg = _protocol(record)
    model, sampler = build_arena_model("rope", cfg, 0)
    assert sampler is None
    losses = []
    model.register_forward_hook(lambda module, args, out: losses.append(out[1].item()))

    def stop(steps):
        raise _FirstLog

    with pytest.raises(_FirstLog):   # the committed run's train_job call, stopped after its first logged point
        train(model, load_corpus().train, seq_len=cfg.train_len, steps=cfg.steps, batch_size=cfg.batch_size,
              lr=cfg.lr, seed=0, warmup=cfg.warmup_steps, min_lr_ratio=cfg.min_lr_ratio,
              weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip, log_every=cfg.log_every, progress=stop)
    assert len(losses) == cfg.log_every
    running = 0.0
    for value in losses:   # train's log: the running sum in step order, then the mean, rounded to 4 decimals
        running = running + value
    _same([cfg.log_every, round(running / len(losses), 4)], record["train_curve"][0], "training", record)


def test_the_committed_table_is_the_table_of_the_committed_records(tmp_path, record_threads):
    """table.json and table.md (with the papers' direction) are what the command writes from the records. With the
    records' thread count: printing.t_quantile's small float64 ops take ~60x longer with 2 threads on 2 busy cores."""
    runs = sorted((CACHE / "runs").glob("*.seed*.json"))
    assert runs, f"{CACHE / 'runs'} holds no record"
    records = {}
    for path in runs:
        record = cache.read_record(path)
        records[record["method"], record["seed"]] = record
    record_threads(record)
    seeds = sorted({seed for _, seed in records})
    write_outputs(tmp_path, arena_table(records, all_methods(), seeds), records)
    for name in ("table.json", "table.md"):
        assert (tmp_path / name).read_text(encoding="utf-8") == (CACHE / name).read_text(encoding="utf-8"), name
    committed = json.loads((CACHE / "table.json").read_text(encoding="utf-8"))
    assert {row["method"] for row in committed["rows"]} == {method for method, _ in records}


def test_the_wheel_ships_every_file_of_the_committed_arena():
    """pyproject's package data (data/ is the wheel's posenc_lib/data/) names every file under data/arena/, so an
    installed wheel reads the committed tables as a clone does (tests/test_wheel.py builds one and looks)."""
    root = Path(__file__).resolve().parents[1]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = {p for pattern in patterns["posenc_lib.data"] for p in (root / "data").glob(pattern) if p.is_file()}
    arena = {p for p in (root / "data" / "arena").rglob("*") if p.is_file()}
    assert arena and arena <= shipped, sorted(str(p) for p in arena - shipped)
