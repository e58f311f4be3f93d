"""Flip-flop language modelling (Liu et al., "Exposing Attention Glitches with Flip-Flop Language Modeling",
arXiv 2306.00946): a task where a fixed positional encoding can fail out of distribution (notebook 14, section 3).

A sequence is a string of instruction-bit pairs over the 5 tokens w r i 0 1:

    w 1 i 0 i 1 r 1 i 0 w 0 i 1 r 0 ...      w = write the bit, r = read (the bit that follows is the last
                                             written one), i = ignore the bit (a distractor)

The first instruction is always w, the last always r; the ones between are i with probability p_ignore and
w or r with (1 - p_ignore) / 2 each; the bits after w and i are fair coin flips. Only the bit after each r is
determined by what came before, so only those bits are scored (the loss masks the rest with IGNORE_INDEX).
To answer, a model must find the most recent w, however far back: a lookup by content AND by recency.

The paper's data: length 512, trained at p_ignore = 0.8, tested in distribution, on sparse sequences
(p_ignore = 0.98: the last write far back) and dense ones (p_ignore = 0.1). Ours: TinyLM trained at a
shorter length (FlipFlopConfig.train_len), tested at that length (in distribution, sparse, dense) and on
longer sequences. Metric: the error rate on the read bits (argmax over the whole vocabulary), and their loss.

    flipflop_batch       sequences, inputs and targets (only read bits scored), from a torch.Generator
    FlipFlopConfig       every setting of the runs (frozen), stored with each record
    train_flipflop_arm   one (encoding, seed) run: `training.fit` (the course's one loop), then every test
    run_flipflop         every arm and seed over worker processes; only the records the cache lacks
    load_flipflop        the cache read back, checked, with its summary over seeds
    retrain_arm          one arm, in this process, one thread (the notebook's retraining cell)

The cache is the arena's (posenc_lib.experiments.record_cache: one home for results), in data/arena/flipflop/:

    runs/<arm>.seed<k>.json         one record per (arm, seed) of FlipFlopConfig(), written atomically as it finishes
    check/runs/<arm>.seed0.json     the same for check_config(FlipFlopConfig()): 30 steps, for exact reproduction
    last_command.json               what the last `make flipflop` made and took

A record that is not complete, or was made with other settings than the ones asked for, is refused (ValueError
naming the file), never overwritten; `--fresh` reruns and rewrites every record.
"""
from __future__ import annotations

import datetime as _dt
import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F

from .. import _checks
from ..i18n import ljust, tr
from ..model import ENCODINGS, IGNORE_INDEX, TinyLM
from ..printing import seed_stats
from . import record_cache
from .paths import data_dir
from .runner import _report, _Runner, provenance
from .training import fit, seeded_tinylm, warmup_cosine_lr

TOKENS = ("w", "r", "i", "0", "1")   # token id = index
WRITE, READ, IGNORE, ZERO, ONE = range(5)
VOCAB = len(TOKENS)
FIXED_ARMS = ("nope", "sinusoidal", "rope", "alibi")
CONTENT_ARMS = ("cope", "fox", "path")   # posenc_lib.content, registered in model.ENCODINGS
SLOW_ARMS = ("path", "cope")              # about 7x and 3x the CPU time per step of the others
FLIPFLOP_DIR = Path("arena") / "flipflop"   # under data/: the arena's cache of this task
CHECK_DIR, LAST_COMMAND = "check", "last_command.json"   # under FLIPFLOP_DIR
TASK = "flipflop"
#: what a record of this task holds (record_cache.HEADER first; "method" is the arm: an encoding's name)
RECORD_KEYS = record_cache.HEADER + ("task", "error", "loss", "reads", "train_curve", "parameters", "threads",
                                     "config", "provenance")
