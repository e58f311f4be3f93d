"""The runs of notebooks 07 and 08, spread over worker processes, with their provenance.

One job = one training run (`train_and_evaluate`, `finetune_and_evaluate`) or one evaluation
(`extension_eval`). `run_all` spreads them over `workers` processes with `threads` torch threads
each (default 2 x 1 = 2 cores): on a small model many single-threaded processes beat one
multi-threaded process, and they degrade gracefully on a shared machine (threads of one process
spin-wait on each other when the cores are busy). Each run records its wall and CPU seconds.
"""
from __future__ import annotations

import datetime as _dt
import inspect
import multiprocessing as mp
import os
import platform
import queue as _queue
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from .. import __version__
from .config import ExperimentConfig
from .corpus import Corpus, load_corpus
from .evaluation import eval_ends, evaluate, rope_scaling, with_rope_scaling
from .results import EXTRAPOLATION_FILE, write_results
from .training import build_model, train

# ----------------------------------------------------------------------------------------- the jobs

_CORPUS: Corpus | None = None  # one per process, read on first use
_QUEUE = None                  # a worker's progress queue (None in the main process)


def _corpus() -> Corpus:
    global _CORPUS
    if _CORPUS is None:
        _CORPUS = load_corpus()
    return _CORPUS


def _worker_init(threads: int, progress_queue):
    global _QUEUE
    torch.set_num_threads(threads)
    _QUEUE = progress_queue


def _report(n: int):
    if _QUEUE is not None:
        _QUEUE.put(n)


def _seconds_since(wall: float, cpu: float) -> dict:
    return {"seconds": round(time.perf_counter() - wall, 2), "cpu_seconds": round(time.process_time() - cpu, 2)}


def _evaluate_multiples(model, cfg: ExperimentConfig, ends: torch.Tensor) -> tuple[dict, list]:
    """({"1": loss at L, "2": loss at 2L, ...} over the last L positions, None where the model has no value;
    the mean loss at each position of the longest window it takes)."""
    losses, curve = {}, None
    for mult in sorted(cfg.eval_multiples):
        loss, per_pos = evaluate(model, _corpus().valid, context_len=cfg.train_len * mult, score_len=cfg.train_len,
                                 ends=ends, batch=cfg.eval_batch, per_position=True)
        losses[str(mult)] = None if loss is None else round(loss, 5)
        curve = curve if per_pos is None else per_pos
    return losses, [round(float(v), 4) for v in curve]


def _ends(cfg: ExperimentConfig) -> torch.Tensor:
    return eval_ends(_corpus().valid, cfg.train_len * max(cfg.eval_multiples), cfg.eval_windows)


