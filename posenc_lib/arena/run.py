"""The arena's runs under notebook 07's protocol, and the command's plan: what is missing, in what order.

    training method, seed:   build (arena_methods.build_arena_model), train at L (experiments.training.train, the
                             method's position sampler; DDP's shard under torchrun), then `measure`
    inference method, seed:  the trained RoPE model of the same seed (its weights from the cache's states/), the
                             method put on at each length's factor, then `measure`; no training
    measure:                 loss at L, 2L, 4L, 8L on the last L characters of windows ending at the same places;
                             the exactly-L sliding baseline; the retrieval probe (experiments.evaluation, .probe)

Jobs run in `workers` processes (experiments.runner's pool and progress bar) or, under torchrun, in every rank in
the same order. Each finished run writes its record at once (cache.write_record), so a crash loses only the runs
in progress.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import platform
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from .._version import __version__
from ..experiments import runner as _runner
from ..experiments.arena_methods import ARENA_METHODS, build_arena_model, use_inference_method
from ..experiments.config import ExperimentConfig, probe_length
from ..experiments.corpus import Corpus, load_corpus, load_text_folder
from ..experiments.evaluation import eval_ends, evaluate_sliding, losses_at_multiples
from ..experiments.probe import make_probes, probe_cells, retrieval_probe
from ..experiments.training import train
from . import cache, distributed
from .presets import ArenaConfig

_CORPORA: dict = {}   # one per process and folder, read on first use


def corpus_of(arena: ArenaConfig) -> Corpus:
    """The arena's text: 07's shipped corpus, or arena.corpus's folder of text files."""
    if arena.corpus not in _CORPORA:
        _CORPORA[arena.corpus] = load_corpus() if arena.corpus is None else load_text_folder(arena.corpus)
    return _CORPORA[arena.corpus]


# ------------------------------------------------------------------------------------------------ measuring
@contextlib.contextmanager
def _inference_method(model, name: str | None, cfg: ExperimentConfig, factor: float):
    """With inference method `name` on `model` for windows of factor * L (None: the model as trained)."""
    if name is None:
        yield
        return
    previous = use_inference_method(name, model, cfg, factor)
    model.to(model.token_embedding.weight.device)
    try:
        yield
    finally:
        model.replace_encoding(previous)


def measure(model, valid: torch.Tensor, cfg: ExperimentConfig, inference: str | None = None) -> dict:
    """07's measurements of a trained model: {"loss": {"1": .., "2": .., ...}, "sliding_loss", "probe": [cells]}.
    inference: an inference method's name, put on for each window of m * L with factor m (the sliding baseline and
    the probe's cells too: factor 1 for windows of L)."""
    L = cfg.train_len
    ends = eval_ends(valid, L * max(cfg.eval_multiples), cfg.eval_windows)
    probes = make_probes(valid, cfg)
    loss = losses_at_multiples(model, valid, cfg, ends, within=lambda m: _inference_method(model, inference, cfg, m))
    with _inference_method(model, inference, cfg, 1):
        sliding = evaluate_sliding(model, valid, context_len=L, score_len=L, ends=ends, tokens=cfg.eval_tokens)
    if inference is None:
        probe = retrieval_probe(model, valid, cfg, probes)
    else:   # each window length's cells with the method put on for its factor
        probe = []
        for m in sorted(cfg.eval_multiples):
            with _inference_method(model, inference, cfg, m):
                cells = retrieval_probe(model, valid, replace(cfg, eval_multiples=tuple(sorted({1, m}))), probes)
            probe += [c for c in cells if c["multiple"] == m]
    return {"loss": loss, "sliding_loss": None if sliding is None else round(sliding, 5), "probe": probe}


def eval_units(cfg: ExperimentConfig, inference: bool = False) -> int:
    """A measurement's cost in training steps, for the progress bar's time left: the characters it reads
    forward, over a step's (batch x L, forward and backward) times EVAL_STEP_RATIO (calibrated on 2 CPU cores)."""
    L, W = cfg.train_len, cfg.eval_windows
    chars = W * L * sum(cfg.eval_multiples) + W * L * L   # the windows of m * L; the sliding windows
    windows = [m * L for m, _ in probe_cells(cfg)]
    chars += 2 * cfg.probe_windows * (sum(windows) + (len(cfg.eval_multiples) * 2 * L if inference else 0))
    return max(1, round(EVAL_STEP_RATIO * chars / (3 * cfg.batch_size * L)))


