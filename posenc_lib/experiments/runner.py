"""The runs of notebooks 07 and 08, spread over worker processes, with their provenance.

One job = one training run (`train_and_evaluate`: train, evaluate at every multiple, the sliding-window
baseline, the retrieval probe; `finetune_and_evaluate`: one fine-tune arm of 08) or one evaluation
(`extension_eval`). `run_all` spreads them over `workers` processes with `threads` torch threads
each (default 2 x 1 = 2 cores): on a small model many single-threaded processes beat one
multi-threaded process, and they degrade gracefully on a shared machine (threads of one process
spin-wait on each other when the cores are busy). The RoPE runs go first, and the jobs that need
a RoPE model (08's evaluations and fine-tunes) are queued as soon as it exists, so no worker waits
for a stage to finish. Each job is seeded and single-threaded, so its numbers do not depend on which
worker runs it or when. Each run records its wall and CPU seconds, by part.
"""
from __future__ import annotations

import contextlib
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

from .._version import __version__
from ..printing import seed_stats
from ..relative import T5RelativeBias
from .config import ExperimentConfig, probe_length
from .corpus import Corpus, load_corpus
from .evaluation import eval_ends, evaluate_sliding, losses_at_multiples, rope_scaling, set_rope_scaling
from .probe import make_probes, probe_cells, retrieval_probe
from .results import EXTRAPOLATION_FILE, STATE_FILES, write_results
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


def _probe(model, cfg: ExperimentConfig) -> tuple[list, float]:
    """(the retrieval probe's cells, its CPU seconds)."""
    cpu = time.process_time()
    cells = retrieval_probe(model, _corpus().valid, cfg, make_probes(_corpus().valid, cfg))
    return cells, round(time.process_time() - cpu, 2)


def _ends(cfg: ExperimentConfig) -> torch.Tensor:
    return eval_ends(_corpus().valid, cfg.train_len * max(cfg.eval_multiples), cfg.eval_windows)