def train_and_evaluate(encoding: str, seed: int, cfg: ExperimentConfig, keep_state: bool = False, *,
                       progress=None) -> dict:
    """One run of notebook 07: train `encoding` at cfg.train_len with `seed`, evaluate at every multiple,
    and the per-position loss of the longest window it can take (learned: its own length)."""
    corpus = _corpus()
    wall, cpu = time.perf_counter(), time.process_time()
    model = build_model(encoding, cfg, seed)
    curve = train(model, corpus.train, seq_len=cfg.train_len, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr,
                  seed=seed, warmup=cfg.warmup_steps, min_lr_ratio=cfg.min_lr_ratio, weight_decay=cfg.weight_decay,
                  grad_clip=cfg.grad_clip, log_every=cfg.log_every, progress=progress or _report)
    trained = _seconds_since(wall, cpu)
    losses, per_position = _evaluate_multiples(model, cfg, _ends(cfg))
    out = {
        "encoding": encoding, "seed": seed, "loss": losses, "per_position_loss": per_position,
        "train_curve": curve, "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": trained["seconds"], "train_cpu_seconds": trained["cpu_seconds"], **_seconds_since(wall, cpu),
    }
    if keep_state:
        out["state"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return out


def extension_eval(state: dict, seed: int, cfg: ExperimentConfig, label: str = "no fine-tuning",
                   finetune_scaling: dict | None = None) -> dict:
    """Load a trained RoPE state; evaluate it at every multiple with every extension method.

    The factor for a window of n = s * L is s (dynamic: cfg.dynamic_factor, the length does the rest).
    Window ends and scored positions are those of notebook 07. finetune_scaling is recorded only.
    """
    valid = _corpus().valid
    wall, cpu = time.perf_counter(), time.process_time()
    model = build_model("rope", cfg, seed)
    model.load_state_dict(state)
    ends = _ends(cfg)
    table = {}
    for method in cfg.extension_methods:
        table[method] = {}
        for mult in sorted(cfg.eval_multiples):
            with_rope_scaling(model, rope_scaling(method, float(mult), cfg), cfg)
            loss = evaluate(model, valid, context_len=cfg.train_len * mult, score_len=cfg.train_len, ends=ends,
                            batch=cfg.eval_batch)
            table[method][str(mult)] = round(loss, 5)
    return {"seed": seed, "label": label, "finetune_scaling": finetune_scaling, "loss": table,
            **_seconds_since(wall, cpu)}


def finetune_and_evaluate(state: dict, seed: int, cfg: ExperimentConfig, method: str, *, progress=None) -> dict:
    """Fine-tune a trained RoPE model at cfg.finetune_multiple * L with `method`'s scaling, then evaluate it
    with the scaling it was fine-tuned with at every multiple.

    Same tokens per step as pre-training (batch = batch_size * L / (multiple * L)).
    """
    corpus = _corpus()
    wall, cpu = time.perf_counter(), time.process_time()
    mult = cfg.finetune_multiple
    scaling = rope_scaling(method, float(mult), cfg)
    model = with_rope_scaling(build_model("rope", cfg, seed), scaling, cfg)
    model.load_state_dict(state)
    batch = max(1, cfg.batch_size // mult)
    curve = train(model, corpus.train, seq_len=cfg.train_len * mult, steps=cfg.finetune_steps, batch_size=batch,
                  lr=cfg.finetune_lr, seed=1000 + seed, warmup=cfg.finetune_warmup, min_lr_ratio=cfg.min_lr_ratio,
                  weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip, log_every=min(cfg.log_every, 20),
                  progress=progress or _report)
    return {"seed": seed, "method": method, "scaling": scaling, "finetune_len": cfg.train_len * mult,
            "finetune_batch": batch, "train_curve": curve, "loss": _evaluate_multiples(model, cfg, _ends(cfg))[0],
            **_seconds_since(wall, cpu)}


# ------------------------------------------------------------------------------------ orchestration


class _Runner:
    """Runs jobs in `workers` processes (or in this one when workers <= 1) and feeds one tqdm bar."""

    def __init__(self, workers: int, threads: int, total_steps: int, show_progress: bool):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total_steps, unit="step", desc="experiments", disable=not show_progress,
                        smoothing=0.05, dynamic_ncols=True)
        self.pool = self.queue = None
        self.threads_before = torch.get_num_threads()  # this process's, set back by close()
        if workers > 1:
            ctx = mp.get_context("spawn")
            self.queue = ctx.Queue()
            self.pool = ctx.Pool(workers, initializer=_worker_init, initargs=(threads, self.queue))
        else:
            torch.set_num_threads(threads)

    def map(self, fn, argsets: list) -> list:
        if self.pool is None:
            extra = {"progress": self.bar.update} if "progress" in inspect.signature(fn).parameters else {}
            return [fn(*args, **extra) for args in argsets]
        pending = [self.pool.apply_async(fn, args) for args in argsets]
        while not all(p.ready() for p in pending):
            self._drain(timeout=0.5)
        self._drain(timeout=0)
        return [p.get() for p in pending]

    def _drain(self, timeout):
        try:
            n = self.queue.get(timeout=timeout) if timeout else self.queue.get_nowait()
            self.bar.update(n)
            while True:
                self.bar.update(self.queue.get_nowait())
        except _queue.Empty:
            pass

    def close(self):
        self.bar.close()
        torch.set_num_threads(self.threads_before)
        if self.pool is not None:
            self.pool.close()
            self.pool.join()


def provenance(cfg: ExperimentConfig, workers: int, threads: int) -> dict:
    """How a run was made: date (of its start), command, code and library versions, machine, config."""
    commit = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),  # when the run started
        "command": "python -m posenc_lib.experiments " + " ".join(sys.argv[1:]),
        "posenc_lib_version": __version__, "git_commit": commit, "torch_version": torch.__version__,
        "python_version": platform.python_version(), "platform": platform.platform(),
        "cpu_count": os.cpu_count(), "workers": workers, "threads_per_worker": threads,
        "config": asdict(cfg),
    }


def summarize(runs: list, multiples) -> dict:
    """encoding -> multiple -> {"mean", "std", "min", "max", "n"} over seeds (None where a run has no value)."""
    out = {}
    for enc in dict.fromkeys(r["encoding"] for r in runs):
        out[enc] = {}
        for m in multiples:
            vals = [r["loss"][str(m)] for r in runs if r["encoding"] == enc]
            if any(v is None for v in vals):
                out[enc][str(m)] = None
                continue
            t = torch.tensor(vals, dtype=torch.float64)
            out[enc][str(m)] = {"mean": round(float(t.mean()), 5),
                                "std": round(float(t.std()) if len(vals) > 1 else 0.0, 5),
                                "min": round(float(t.min()), 5), "max": round(float(t.max()), 5), "n": len(vals)}
    return out


EXTRAPOLATION_DESCRIPTION = (
    "TinyLM trained at train_len with each positional encoding; loss = mean cross-entropy in nats per "
    "character over the LAST train_len positions of validation windows of multiple * train_len "
    "characters, the windows ending at the same places for every multiple (null: the encoding has no "
    "value at that length, i.e. a learned table past max_len). per_position_loss: mean loss at each "
    "position of the longest window (learned: of a train_len window).")