EVAL_STEP_RATIO = 2.0   # measured on 2 cores: 1.8 (laptop sizes) to 2.2 (quick); ReRoPE-like methods ~3


# ------------------------------------------------------------------------------------------------ the jobs
def _device_text(text: torch.Tensor, device: str) -> torch.Tensor:
    return text if device == "cpu" else text.to(device)


def _record(method: str, seed: int, arena: ArenaConfig, measured: dict, **extra) -> dict:
    cfg, corpus, dist = arena.protocol, corpus_of(arena), distributed.current()
    spec = ARENA_METHODS[method]
    return {"arena_record": cache.RECORD_VERSION, "method": method, "kind": spec.kind, "seed": seed,
            "base": spec.base, "paper": spec.paper, "note": spec.note, "preset": arena.preset,
            "protocol": asdict(cfg), "corpus_sha256": corpus.info["text_sha256"], "corpus": corpus.info["source"],
            **measured, "probe_len": probe_length(cfg), **extra,
            "posenc_lib_version": __version__, "torch_version": torch.__version__,
            "python_version": platform.python_version(), "threads": torch.get_num_threads(),
            "world_size": dist.world, "device": dist.device,
            "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def train_job(method: str, seed: int, arena: ArenaConfig, out_dir: str, write: bool = True, keep_state: bool = False,
              *, progress=None) -> dict:
    """Train training method `method` with `seed` (DDP under torchrun), measure it, write its record (unless
    write=False: its record exists, only its weights are wanted) and, with keep_state, its weights."""
    cfg, corpus, dist = arena.protocol, corpus_of(arena), distributed.current()
    progress = progress or _runner._report
    wall, cpu = time.perf_counter(), time.process_time()
    model, sampler = build_arena_model(method, cfg, seed)
    model.to(dist.device)
    curve = train(distributed.wrap(model, dist), _device_text(corpus.train, dist.device), seq_len=cfg.train_len,
                  steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, seed=seed, warmup=cfg.warmup_steps,
                  min_lr_ratio=cfg.min_lr_ratio, weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip,
                  log_every=cfg.log_every, progress=progress, position_sampler=sampler, shard=dist.shard)
    train_seconds, train_cpu = time.perf_counter() - wall, time.process_time() - cpu
    if dist.rank == 0:
        if write:
            measure_cpu = time.process_time()
            measured = measure(model, _device_text(corpus.valid, dist.device), cfg)
            measure_cpu = time.process_time() - measure_cpu
            budget = {"steps": cfg.steps, "batch_size": cfg.batch_size, "train_len": cfg.train_len,
                      "characters": cfg.steps * cfg.batch_size * cfg.train_len}
            cache.write_record(out_dir, _record(
                method, seed, arena, measured, budget=budget, train_curve=curve,
                parameters=sum(p.numel() for p in model.parameters()), train_seconds=round(train_seconds, 2),
                train_cpu_seconds=round(train_cpu, 2), measure_cpu_seconds=round(measure_cpu, 2),
                seconds=round(time.perf_counter() - wall, 2), cpu_seconds=round(time.process_time() - cpu, 2)))
        if keep_state:
            cache.write_state(out_dir, method, seed, model.state_dict())
    progress(eval_units(cfg))
    distributed.barrier(dist)
    return {"method": method, "seed": seed, "train_curve": curve}


def inference_job(method: str, seed: int, arena: ArenaConfig, out_dir: str, *, progress=None) -> dict:
    """Measure inference method `method` on the cached trained model of its base, same seed (rank 0 only)."""
    cfg, corpus, dist = arena.protocol, corpus_of(arena), distributed.current()
    progress = progress or _runner._report
    if dist.rank == 0:
        wall, cpu = time.perf_counter(), time.process_time()
        base = ARENA_METHODS[method].base
        model, _ = build_arena_model(base, cfg, seed)
        model.load_state_dict(cache.read_state(out_dir, base, seed))
        model.to(dist.device).eval()
        measured = measure(model, _device_text(corpus.valid, dist.device), cfg, inference=method)
        cache.write_record(out_dir, _record(method, seed, arena, measured,
                                            budget={"steps": 0, "trained_model": f"{base} seed {seed}"},
                                            seconds=round(time.perf_counter() - wall, 2),
                                            cpu_seconds=round(time.process_time() - cpu, 2)))
    progress(eval_units(cfg, inference=True))
    return {"method": method, "seed": seed}