def train_and_evaluate(encoding: str, seed: int, cfg: ExperimentConfig, keep_state: bool = False, *,
                       progress=None) -> dict:
    """One run of notebook 07: train `encoding` at cfg.train_len with `seed`, evaluate at every multiple,
    the per-position loss of the longest window it can take (learned: its own length), the
    sliding-window baseline (the same characters, each with exactly L of context) and the retrieval probe; a T5 run also
    records its learned bias table ("t5_bias", `t5_bias_table`)."""
    corpus = _corpus()
    wall, cpu = time.perf_counter(), time.process_time()
    model = build_model(encoding, cfg, seed)
    curve = train(model, corpus.train, seq_len=cfg.train_len, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr,
                  seed=seed, warmup=cfg.warmup_steps, min_lr_ratio=cfg.min_lr_ratio, weight_decay=cfg.weight_decay,
                  grad_clip=cfg.grad_clip, log_every=cfg.log_every, progress=progress or _report)
    trained = _seconds_since(wall, cpu)
    ends = _ends(cfg)
    losses, longest = losses_at_multiples(model, corpus.valid, cfg, ends, per_position=True)
    per_position = [round(float(v), 4) for v in longest]   # the longest window the model takes
    sliding_cpu = time.process_time()
    sliding = evaluate_sliding(model, corpus.valid, context_len=cfg.train_len, score_len=cfg.train_len, ends=ends,
                               tokens=cfg.eval_tokens)
    sliding_cpu = round(time.process_time() - sliding_cpu, 2)
    probe, probe_cpu = _probe(model, cfg)
    out = {
        "encoding": encoding, "seed": seed, "loss": losses, "sliding_loss": round(sliding, 5),
        "per_position_loss": per_position, "probe": probe,
        "train_curve": curve, "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": trained["seconds"], "train_cpu_seconds": trained["cpu_seconds"],
        "sliding_cpu_seconds": sliding_cpu, "probe_cpu_seconds": probe_cpu, **_seconds_since(wall, cpu),
    }
    if encoding == "t5":
        out["t5_bias"] = t5_bias_table(model)
    if keep_state:
        out["state"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return out


def t5_bias_table(model) -> list:
    """A T5 TinyLM's learned bias, [bucket][head] (num_buckets x num_heads floats, rounded to 5 decimals):
    the one relative_attention_bias table its layers share (bucket b = t5_relative_bucket of r = key - query)."""
    encoding = getattr(model, "encoding", None)
    if not isinstance(encoding, T5RelativeBias):
        raise TypeError(f"model must be a TinyLM with a T5RelativeBias encoding, got "
                        f"{type(encoding).__name__ if encoding is not None else type(model).__name__}")
    weight = encoding.relative_attention_bias.weight.detach().cpu()  # (num_buckets, num_heads)
    return [[round(float(v), 5) for v in row] for row in weight]


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
        def scaled(mult, method=method):   # the method's RoPE for windows of mult * L (kept until the next one)
            set_rope_scaling(model, rope_scaling(method, float(mult), cfg), cfg)
            return contextlib.nullcontext()
        table[method] = losses_at_multiples(model, valid, cfg, ends, within=scaled)
    return {"seed": seed, "label": label, "finetune_scaling": finetune_scaling, "loss": table,
            **_seconds_since(wall, cpu)}


def finetune_and_evaluate(state: dict, seed: int, cfg: ExperimentConfig, method: str, *, progress=None) -> dict:
    """Fine-tune a trained RoPE model at cfg.finetune_multiple * L with `method`'s scaling (an arm of
    config.FINETUNE_ARMS: "none", "linear", "yarn" at factor finetune_multiple, or "abf": the base raised
    to cfg.abf_base), then evaluate it with the scaling it was fine-tuned with at every multiple, and
    probe it (cfg.probe_on_finetuned).

    Same tokens per step as pre-training (batch = batch_size * L / (multiple * L)); every arm of one
    seed sees the same batches (generator seed 1000 + seed).
    """
    corpus = _corpus()
    wall, cpu = time.perf_counter(), time.process_time()
    mult = cfg.finetune_multiple
    scaling = rope_scaling(method, float(mult), cfg)
    model = set_rope_scaling(build_model("rope", cfg, seed), scaling, cfg)
    model.load_state_dict(state)
    batch = max(1, cfg.batch_size // mult)
    curve = train(model, corpus.train, seq_len=cfg.train_len * mult, steps=cfg.finetune_steps, batch_size=batch,
                  lr=cfg.finetune_lr, seed=1000 + seed, warmup=cfg.finetune_warmup, min_lr_ratio=cfg.min_lr_ratio,
                  weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip, log_every=min(cfg.log_every, 20),
                  progress=progress or _report)
    trained = _seconds_since(wall, cpu)
    loss = losses_at_multiples(model, corpus.valid, cfg, _ends(cfg))
    probe, probe_cpu = _probe(model, cfg) if cfg.probe_on_finetuned else (None, 0.0)
    return {"seed": seed, "method": method, "scaling": scaling, "finetune_len": cfg.train_len * mult,
            "finetune_batch": batch, "train_curve": curve, "loss": loss, "probe": probe,
            "train_cpu_seconds": trained["cpu_seconds"], "probe_cpu_seconds": probe_cpu, **_seconds_since(wall, cpu)}


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

    def _call(self, fn, args):
        extra = {"progress": self.bar.update} if "progress" in inspect.signature(fn).parameters else {}
        return fn(*args, **extra)

    def run(self, jobs: list, follow_up=None) -> tuple[list, dict]:
        """jobs: [(fn, args), ...]; follow_up(result) -> more [(fn, args), ...], queued as soon as that job
        is done (not when all are). Returns (the jobs' results in order, {job index: its follow-ups'
        results in order}); a job's exception is raised here."""
        follow_up = follow_up or (lambda result: [])
        if self.pool is None:
            results = [self._call(fn, args) for fn, args in jobs]
            return results, {i: [self._call(fn, args) for fn, args in follow_up(r)] for i, r in enumerate(results)}
        pending = [self.pool.apply_async(fn, args) for fn, args in jobs]
        followers = {}
        while True:
            for i, job in enumerate(pending):
                if i not in followers and job.ready():
                    followers[i] = [self.pool.apply_async(fn, args) for fn, args in follow_up(job.get())]
            if len(followers) == len(pending) and all(f.ready() for fs in followers.values() for f in fs):
                break
            self._drain(timeout=0.5)
        self._drain(timeout=0)
        return [job.get() for job in pending], {i: [f.get() for f in fs] for i, fs in followers.items()}

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
    commit = dirty = None
    try:
        here = Path(__file__).parent
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
        if commit is not None:  # uncommitted changes to the package: the commit alone does not say what ran
            dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=here.parent,
                                        capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),  # when the run started
        "command": "python -m posenc_lib.experiments " + " ".join(sys.argv[1:]),
        "posenc_lib_version": __version__, "git_commit": commit, "posenc_lib_uncommitted_changes": dirty,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(), "platform": platform.platform(),
        "cpu_count": os.cpu_count(), "workers": workers, "threads_per_worker": threads,
        "config": asdict(cfg),
    }


def summarize(runs: list, multiples, key: str = "encoding") -> dict:
    """runs grouped by run[key] (encoding; a fine-tune's method) -> multiple -> seed_stats of run["loss"]
    (None where a run has no value)."""
    return {group: {str(m): seed_stats([r["loss"][str(m)] for r in runs if r[key] == group]) for m in multiples}
            for group in dict.fromkeys(r[key] for r in runs)}