EXTENSION_DESCRIPTION = (
    "The RoPE models of the extrapolation run, evaluated (same windows, same scored positions) with "
    "each rope_inv_freq scaling at factor = multiple, original_max_position_embeddings = train_len "
    "(dynamic: factor = config.dynamic_factor, seq_len = window length), no fine-tuning ('no_finetune'); "
    "then fine-tuned for finetune_steps at finetune_multiple * train_len with position interpolation "
    "('linear', factor = finetune_multiple) and, as a control, with plain RoPE ('none'), and "
    "evaluated with the scaling they were fine-tuned with ('finetuned').")
FINETUNE_METHODS = ("linear", "none")


def run_all(cfg: ExperimentConfig = ExperimentConfig(), *, out_dir: Path | str | None, workers: int = 2,
            threads: int = 1, show_progress: bool = True, extension: bool = True) -> dict:
    """Run notebook 07's experiment (and 08's unless extension=False); return
    {"extrapolation": ..., "context_extension": ... or None} and, unless out_dir is None, write them
    (and the seed-0 RoPE state) there (`write_results`; the CLI writes to data/). workers <= 1 runs the
    jobs in this process with `threads` torch threads, and sets its thread count back afterwards."""
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)  # fail early if it cannot be made
    corpus = load_corpus()  # fail early (and clearly) if the stdlib files are missing
    prov = provenance(cfg, workers, threads)  # the commit and date of the code that runs, taken now
    start_wall = time.perf_counter()
    jobs = [(enc, seed) for seed in cfg.seeds for enc in cfg.encodings]
    total = len(jobs) * cfg.steps
    if extension:
        total += len(cfg.finetune_seeds) * len(FINETUNE_METHODS) * cfg.finetune_steps
    runner = _Runner(workers, threads, total, show_progress)
    try:
        runs = runner.map(train_and_evaluate, [(enc, seed, cfg, enc == "rope") for enc, seed in jobs])
        states = {r["seed"]: r.pop("state") for r in runs if "state" in r}
        extrapolation = {"kind": "extrapolation", "description": EXTRAPOLATION_DESCRIPTION,
                         "provenance": dict(prov), "corpus": corpus.info, "runs": runs,
                         "summary": summarize(runs, cfg.eval_multiples)}
        extension_result = None
        if extension and "rope" in cfg.encodings:
            evals = runner.map(extension_eval, [(states[s], s, cfg) for s in sorted(states)])
            ft_seeds = [s for s in cfg.finetune_seeds if s in states]
            fts = runner.map(finetune_and_evaluate,
                             [(states[s], s, cfg, m) for s in ft_seeds for m in FINETUNE_METHODS])
            extension_result = {"kind": "context_extension", "description": EXTENSION_DESCRIPTION,
                                "provenance": dict(prov), "corpus": corpus.info, "baseline_from": EXTRAPOLATION_FILE,
                                "no_finetune": evals, "finetuned": fts}
    finally:
        runner.close()
    cpu_runs = sum(r["cpu_seconds"] for r in runs)
    if extension_result is not None:
        cpu_runs += sum(r["cpu_seconds"] for r in extension_result["no_finetune"] + extension_result["finetuned"])
    timing = {"wall_seconds": round(time.perf_counter() - start_wall, 1), "worker_cpu_seconds": round(cpu_runs, 1),
              "estimated_clean_wall_seconds": round(cpu_runs / max(1, min(workers, len(jobs))), 1),
              "note": ("worker_cpu_seconds is the CPU time of the runs (1 thread each); on an idle machine with "
                       "`workers` cores the wall time is about worker_cpu_seconds / workers. A larger wall_seconds "
                       "means the CPU was shared.")}
    results = {"extrapolation": extrapolation, "context_extension": extension_result}
    for result in filter(None, results.values()):
        result["provenance"]["timing_whole_command"] = timing
        result["provenance"]["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    if out_dir is not None:
        write_results(out_dir, results, rope_state=states.get(0) if extension_result is not None else None)
    return results


def live_run(encodings=("alibi",), *, steps: int = 60, batch_size: int = 16, eval_multiples=(1, 4),
             eval_windows: int = 16, seed: int = 0, show_progress: bool = True) -> dict:
    """A small in-process version of the experiment (one thread, nothing written): the pipeline of
    notebook 07 in seconds.

    Returns run_all's "extrapolation" dict (runs, summary, provenance) for these settings.
    """
    cfg = replace(ExperimentConfig(), steps=steps, batch_size=batch_size, encodings=tuple(encodings), seeds=(seed,),
                  eval_multiples=tuple(eval_multiples), eval_windows=eval_windows,
                  warmup_steps=max(1, min(ExperimentConfig.warmup_steps, steps // 5)), log_every=max(1, steps // 6))
    return run_all(cfg, out_dir=None, workers=1, threads=1, show_progress=show_progress,
                   extension=False)["extrapolation"]