# ------------------------------------------------------------------------------------------------ the plan
def plan(arena: ArenaConfig, done: set, states: set) -> dict:
    """What a run must do, given the (method, seed) pairs with a record (`done`) and with cached weights
    (`states`): {"train": [(method, seed, write, keep_state)], "infer_now": [(method, seed)],
    "infer_after": {(base, seed): [method, ...]}}. An inference method whose base has no cached weights waits for
    its base's training (which is added, with write=False when the base's record exists)."""
    wanted = [(m, s) for m in arena.methods for s in arena.seeds if (m, s) not in done]
    infer = [(m, s) for m, s in wanted if ARENA_METHODS[m].kind == "inference"]
    bases = {(ARENA_METHODS[m].base, s) for m, s in infer}
    train_pairs = [(m, s) for m, s in wanted if ARENA_METHODS[m].kind == "training"]
    train_pairs += sorted(b for b in bases - states if b not in train_pairs)
    # the bases first: their inference methods start as soon as each is trained
    train_pairs.sort(key=lambda pair: pair not in bases)
    jobs = [(m, s, (m, s) not in done, (m, s) in bases and (m, s) not in states) for m, s in train_pairs]
    after: dict = {}
    for m, s in infer:
        base = (ARENA_METHODS[m].base, s)
        if base not in states:
            after.setdefault(base, []).append(m)
    return {"train": jobs, "infer_now": [(m, s) for m, s in infer if (ARENA_METHODS[m].base, s) in states],
            "infer_after": after}


def plan_units(arena: ArenaConfig, todo: dict) -> int:
    cfg = arena.protocol
    inferences = len(todo["infer_now"]) + sum(len(v) for v in todo["infer_after"].values())
    return len(todo["train"]) * (cfg.steps + eval_units(cfg)) + inferences * eval_units(cfg, inference=True)


def run_arena(arena: ArenaConfig, out_dir: Path | str, *, workers: int = 2, threads: int = 1,
              show_progress: bool = True) -> dict:
    """Fill the cache in `out_dir` with every missing run of arena.methods x arena.seeds; returns {(method, seed):
    record} of all of them and of the trained models the inference methods use (on rank 0; {} on the other ranks).
    Under torchrun every rank runs the same plan (rank 0's), one process each."""
    dist = distributed.current()
    corpus = corpus_of(arena)   # fail early (and clearly) on a missing corpus
    sha = corpus.info["text_sha256"]
    bases = sorted({ARENA_METHODS[n].base for n in arena.methods} - {None})
    known = tuple(arena.methods) + tuple(b for b in bases if b not in arena.methods)   # a base's record is kept
    todo = None
    if dist.rank == 0:
        done = set(cache.cached_records(out_dir, known, arena.seeds, protocol=arena.protocol, corpus_sha256=sha))
        states = {(m, s) for m in bases for s in arena.seeds if cache.state_path(out_dir, m, s).is_file()}
        todo = plan(arena, done, states)
    todo = distributed.from_rank0(todo, dist)
    if dist.world > 1 or dist.device != "cpu":
        workers = 1
    out = str(out_dir)
    pool = _runner._Runner(workers, threads, plan_units(arena, todo), show_progress and dist.rank == 0)
    pool.bar.set_description(f"arena {arena.preset}")
    after = todo["infer_after"]

    def follow_up(result):
        return [(inference_job, (m, result["seed"], arena, out)) for m in after.get((result["method"],
                                                                                     result["seed"]), ())]
    try:
        pool.run([(train_job, (m, s, arena, out, write, keep)) for m, s, write, keep in todo["train"]]
                 + [(inference_job, (m, s, arena, out)) for m, s in todo["infer_now"]], follow_up)
    finally:
        pool.close()
    distributed.barrier(dist)
    if dist.rank != 0:
        return {}
    return cache.cached_records(out_dir, known, arena.seeds, protocol=arena.protocol, corpus_sha256=sha)