PROBE_FIELDS = ("loss", "control_loss", "gain", "accuracy", "control_accuracy")


def summarize_probe(runs: list, key: str = "encoding") -> dict:
    """runs grouped by run[key] -> one entry per probe cell: {"multiple", "window", "distance", and
    seed_stats of each of PROBE_FIELDS} over the group's runs."""
    out = {}
    for group in dict.fromkeys(r[key] for r in runs):
        probes = [r["probe"] for r in runs if r[key] == group]
        out[group] = [{**{f: cell[f] for f in ("multiple", "window", "distance")},
                       **{f: seed_stats([p[i][f] for p in probes]) for f in PROBE_FIELDS}}
                      for i, cell in enumerate(probes[0])]
    return out


EXTRAPOLATION_DESCRIPTION = (
    "TinyLM trained at train_len with each positional encoding; loss = mean cross-entropy in nats per "
    "character over the LAST train_len positions of validation windows of multiple * train_len "
    "characters, the windows ending at the same places for every multiple (null: the encoding has no "
    "value at that length, i.e. a learned table past max_len). sliding_loss: the same characters, each "
    "predicted from exactly train_len preceding characters (one window of train_len per character, "
    "scored at its last position). per_position_loss: mean loss at each position of the longest window "
    "(learned: of a train_len window). probe: the retrieval probe (posenc_lib.experiments.probe): a random "
    "string of probe_len (top-level key) lowercase letters written twice into held-out text, the second copy at "
    "the end of a window of multiple * train_len, the first `distance` characters before it; loss/accuracy on the "
    "second copy's characters 2..probe_len, control_* with the first copy replaced by another random "
    "string, gain = control_loss - loss. t5_bias (t5 runs): the learned relative_attention_bias shared by "
    "the layers, [bucket][head]. *_summary: mean/std/min/max over seeds.")
EXTENSION_DESCRIPTION = (
    "The RoPE models of the extrapolation run, evaluated (same windows, same scored positions) with "
    "each rope_inv_freq scaling at factor = multiple, original_max_position_embeddings = train_len "
    "(dynamic: factor = config.dynamic_factor, seq_len = window length), no fine-tuning ('no_finetune'); "
    "then fine-tuned for finetune_steps at finetune_multiple * train_len, every finetune_seeds model in "
    "every arm of finetune_methods with the same batches: 'none' (plain RoPE), 'linear' (position "
    "interpolation, factor = finetune_multiple), 'yarn' (factor = finetune_multiple), 'abf' (plain RoPE "
    "with the base raised to abf_base); each evaluated with the scaling it was fine-tuned with, and "
    "probed ('finetuned'). finetuned_summary / finetuned_probe_summary: mean/std/min/max over seeds.")


def _timing(wall: float, runs: list, evals: list, fts: list, workers: int, jobs: int) -> dict:
    """The whole command's wall time and its workers' CPU seconds, in total and by part."""
    def total(items, key="cpu_seconds"):
        return round(sum(r.get(key, 0.0) for r in items), 1)

    cpu = total(runs) + total(evals) + total(fts)
    parts = {"pretraining": total(runs, "train_cpu_seconds"), "sliding_baseline": total(runs, "sliding_cpu_seconds"),
             "probe": round(total(runs, "probe_cpu_seconds") + total(fts, "probe_cpu_seconds"), 1),
             "extension_eval": total(evals), "finetune": total(fts, "train_cpu_seconds")}
    parts["evaluation_at_every_multiple"] = round(cpu - sum(parts.values()), 1)
    return {"wall_seconds": round(wall, 1), "worker_cpu_seconds": round(cpu, 1),
            "estimated_clean_wall_seconds": round(cpu / max(1, min(workers, jobs)), 1),
            "cpu_seconds_by_part": parts,
            "note": ("worker_cpu_seconds is the CPU time of the runs (1 thread each); on an idle machine with "
                     "`workers` cores the wall time is about worker_cpu_seconds / workers. A larger wall_seconds "
                     "means the CPU was shared.")}