MAKE_FLIPFLOP = "run `make flipflop` (python -m posenc_lib.experiments.flipflop) in a clone of the repository"
#: the paper's three test distributions of the instructions (p_ignore), at its training length
PAPER_P_IGNORE = {"in_distribution": 0.8, "sparse": 0.98, "dense": 0.1}
#: the settings that are the list of jobs, not the settings of one run (left out of each record's config)
JOB_LIST_FIELDS = ("seeds", "encodings")


# ------------------------------------------------------------------------------------------------ the data

def flipflop_batch(batch: int, length: int, p_ignore: float, generator: torch.Generator, *,
                   device=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`batch` flip-flop sequences of `length` tokens (length / 2 instruction-bit pairs), drawn from `generator`
    (on the CPU, then moved: the same sequences on every device).

    Returns (sequences (B, length), inputs (B, length - 1), targets (B, length - 1)): inputs = sequences[:, :-1];
    targets[b, t] = sequences[b, t + 1] where inputs[b, t] is r (the read bit), IGNORE_INDEX elsewhere.
    """
    batch = _checks.positive_int("batch", batch)
    length = _checks.even_int("length", length)
    if length < 4:
        raise ValueError(f"length must be >= 4 (a write pair and a read pair), got {length}")
    p_ignore = _checks.positive_float("p_ignore", p_ignore, inclusive=True)
    if p_ignore >= 1:
        raise ValueError(f"p_ignore must be < 1 (the first and last instructions are w and r, the others i with "
                         f"probability p_ignore), got {p_ignore}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    pairs = length // 2
    u = torch.rand(batch, pairs, generator=generator, device=generator.device)
    p_write = (1 - p_ignore) / 2
    instr = torch.where(u < p_ignore, IGNORE, torch.where(u < p_ignore + p_write, WRITE, READ))   # (B, P)
    instr[:, 0], instr[:, -1] = WRITE, READ
    bits = torch.randint(0, 2, (batch, pairs), generator=generator, device=generator.device)     # (B, P)
    # the last write at or before each pair: a running max of the write's pair index
    pair_idx = torch.arange(pairs, device=generator.device).expand(batch, pairs)
    last_write = torch.where(instr == WRITE, pair_idx, 0).cummax(dim=1).values                  # (B, P)
    bits = torch.where(instr == READ, bits.gather(1, last_write), bits)
    seq = torch.stack([instr, bits + ZERO], dim=2).reshape(batch, length).to(device)            # (B, T)
    inputs = seq[:, :-1]
    targets = torch.where(inputs == READ, seq[:, 1:], IGNORE_INDEX)
    return seq, inputs, targets


def decode_flipflop(seq) -> str:
    """A sequence of token ids as its text, pairs separated by spaces: 'w1 i0 r1'."""
    ids = [int(v) for v in seq]
    if any(v < 0 or v >= VOCAB for v in ids):
        raise ValueError(f"seq must hold token ids in [0, {VOCAB}), got {sorted(set(ids))}")
    return " ".join(TOKENS[a] + TOKENS[b] for a, b in zip(ids[0::2], ids[1::2]))


# ------------------------------------------------------------------------------------------------ the config

@dataclass(frozen=True)
class FlipFlopConfig:
    """Every setting of the flip-flop runs; checked when made and stored in each record (less the job list:
    JOB_LIST_FIELDS). tests: (name, length, p_ignore) each, the sequences drawn from eval_seed + its index."""
    train_len: int = 64             # tokens per training sequence (32 instruction-bit pairs)
    p_ignore: float = 0.8           # the paper's training distribution
    steps: int = 600
    batch_size: int = 32
    lr: float = 3e-3                # 600 steps at 3e-3: the fixed arms reach 0 errors in distribution
    min_lr_ratio: float = 0.1
    warmup_steps: int = 50
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    seeds: tuple = (0, 1, 2)
    encodings: tuple = FIXED_ARMS + CONTENT_ARMS
    tests: tuple = (("in_distribution", 64, 0.8), ("longer", 256, 0.8), ("sparse", 64, 0.98), ("dense", 64, 0.1))
    eval_sequences: int = 512
    eval_batch: int = 128
    eval_seed: int = 12345
    log_every: int = 50

    def __post_init__(self):
        for name in ("steps", "batch_size", "d_model", "num_heads", "num_layers", "eval_sequences", "eval_batch",
                     "log_every"):
            _checks.positive_int(name, getattr(self, name))
        _checks.positive_int("warmup_steps", self.warmup_steps, allow_zero=True)
        _checks.positive_int("eval_seed", self.eval_seed, allow_zero=True)
        if _checks.even_int("train_len", self.train_len) < 4:
            raise ValueError(f"train_len must be >= 4, got {self.train_len}")
        _checks.positive_float("lr", self.lr)
        for name in ("min_lr_ratio", "weight_decay", "grad_clip", "p_ignore"):
            _checks.positive_float(name, getattr(self, name), inclusive=True)
        if self.p_ignore >= 1:
            raise ValueError(f"p_ignore must be < 1, got {self.p_ignore}")
        for seed in self.seeds:
            _checks.positive_int("seeds entries", seed, allow_zero=True)
        unknown = [e for e in self.encodings if e not in ENCODINGS]
        if unknown:
            raise ValueError(f"encodings must be names in posenc_lib.model.ENCODINGS {sorted(ENCODINGS)}, got "
                             f"unknown {unknown}" + (" (the data-dependent ones come with posenc_lib.content)"
                                                     if set(unknown) & set(CONTENT_ARMS) else ""))
        if not self.tests or len({t[0] for t in self.tests}) != len(self.tests):
            raise ValueError(f"tests must be a non-empty tuple of (name, length, p_ignore) with distinct names, "
                             f"got {self.tests!r}")
        for test in self.tests:
            if not (isinstance(test, (tuple, list)) and len(test) == 3 and isinstance(test[0], str)):
                raise TypeError(f"tests entries must be (name: str, length: int, p_ignore: float), got {test!r}")
            if _checks.even_int("tests length", test[1]) < 4:
                raise ValueError(f"tests length must be >= 4, got {test!r}")
            if not 0 <= _checks.positive_float("tests p_ignore", test[2], inclusive=True) < 1:
                raise ValueError(f"tests p_ignore must be in [0, 1), got {test!r}")


def check_config(cfg: FlipFlopConfig) -> FlipFlopConfig:
    """The small config of the cache's reproduction records ("check_runs": every encoding, seed 0): the same
    settings but 30 steps and 64 sequences per test, so a test retrains one in seconds and compares exactly."""
    return replace(cfg, steps=30, warmup_steps=5, log_every=10, eval_sequences=64, seeds=(0,))


def run_settings(cfg: FlipFlopConfig) -> dict:
    """The config of one run as stored in its record (JSON types): every field but the job list."""
    settings = {k: v for k, v in asdict(cfg).items() if k not in JOB_LIST_FIELDS}
    return json.loads(json.dumps(settings))  # tuples -> lists, as the file holds them


def config_from_record(record: dict, **jobs) -> FlipFlopConfig:
    """The FlipFlopConfig a record was made with (jobs: seeds/encodings, default FlipFlopConfig's)."""
    try:
        stored = dict(record["config"])
    except (KeyError, TypeError):
        raise ValueError(f"record must be a flip-flop run record (with 'config'), got {type(record).__name__}") \
            from None
    stored["tests"] = tuple(tuple(t) for t in stored["tests"])
    return FlipFlopConfig(**stored, **jobs)


# ------------------------------------------------------------------------------------------------ one run

def build_flipflop_model(encoding: str, cfg: FlipFlopConfig, seed: int) -> TinyLM:
    """TinyLM over the 5 flip-flop tokens: the same architecture and initial shared weights for every encoding.
    max_len covers the longest test (the sinusoidal table is computed, not learned, at every position)."""
    max_len = max([cfg.train_len] + [t[1] for t in cfg.tests])
    return seeded_tinylm(seed, VOCAB, encoding=encoding, d_model=cfg.d_model, num_heads=cfg.num_heads,
                         num_layers=cfg.num_layers, max_len=max_len)


@torch.no_grad()
def evaluate_flipflop(model: TinyLM, cfg: FlipFlopConfig) -> dict:
    """Every test of cfg.tests on the same sequences for every model: {name: {"error", "loss", "reads",
    "length", "p_ignore"}}; error = share of read bits whose argmax (over all 5 tokens) is wrong, loss = their
    mean cross-entropy (nats)."""
    model.eval()
    device = next(model.parameters()).device
    out = {}
    for index, (name, length, p_ignore) in enumerate(cfg.tests):
        gen = torch.Generator().manual_seed(cfg.eval_seed + index)
        wrong, loss_sum, reads, left = 0, 0.0, 0, cfg.eval_sequences
        while left:
            n = min(left, cfg.eval_batch)
            _, inputs, targets = flipflop_batch(n, length, p_ignore, gen, device=device)
            logits, _ = model(inputs)
            scored = targets != IGNORE_INDEX
            picked, wanted = logits[scored], targets[scored]           # (reads, V), (reads,)
            wrong += int((picked.argmax(-1) != wanted).sum())
            loss_sum += float(F.cross_entropy(picked.float(), wanted, reduction="sum"))
            reads += int(scored.sum())
            left -= n
        out[name] = {"error": round(wrong / reads, 6), "loss": round(loss_sum / reads, 6), "reads": reads,
                     "length": length, "p_ignore": p_ignore}
    return out


def train_flipflop_arm(encoding: str, seed: int, cfg: FlipFlopConfig, *, progress=None) -> dict:
    """One run: TinyLM with `encoding`, seed `seed` (initial weights; training sequences from a generator seeded
    10_000 + seed, the same for every encoding), `fit` with warm-up and cosine decay, then every test.
    Returns the run's record (self-describing: its config, torch threads, timings; run_flipflop adds the
    provenance: code and torch versions, machine)."""
    _checks.choice("encoding", encoding, ENCODINGS)
    seed = _checks.positive_int("seed", seed, allow_zero=True)
    if not isinstance(cfg, FlipFlopConfig):
        raise TypeError(f"cfg must be a FlipFlopConfig, got {type(cfg).__name__}")
    wall, cpu = time.perf_counter(), time.process_time()
    model = build_flipflop_model(encoding, cfg, seed)
    gen = torch.Generator().manual_seed(10_000 + seed)

    def next_batch():
        _, inputs, targets = flipflop_batch(cfg.batch_size, cfg.train_len, cfg.p_ignore, gen)
        return inputs, targets

    curve, running = [], []

    def log(step, loss):
        running.append(loss)
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps:
            curve.append([step + 1, round(sum(running) / len(running), 5)])
            if progress is not None:
                progress(len(running))
            running.clear()

    fit(model, next_batch, steps=cfg.steps, lr=cfg.lr, weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip,
        on_step=log, lr_at=lambda s: warmup_cosine_lr(s, cfg.steps, cfg.lr, cfg.warmup_steps, cfg.min_lr_ratio))
    train_seconds = round(time.process_time() - cpu, 2)
    tests = evaluate_flipflop(model, cfg)
    return {"arena_record": record_cache.RECORD_VERSION, "method": encoding, "seed": seed, "task": TASK,
            **{key: {k: v[key] for k, v in tests.items()} for key in ("error", "loss", "reads")},
            "train_curve": curve, "parameters": sum(p.numel() for p in model.parameters()),
            "threads": torch.get_num_threads(), "train_cpu_seconds": train_seconds,
            "seconds": round(time.perf_counter() - wall, 2), "cpu_seconds": round(time.process_time() - cpu, 2),
            "config": run_settings(cfg)}


def _worker_job(encoding: str, seed: int, cfg: FlipFlopConfig, prov: dict, out_dir: str | None,
                progress=None) -> dict:
    """One run in a worker: its record with the command's provenance, written to out_dir's cache as soon as it
    is done (a crash loses this run at most)."""
    record = {**train_flipflop_arm(encoding, seed, cfg, progress=progress or _report), "provenance": prov}
    if out_dir is not None:
        record_cache.write_record(out_dir, record, RECORD_KEYS)
    return record


# ------------------------------------------------------------------------------------------------ every run

DESCRIPTION = (
    "Flip-flop language modelling (arXiv 2306.00946): sequences of instruction-bit pairs over the tokens "
    "w r i 0 1 (first w, last r, the others i with probability p_ignore, w or r with (1 - p_ignore) / 2 each); "
    "the bit after r is the last written bit. TinyLM (one per encoding, same initial shared weights per seed) "
    "trained on config.train_len tokens at config.p_ignore with the loss on the read bits only; tested on "
    "config.eval_sequences fixed sequences per test (name, length, p_ignore). error = share of read bits "
    "whose argmax over the 5 tokens is wrong; loss = their mean cross-entropy in nats. One record per "
    "(encoding, seed), each with its own config and provenance; summary: seed_stats over seeds.")


def summarize_flipflop(runs: list, key: str = "error") -> dict:
    """{arm: {test: seed_stats of run[key][test] over the arm's runs}} (key: "error" or "loss")."""
    if key not in ("error", "loss"):
        raise ValueError(f"key must be 'error' or 'loss', got {key!r}")
    out = {}
    for arm in dict.fromkeys(r["method"] for r in runs):
        mine = [r for r in runs if r["method"] == arm]
        out[arm] = {test: seed_stats([r[key][test] for r in mine], decimals=6) for test in mine[0][key]}
    return out


def flipflop_table(results: dict, key: str = "error") -> str:
    """The summary as text: one row per encoding, one column per test, "mean ± std" over seeds (error in %,
    2 decimals; loss in nats, 4), the seeds' count in the header."""
    if key not in ("error", "loss"):
        raise ValueError(f"key must be 'error' or 'loss', got {key!r}")
    summary = results["summary" if key == "error" else "loss_summary"]
    tests = [t[0] for t in results["tests"]]
    scale, digits = (100, 2) if key == "error" else (1, 4)
    n = next(iter(next(iter(summary.values())).values()))["n"]
    label = (tr(f"error %, {n} seeds", f"错误率 %，{n} 个种子") if key == "error"
             else tr(f"loss (nats), {n} seeds", f"损失（nats），{n} 个种子"))
    rows = [ljust(label, 22) + "".join(f"{t:>18}" for t in tests)]
    for enc, row in summary.items():
        cells = [f"{scale * row[t]['mean']:.{digits}f} ± {scale * row[t]['std']:.{digits}f}" for t in tests]
        rows.append(f"{enc:<22}" + "".join(f"{c:>18}" for c in cells))
    return "\n".join(rows)


# ------------------------------------------------------------------------------------------------ the cache

def read_flipflop_record(path: Path | str, cfg: FlipFlopConfig) -> dict:
    """One cached record, checked (ValueError naming the file): a complete flip-flop record of the arm and seed
    its name says (record_cache.read_record), made with cfg's run settings."""
    record = record_cache.read_record(path, RECORD_KEYS, what="flip-flop record")
    if record["task"] != TASK:
        raise ValueError(f"{path}: a record of task {record['task']!r}, not {TASK!r}; choose another --out")
    diff = record_cache.field_differences(record["config"], run_settings(cfg))
    if diff:
        raise ValueError(f"{path}: made with other settings ({'; '.join(diff)}); delete it, rerun with --fresh or "
                         f"choose another --out")
    return record


def _cached_runs(out_dir: Path, cfg: FlipFlopConfig) -> dict:
    """{(arm, seed): record} of cfg's runs already in out_dir (each checked by read_flipflop_record)."""
    return record_cache.cached_records(out_dir, cfg.encodings, cfg.seeds, lambda p: read_flipflop_record(p, cfg))


def _in_order(records: dict, cfg: FlipFlopConfig) -> list:
    """The records of cfg's jobs, seed by seed, each in cfg.encodings' order (those the dict holds)."""
    return [records[e, s] for s in cfg.seeds for e in cfg.encodings if (e, s) in records]


def flipflop_results(cfg: FlipFlopConfig, runs: dict, checks: dict, last_command: dict | None) -> dict:
    """What the notebook reads: the runs of cfg and its check config in order, their summaries over seeds (the
    mean, std, min, max of each test's error and loss), the task's description and the last command."""
    runs = _in_order(runs, cfg)
    return {"kind": TASK, "description": DESCRIPTION, "paper": "arXiv 2306.00946",
            "encodings": list(cfg.encodings), "seeds": list(cfg.seeds), "config": run_settings(cfg),
            "tests": [list(t) for t in cfg.tests], "runs": runs,
            "summary": summarize_flipflop(runs), "loss_summary": summarize_flipflop(runs, "loss"),
            "check_runs": _in_order(checks, check_config(cfg)), "last_command": last_command}


def load_flipflop(out_dir: Path | str | None = None, cfg: FlipFlopConfig | None = None) -> dict:
    """The cache in out_dir (default data/arena/flipflop/) read back for cfg (default FlipFlopConfig()): every
    (arm, seed) record and check record, checked (read_flipflop_record), as flipflop_results. A missing record:
    FileNotFoundError naming it and `make flipflop`."""
    cfg = cfg or FlipFlopConfig()
    out = Path(out_dir) if out_dir is not None else data_dir() / FLIPFLOP_DIR
    small = check_config(cfg)
    runs, checks = _cached_runs(out, cfg), _cached_runs(out / CHECK_DIR, small)
    missing = ([record_cache.record_path(out, e, s) for s in cfg.seeds for e in cfg.encodings if (e, s) not in runs]
               + [record_cache.record_path(out / CHECK_DIR, e, 0) for e in cfg.encodings if (e, 0) not in checks])
    if missing:
        raise FileNotFoundError(f"{missing[0]} is missing ({len(missing)} record(s) in all): {MAKE_FLIPFLOP}")
    last = out / LAST_COMMAND
    return flipflop_results(cfg, runs, checks, json.loads(last.read_text(encoding="utf-8")) if last.is_file()
                            else None)


def cached_record(results: dict, encoding: str, seed: int) -> dict:
    """The record of (encoding, seed) in cached results (ValueError naming what the cache holds)."""
    for run in results["runs"]:
        if run["method"] == encoding and run["seed"] == seed:
            return run
    have = sorted({(r["method"], r["seed"]) for r in results["runs"]})
    raise ValueError(f"(encoding, seed) = ({encoding!r}, {seed}) is not in the cache; it holds {have}")


def run_flipflop(cfg: FlipFlopConfig | None = None, *, out_dir: Path | str | None = None, workers: int = 2,
                 threads: int = 1, fresh: bool = False, show_progress: bool = True) -> dict:
    """Every (encoding, seed) of cfg, and every encoding at seed 0 of check_config(cfg), over `workers`
    processes of `threads` torch threads (default 2 x 1); each record is written to out_dir's cache as it is done
    (None: nothing written), then last_command.json (if it made any). A record already there is kept
    (fresh=True: everything rerun and rewritten), so a rerun only fills what is missing; one made with other
    settings is refused (ValueError). Returns flipflop_results."""
    cfg = cfg or FlipFlopConfig()
    workers, threads = _checks.positive_int("workers", workers), _checks.positive_int("threads", threads)
    small = check_config(cfg)
    out = Path(out_dir) if out_dir is not None else None
    check_out = out / CHECK_DIR if out is not None else None
    kept, kept_checks = ({}, {}) if out is None or fresh else (_cached_runs(out, cfg), _cached_runs(check_out, small))
    # the slowest arms first (PaTH, then CoPE: their score edits loop over the sequence), so no worker idles last
    todo = sorted(((e, s) for s in cfg.seeds for e in cfg.encodings if (e, s) not in kept),
                  key=lambda job: SLOW_ARMS.index(job[0]) if job[0] in SLOW_ARMS else len(SLOW_ARMS))
    todo_checks = [e for e in cfg.encodings if (e, 0) not in kept_checks]
    prov = {k: v for k, v in provenance(cfg, workers, threads).items() if k != "config"}
    prov["command"] = "python -m posenc_lib.experiments.flipflop"
    start = time.perf_counter()
    where, check_where = (str(out), str(check_out)) if out is not None else (None, None)
    jobs = ([(_worker_job, (e, s, cfg, prov, where)) for e, s in todo]
            + [(_worker_job, (e, 0, small, prov, check_where)) for e in todo_checks])
    runner = _Runner(workers if len(jobs) > 1 else 1, threads, len(todo) * cfg.steps + len(todo_checks)
                     * small.steps, show_progress)
    try:
        done, _ = runner.run(jobs)
    finally:
        runner.close()
    new, new_checks = done[:len(todo)], done[len(todo):]
    last_command = {**prov, "records_made": len(new), "records_kept": len(kept),
                    "wall_seconds": round(time.perf_counter() - start, 1),
                    "worker_cpu_seconds": round(sum(r["cpu_seconds"] for r in new), 1),
                    "finished_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    if out is not None and done:   # a command that made nothing leaves the last one's account
        text = json.dumps(last_command, indent=1) + "\n"
        record_cache.atomic_write(out / LAST_COMMAND, lambda f: f.write(text.encode("utf-8")))
    return flipflop_results(cfg, {**kept, **{(r["method"], r["seed"]): r for r in new}},
                            {**kept_checks, **{(r["method"], 0): r for r in new_checks}}, last_command)


def retrain_arm(encoding: str = "alibi", seed: int = 0, cfg: FlipFlopConfig | None = None) -> dict:
    """One arm in this process with one torch thread (set back after): the record the cache holds for
    (encoding, seed), made again (the same numbers on the same machine: seeded, single-threaded)."""
    cfg = cfg or FlipFlopConfig()
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train_flipflop_arm(encoding, seed, cfg)
    finally:
        torch.set_num_threads(before)


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m posenc_lib.experiments.flipflop",
                                     description="flip-flop language modelling (notebook 14, section 3)")
    parser.add_argument("--encodings", nargs="+", default=list(FlipFlopConfig.encodings))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(FlipFlopConfig.seeds))
    parser.add_argument("--steps", type=int, default=FlipFlopConfig.steps)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--fresh", action="store_true", help="rerun every record (default: only the missing)")
    parser.add_argument("--out", default=None, help=f"the cache folder (default "
                                                     f"{data_dir(must_exist=False) / FLIPFLOP_DIR})")
    args = parser.parse_args(argv)
    cfg = replace(FlipFlopConfig(), encodings=tuple(args.encodings), seeds=tuple(args.seeds), steps=args.steps)
    out = Path(args.out) if args.out else data_dir(must_exist=False) / FLIPFLOP_DIR
    try:
        res = run_flipflop(cfg, out_dir=out, workers=args.workers, threads=args.threads, fresh=args.fresh)
    except ValueError as err:   # a refused cache file: one line naming it
        raise SystemExit(f"python -m posenc_lib.experiments.flipflop: {err}") from None
    print(f"wrote {out}: {res['last_command']['records_made']} made, {res['last_command']['records_kept']} kept, "
          f"{res['last_command']['wall_seconds']} s")
    for enc, row in res["summary"].items():
        print(f"{enc:>11}: " + "  ".join(f"{t}={v['mean']:.4f}±{v['std']:.4f}" for t, v in row.items()))


if __name__ == "__main__":
    from posenc_lib.experiments import flipflop as _module  # the importable module: workers unpickle its jobs
    _module.main()