def run_all(cfg: ExperimentConfig = ExperimentConfig(), *, out_dir: Path | str | None, workers: int = 2,
            threads: int = 1, show_progress: bool = True, extension: bool = True) -> dict:
    """Run notebook 07's experiment (and 08's unless extension=False); return
    {"extrapolation": ..., "context_extension": ... or None} and, unless out_dir is None, write them
    (and the seed-0 RoPE state) there (`write_results`; the CLI writes to data/). workers <= 1 runs the
    jobs in this process with `threads` torch threads, and sets its thread count back afterwards."""
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)  # fail early if it cannot be made
    corpus = load_corpus()  # fail early (and clearly) if data/corpus_stdlib.json.gz is missing
    prov = provenance(cfg, workers, threads)  # the commit and date of the code that runs, taken now
    start_wall = time.perf_counter()
    extension = extension and "rope" in cfg.encodings
    # RoPE first: 08's jobs need its models and are queued as soon as each exists
    order = sorted(cfg.encodings, key=lambda e: e != "rope")
    jobs = [(enc, seed) for enc in order for seed in cfg.seeds]
    ft_seeds = [s for s in cfg.finetune_seeds if s in cfg.seeds] if extension else []
    total = len(jobs) * cfg.steps + len(ft_seeds) * len(cfg.finetune_methods) * cfg.finetune_steps

    def follow_up(run):  # a trained RoPE model -> its evaluation with every method, its fine-tunes
        if not extension or run["encoding"] != "rope":
            return []
        state, seed = run["state"], run["seed"]
        return [(extension_eval, (state, seed, cfg))] + [
            (finetune_and_evaluate, (state, seed, cfg, m)) for m in (cfg.finetune_methods if seed in ft_seeds else ())]

    runner = _Runner(workers, threads, total, show_progress)
    try:
        # the RoPE runs keep their weights (their fine-tunes start from them); seed-0 sinusoidal's is shipped too
        done, followers = runner.run([(train_and_evaluate, (enc, seed, cfg, enc == "rope" or (
            enc in STATE_FILES and seed == 0))) for enc, seed in jobs], follow_up)
    finally:
        runner.close()
    by_job = dict(zip(jobs, done))
    runs = [by_job[enc, seed] for seed in cfg.seeds for enc in cfg.encodings]  # seed by seed, as configured
    states = {(r["encoding"], r["seed"]): r.pop("state") for r in runs if "state" in r}
    evals = sorted((f for i, fs in followers.items() for f in fs if "label" in f), key=lambda e: e["seed"])
    fts = sorted((f for i, fs in followers.items() for f in fs if "method" in f),
                 key=lambda f: (f["seed"], cfg.finetune_methods.index(f["method"])))
    extrapolation = {"kind": "extrapolation", "description": EXTRAPOLATION_DESCRIPTION,
                     "provenance": dict(prov), "corpus": corpus.info, "runs": runs,
                     "summary": summarize(runs, cfg.eval_multiples),
                     "sliding_summary": {enc: seed_stats([r["sliding_loss"] for r in runs if r["encoding"] == enc])
                                         for enc in cfg.encodings},
                     "probe_summary": summarize_probe(runs), "probe_len": probe_length(cfg),
                     "probe_cells": [list(c) for c in probe_cells(cfg)]}
    extension_result = None
    if extension:
        extension_result = {"kind": "context_extension", "description": EXTENSION_DESCRIPTION,
                            "provenance": dict(prov), "corpus": corpus.info, "baseline_from": EXTRAPOLATION_FILE,
                            "no_finetune": evals, "finetuned": fts, "probe_len": probe_length(cfg),
                            "finetuned_summary": summarize(fts, cfg.eval_multiples, key="method") if fts else {},
                            "finetuned_probe_summary": (summarize_probe(fts, key="method")
                                                        if fts and cfg.probe_on_finetuned else {})}
    timing = _timing(time.perf_counter() - start_wall, runs, evals, fts, workers, len(jobs))
    results = {"extrapolation": extrapolation, "context_extension": extension_result}
    for result in filter(None, results.values()):
        result["provenance"]["timing_whole_command"] = timing
        result["provenance"]["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    if out_dir is not None:
        write_results(out_dir, results, {enc: states[enc, 0] for enc in STATE_FILES if (enc, 0) in states
                                         and (enc != "rope" or extension_result is not None)})
    return results


def live_run(encodings=("alibi",), *, steps: int = 60, batch_size: int = 16, eval_multiples=(1, 4),
             eval_windows: int = 16, seed: int = 0, show_progress: bool = True) -> dict:
    """A small in-process version of the experiment (one thread, nothing written): the pipeline of
    notebook 07 in seconds.

    Returns run_all's "extrapolation" dict (runs, summary, provenance) for these settings; the retrieval
    probe uses `eval_windows` probes per cell.
    """
    cfg = replace(ExperimentConfig(), steps=steps, batch_size=batch_size, encodings=tuple(encodings), seeds=(seed,),
                  eval_multiples=tuple(eval_multiples), eval_windows=eval_windows, probe_windows=eval_windows,
                  warmup_steps=max(1, min(ExperimentConfig.warmup_steps, steps // 5)), log_every=max(1, steps // 6))
    return run_all(cfg, out_dir=None, workers=1, threads=1, show_progress=show_progress,
                   extension=False)["extrapolation"]
