"""Train short, test long: the experiment behind notebooks 07 (extrapolation) and 08 (context extension).

    python -m posenc_lib.experiments            # everything (07 and 08), writes data/experiments_*.json
    python -m posenc_lib.experiments --quick    # a smoke run (few steps), written to /tmp unless --out is given

Corpus: the Python standard library's own .py sources (found with `sysconfig`), a FIXED list of
modules present in every CPython >= 3.10 (`CORPUS_FILES`; a missing file is a clear error). The text
differs a little between Python versions, so the results record the file list's hash, the text's
hash and its character count. Character-level vocabulary: ASCII code points 0..127 are ids 0..127,
every other character is the single unknown id 128 (`VOCAB_SIZE` = 129). `VALID_FILES` are held out.

Model: `TinyLM` (2 layers, d_model 64, 4 heads), identical for every encoding except the encoding
(NoPE, sinusoidal, learned, T5 bias, RoPE, ALiBi). Trained on windows of L = 64 characters, then
evaluated on windows of L, 2L, 4L, 8L that all END at the same places of the held-out text, scoring
only the LAST L positions of each window: the predicted characters are identical at every length,
only the positions they sit at (and how much context precedes them) change. A learned table has no
row past L, so its longer-window losses are None (null in JSON), not a number.

Context extension (notebook 08): the RoPE models are re-evaluated at 2L..8L with each
`rope_inv_freq` scaling (no fine-tuning), then fine-tuned briefly at 4L with position interpolation
(and, as a control, with plain RoPE) and evaluated again.

Compute: jobs (one training run each) are spread over `workers` processes with `threads` torch
threads each (default 2 x 1 = 2 cores). On a small model many single-threaded processes beat one
multi-threaded process, and they degrade gracefully on a shared machine (threads of one process
spin-wait on each other when the cores are busy). Each run records its wall and CPU seconds.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import inspect
import json
import math
import multiprocessing as mp
import os
import platform
import queue as _queue
import subprocess
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from . import __version__
from .absolute import LearnedEncoding
from .attention import PositionalEncoding
from .model import TinyLM, make_encoding

# --------------------------------------------------------------------------------------------- corpus

#: stdlib modules (paths relative to sysconfig.get_paths()['stdlib']) that exist as single files in
#: every CPython 3.10 .. 3.14 (none of them became a package or was removed), sorted.
CORPUS_FILES = (
    "argparse.py", "ast.py", "base64.py", "bisect.py", "calendar.py", "colorsys.py", "configparser.py",
    "contextlib.py", "copy.py", "csv.py", "dataclasses.py", "datetime.py", "difflib.py", "enum.py",
    "fnmatch.py", "fractions.py", "ftplib.py", "functools.py", "getopt.py", "gettext.py", "glob.py",
    "gzip.py", "heapq.py", "hmac.py", "inspect.py", "ipaddress.py", "keyword.py", "linecache.py",
    "locale.py", "mailbox.py", "numbers.py", "operator.py", "optparse.py", "pickle.py", "pprint.py",
    "queue.py", "quopri.py", "random.py", "reprlib.py", "sched.py", "secrets.py", "selectors.py",
    "shlex.py", "shutil.py", "smtplib.py", "socket.py", "statistics.py", "string.py", "subprocess.py",
    "tarfile.py", "tempfile.py", "textwrap.py", "threading.py", "timeit.py", "token.py", "tokenize.py",
    "trace.py", "traceback.py", "types.py", "typing.py", "uuid.py", "warnings.py", "weakref.py",
)
#: held out for validation (about 10% of the characters); the rest is training text
VALID_FILES = ("calendar.py", "csv.py", "fractions.py", "gzip.py", "heapq.py", "pprint.py", "queue.py",
               "shlex.py", "string.py", "textwrap.py")
VOCAB_SIZE = 129
UNK_ID = 128
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
EXTRAPOLATION_FILE = "experiments_extrapolation.json"
EXTENSION_FILE = "experiments_context_extension.json"
ROPE_STATE_FILE = "experiments_rope_L64_seed0.pt"
EXPERIMENT_ENCODINGS = ("nope", "sinusoidal", "learned", "t5", "rope", "alibi")
EXTENSION_METHODS = ("none", "linear", "ntk", "dynamic", "yarn", "llama3")


def encode(text: str) -> torch.Tensor:
    """Characters -> int64 ids: ord(c) for ASCII, UNK_ID (128) for anything else."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    raw = torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32).to(torch.int64)
    return torch.where(raw < 128, raw, torch.full_like(raw, UNK_ID))


def decode(ids) -> str:
    """int ids -> text; the unknown id becomes '?' ."""
    return "".join(chr(i) if 0 <= i < 128 else "?" for i in torch.as_tensor(ids).tolist())


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_paths(root: Path | None = None) -> list[Path]:
    """The absolute paths of CORPUS_FILES; FileNotFoundError listing every missing file."""
    root = stdlib_dir() if root is None else Path(root)
    paths = [root / name for name in CORPUS_FILES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"the experiment's corpus needs these Python standard-library files, missing under "
                                f"{root}: {missing} (is this a full CPython >= 3.10 install?)")
    return paths


@dataclass
class Corpus:
    train: torch.Tensor  # (n_train,) int64 ids
    valid: torch.Tensor  # (n_valid,) int64 ids
    info: dict           # provenance: files, hashes, character counts, python version


def load_corpus(root: Path | None = None) -> Corpus:
    """Read CORPUS_FILES (files joined by a newline, in list order), split off VALID_FILES."""
    texts = {p.name: p.read_text(encoding="utf-8") for p in corpus_paths(root)}
    train_text = "\n".join(texts[n] for n in CORPUS_FILES if n not in VALID_FILES)
    valid_text = "\n".join(texts[n] for n in CORPUS_FILES if n in VALID_FILES)
    whole = "\n".join(texts[n] for n in CORPUS_FILES)
    info = {
        "source": "Python standard library .py files, sysconfig.get_paths()['stdlib']",
        "python": platform.python_version(),
        "files": list(CORPUS_FILES),
        "valid_files": list(VALID_FILES),
        "file_list_sha256": hashlib.sha256("\n".join(CORPUS_FILES).encode()).hexdigest(),
        "text_sha256": hashlib.sha256(whole.encode("utf-8")).hexdigest(),
        "chars": len(whole),
        "train_chars": len(train_text),
        "valid_chars": len(valid_text),
        "non_ascii_chars": sum(ord(c) >= 128 for c in whole),
        "vocab": "ASCII 0..127 -> ids 0..127, other characters -> 128",
    }
    return Corpus(encode(train_text), encode(valid_text), info)


# ------------------------------------------------------------------------------------------- config


@dataclass(frozen=True)
class ExperimentConfig:
    """Every setting of a run; stored with the results."""
    train_len: int = 64
    steps: int = 1000             # issue: ~1500; at the measured ~75-85 ms CPU/step, 1200 steps came to ~15.7 min
    batch_size: int = 32
    lr: float = 1e-2
    min_lr_ratio: float = 0.1      # cosine decay from lr to lr * min_lr_ratio
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    seeds: tuple = (0, 1, 2)
    encodings: tuple = EXPERIMENT_ENCODINGS
    eval_multiples: tuple = (1, 2, 4, 8)
    eval_windows: int = 128        # windows per length (same end points at every length)
    eval_batch: int = 32
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    t5_num_buckets: int = 32
    t5_max_distance: int = 64      # = train_len, so every bucket is trained (T5: 128 < its 512 training length)
    log_every: int = 50
    # context extension (notebook 08)
    extension_methods: tuple = EXTENSION_METHODS
    dynamic_factor: float = 2.0    # dynamic NTK is deployed with one fixed factor; the length does the rest
    llama3_low_freq_factor: float = 1.0
    llama3_high_freq_factor: float = 4.0
    finetune_multiple: int = 4     # fine-tune at finetune_multiple * train_len
    finetune_steps: int = 200
    finetune_lr: float = 1e-3
    finetune_warmup: int = 20
    finetune_seeds: tuple = (0,)

    def __post_init__(self):
        for name in ("train_len", "steps", "batch_size", "eval_windows", "eval_batch", "log_every",
                     "finetune_multiple", "finetune_steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        unknown = [e for e in self.encodings if e not in EXPERIMENT_ENCODINGS]
        if unknown:
            raise ValueError(f"encodings must be among {list(EXPERIMENT_ENCODINGS)}, got unknown {unknown}")
        bad = [m for m in self.extension_methods if m not in EXTENSION_METHODS]
        if bad:
            raise ValueError(f"extension_methods must be among {list(EXTENSION_METHODS)}, got unknown {bad}")
        if 1 not in self.eval_multiples:
            raise ValueError(f"eval_multiples must include 1 (the training length), got {self.eval_multiples}")


# ------------------------------------------------------------------------------------- train / eval


def build_model(encoding: str, cfg: ExperimentConfig, seed: int) -> TinyLM:
    """The experiment's TinyLM: the same architecture and the same init seed for every encoding."""
    torch.manual_seed(seed)
    kwargs = {}
    if encoding == "t5":
        kwargs = {"num_buckets": cfg.t5_num_buckets, "max_distance": cfg.t5_max_distance}
    return TinyLM(VOCAB_SIZE, encoding=encoding, d_model=cfg.d_model, num_heads=cfg.num_heads,
                  num_layers=cfg.num_layers, max_len=cfg.train_len, **kwargs)


def _lr_at(step: int, total: int, lr: float, warmup: int, min_ratio: float) -> float:
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def train(model: TinyLM, data: torch.Tensor, *, seq_len: int, steps: int, batch_size: int, lr: float,
          seed: int, warmup: int = 100, min_lr_ratio: float = 0.1, weight_decay: float = 0.01,
          grad_clip: float = 1.0, log_every: int = 50, progress=None) -> list:
    """AdamW on random windows of `seq_len + 1` ids from `data`; returns [[step, mean loss], ...].

    The windows come from a generator seeded with `seed`, so two encodings trained with the same
    seed see exactly the same batches. progress(n) is called with the number of steps just done.
    """
    if data.numel() <= seq_len + 1:
        raise ValueError(f"data has {data.numel()} ids, too few for windows of seq_len + 1 = {seq_len + 1}")
    gen = torch.Generator().manual_seed(10_000 + seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    offsets = torch.arange(seq_len + 1)
    model.train()
    curve, running, count = [], 0.0, 0
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, steps, lr, warmup, min_lr_ratio)
        starts = torch.randint(0, data.numel() - seq_len - 1, (batch_size,), generator=gen)
        batch = data[starts[:, None] + offsets]  # (B, T + 1)
        _, loss = model(batch[:, :-1], batch[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        running += loss.item()
        count += 1
        if (step + 1) % log_every == 0 or step + 1 == steps:
            curve.append([step + 1, round(running / count, 4)])
            running, count = 0.0, 0
            if progress is not None:
                progress(step + 1 - (curve[-2][0] if len(curve) > 1 else 0))
    model.eval()
    return curve


def eval_ends(valid: torch.Tensor, longest: int, windows: int) -> torch.Tensor:
    """`windows` evenly spaced end indices e (window = valid[e - n : e], targets valid[e - n + 1 : e + 1])."""
    lo, hi = longest, valid.numel() - 1
    if hi <= lo:
        raise ValueError(f"validation text ({valid.numel()} ids) is shorter than the longest window ({longest})")
    return torch.linspace(lo, hi, windows).round().to(torch.int64)


def supports_length(model: TinyLM, length: int) -> bool:
    """False when the model has no encoding for `length` positions (a learned table past max_len)."""
    enc = model.encoding
    return not (isinstance(enc, LearnedEncoding) and length > enc.max_len)


@torch.no_grad()
def evaluate(model: TinyLM, valid: torch.Tensor, *, context_len: int, score_len: int, ends: torch.Tensor,
             batch: int = 32, per_position: bool = False):
    """Mean cross-entropy (nats/char) over the LAST `score_len` positions of windows of `context_len`.

    Returns None if the model cannot take `context_len` positions (see `supports_length`). With
    per_position=True returns (loss, (context_len,) tensor of the mean loss at each position).
    """
    if score_len > context_len:
        raise ValueError(f"score_len ({score_len}) must be <= context_len ({context_len})")
    if not supports_length(model, context_len):
        return (None, None) if per_position else None
    model.eval()
    offsets = torch.arange(-context_len, 1)
    total = torch.zeros(context_len, dtype=torch.float64)
    for i in range(0, ends.numel(), batch):
        window = valid[ends[i:i + batch, None] + offsets]  # (b, n + 1)
        logits, _ = model(window[:, :-1])
        nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), window[:, 1:], reduction="none")  # (b, n)
        total += nll.sum(0).double()
    per_pos = total / ends.numel()
    loss = float(per_pos[-score_len:].mean())
    return (loss, per_pos) if per_position else loss


def rope_scaling(method: str, factor: float, cfg: ExperimentConfig) -> dict | None:
    """The `scaling` dict that extends a RoPE model trained at cfg.train_len by `factor` with `method`."""
    if method not in EXTENSION_METHODS:
        raise ValueError(f"method must be one of {list(EXTENSION_METHODS)}, got {method!r}")
    l0 = cfg.train_len
    return {
        "none": None,
        "linear": {"rope_type": "linear", "factor": factor},
        "ntk": {"rope_type": "ntk", "factor": factor},
        "dynamic": {"rope_type": "dynamic", "factor": cfg.dynamic_factor, "original_max_position_embeddings": l0},
        "yarn": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": l0},
        "llama3": {"rope_type": "llama3", "factor": factor, "original_max_position_embeddings": l0,
                   "low_freq_factor": cfg.llama3_low_freq_factor, "high_freq_factor": cfg.llama3_high_freq_factor},
    }[method]


def with_rope_scaling(model: TinyLM, scaling: dict | None, cfg: ExperimentConfig) -> TinyLM:
    """Swap the model's RoPE for one with `scaling` (weights untouched); returns the model."""
    model.replace_encoding(make_encoding("rope", d_model=cfg.d_model, num_heads=cfg.num_heads, rope_scaling=scaling))
    return model


# ----------------------------------------------------------------------------------------- the jobs

_CORPUS: Corpus | None = None
_QUEUE = None


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


def _state_to_cpu(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def train_and_evaluate(encoding: str, seed: int, cfg: ExperimentConfig, keep_state: bool = False, *,
                       progress=None) -> dict:
    """One run of notebook 07: train `encoding` at cfg.train_len with `seed`, evaluate at every multiple."""
    corpus = _corpus()
    progress = progress or _report
    wall, cpu = time.perf_counter(), time.process_time()
    model = build_model(encoding, cfg, seed)
    curve = train(model, corpus.train, seq_len=cfg.train_len, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr,
                  seed=seed, warmup=cfg.warmup_steps, min_lr_ratio=cfg.min_lr_ratio, weight_decay=cfg.weight_decay,
                  grad_clip=cfg.grad_clip, log_every=cfg.log_every, progress=progress)
    train_seconds = time.perf_counter() - wall
    train_cpu = time.process_time() - cpu
    longest = cfg.train_len * max(cfg.eval_multiples)
    ends = eval_ends(corpus.valid, longest, cfg.eval_windows)
    losses, per_position = {}, None
    for mult in sorted(cfg.eval_multiples):
        n = cfg.train_len * mult
        if n == longest:
            loss, per_pos = evaluate(model, corpus.valid, context_len=n, score_len=cfg.train_len, ends=ends,
                                     batch=cfg.eval_batch, per_position=True)
            if per_pos is not None:
                per_position = [round(float(v), 4) for v in per_pos]
        else:
            loss = evaluate(model, corpus.valid, context_len=n, score_len=cfg.train_len, ends=ends, batch=cfg.eval_batch)
        losses[str(mult)] = None if loss is None else round(loss, 5)
    if per_position is None:  # learned: its own length only
        _, per_pos = evaluate(model, corpus.valid, context_len=cfg.train_len, score_len=cfg.train_len, ends=ends,
                              batch=cfg.eval_batch, per_position=True)
        per_position = [round(float(v), 4) for v in per_pos]
    out = {
        "encoding": encoding, "seed": seed, "loss": losses, "per_position_loss": per_position, "train_curve": curve,
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(train_seconds, 2), "train_cpu_seconds": round(train_cpu, 2),
        "seconds": round(time.perf_counter() - wall, 2), "cpu_seconds": round(time.process_time() - cpu, 2),
    }
    if keep_state:
        out["state"] = _state_to_cpu(model)
    return out


def extension_eval(state: dict, seed: int, cfg: ExperimentConfig, label: str = "no fine-tuning",
                   finetune_scaling: dict | None = None) -> dict:
    """Load a trained RoPE state; evaluate it at every multiple with every extension method.

    The factor for a window of n = s * L is s (dynamic: cfg.dynamic_factor, the length does the rest).
    Window ends and scored positions are those of notebook 07. finetune_scaling is recorded only.
    """
    corpus = _corpus()
    wall, cpu = time.perf_counter(), time.process_time()
    model = build_model("rope", cfg, seed)
    model.load_state_dict(state)
    longest = cfg.train_len * max(cfg.eval_multiples)
    ends = eval_ends(corpus.valid, longest, cfg.eval_windows)
    table = {}
    for method in cfg.extension_methods:
        table[method] = {}
        for mult in sorted(cfg.eval_multiples):
            with_rope_scaling(model, rope_scaling(method, float(mult), cfg), cfg)
            loss = evaluate(model, corpus.valid, context_len=cfg.train_len * mult, score_len=cfg.train_len,
                            ends=ends, batch=cfg.eval_batch)
            table[method][str(mult)] = round(loss, 5)
    return {"seed": seed, "label": label, "finetune_scaling": finetune_scaling, "loss": table,
            "seconds": round(time.perf_counter() - wall, 2), "cpu_seconds": round(time.process_time() - cpu, 2)}


def finetune_and_evaluate(state: dict, seed: int, cfg: ExperimentConfig, method: str, *, progress=None) -> dict:
    """Fine-tune a trained RoPE model at cfg.finetune_multiple * L with `method`'s scaling, then evaluate it.

    Same tokens per step as pre-training (batch = batch_size * L / (multiple * L)). Evaluated with the
    scaling it was fine-tuned with (the 'as trained' row) and with every method (for reference).
    """
    corpus = _corpus()
    progress = progress or _report
    wall, cpu = time.perf_counter(), time.process_time()
    mult = cfg.finetune_multiple
    scaling = rope_scaling(method, float(mult), cfg)
    model = with_rope_scaling(build_model("rope", cfg, seed), scaling, cfg)
    model.load_state_dict(state)
    batch = max(1, cfg.batch_size // mult)
    curve = train(model, corpus.train, seq_len=cfg.train_len * mult, steps=cfg.finetune_steps, batch_size=batch,
                  lr=cfg.finetune_lr, seed=1000 + seed, warmup=cfg.finetune_warmup, min_lr_ratio=cfg.min_lr_ratio,
                  weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip, log_every=min(cfg.log_every, 20),
                  progress=progress)
    longest = cfg.train_len * max(cfg.eval_multiples)
    ends = eval_ends(corpus.valid, longest, cfg.eval_windows)
    as_trained = {}
    for m in sorted(cfg.eval_multiples):
        as_trained[str(m)] = round(evaluate(model, corpus.valid, context_len=cfg.train_len * m,
                                            score_len=cfg.train_len, ends=ends, batch=cfg.eval_batch), 5)
    return {"seed": seed, "method": method, "scaling": scaling, "finetune_len": cfg.train_len * mult,
            "finetune_batch": batch, "train_curve": curve, "loss": as_trained,
            "seconds": round(time.perf_counter() - wall, 2), "cpu_seconds": round(time.process_time() - cpu, 2)}


# ------------------------------------------------------------------------------------ orchestration


class _Runner:
    """Runs jobs in `workers` processes (or in this one when workers <= 1) and feeds one tqdm bar."""

    def __init__(self, workers: int, threads: int, total_steps: int, show_progress: bool):
        from tqdm.auto import tqdm

        self.workers, self.threads = workers, threads
        self.bar = tqdm(total=total_steps, unit="step", desc="experiments", disable=not show_progress,
                        smoothing=0.05, dynamic_ncols=True)
        self.pool = self.queue = None
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
        if self.pool is not None:
            self.pool.close()
            self.pool.join()


def _provenance(cfg: ExperimentConfig, workers: int, threads: int) -> dict:
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


def run_all(cfg: ExperimentConfig = ExperimentConfig(), *, out_dir: Path | str | None = DATA_DIR, workers: int = 2,
            threads: int = 1, show_progress: bool = True, extension: bool = True) -> dict:
    """Run notebook 07's experiment (and 08's unless extension=False); return the results and, unless
    out_dir is None, write them (and the seed-0 RoPE state) there."""
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
    corpus = load_corpus()  # fail early (and clearly) if the stdlib files are missing
    provenance = _provenance(cfg, workers, threads)  # the commit and date of the code that runs, taken now
    start_wall = time.perf_counter()
    jobs = [(enc, seed) for seed in cfg.seeds for enc in cfg.encodings]
    ft_methods = ("linear", "none")
    total = len(jobs) * cfg.steps + (len(cfg.finetune_seeds) * len(ft_methods) * cfg.finetune_steps if extension else 0)
    runner = _Runner(workers, threads, total, show_progress)
    try:
        runs = runner.map(train_and_evaluate, [(enc, seed, cfg, enc == "rope") for enc, seed in jobs])
        states = {r["seed"]: r.pop("state") for r in runs if "state" in r}
        extrapolation = {
            "kind": "extrapolation", "description": (
                "TinyLM trained at train_len with each positional encoding; loss = mean cross-entropy in nats per "
                "character over the LAST train_len positions of validation windows of multiple * train_len "
                "characters, the windows ending at the same places for every multiple (null: the encoding has no "
                "value at that length, i.e. a learned table past max_len). per_position_loss: mean loss at each "
                "position of the longest window (learned: of a train_len window)."),
            "provenance": dict(provenance), "corpus": corpus.info, "runs": runs,
            "summary": summarize(runs, cfg.eval_multiples),
        }
        extension_result = None
        if extension and "rope" in cfg.encodings:
            evals = runner.map(extension_eval, [(states[s], s, cfg) for s in sorted(states)])
            ft_seeds = [s for s in cfg.finetune_seeds if s in states]
            fts = runner.map(finetune_and_evaluate, [(states[s], s, cfg, m) for s in ft_seeds for m in ft_methods])
            extension_result = {
                "kind": "context_extension", "description": (
                    "The RoPE models of the extrapolation run, evaluated (same windows, same scored positions) with "
                    "each rope_inv_freq scaling at factor = multiple, original_max_position_embeddings = train_len "
                    "(dynamic: factor = config.dynamic_factor, seq_len = window length), no fine-tuning ('no_finetune'); "
                    "then fine-tuned for finetune_steps at finetune_multiple * train_len with position interpolation "
                    "('linear', factor = finetune_multiple) and, as a control, with plain RoPE ('none'), and "
                    "evaluated with the scaling they were fine-tuned with ('finetuned')."),
                "provenance": dict(provenance), "corpus": corpus.info,
                "baseline_from": EXTRAPOLATION_FILE, "no_finetune": evals, "finetuned": fts,
            }
            if 0 in states and out_dir is not None:
                torch.save(states[0], out_dir / ROPE_STATE_FILE)
    finally:
        runner.close()
    wall = time.perf_counter() - start_wall
    cpu_runs = sum(r["cpu_seconds"] for r in runs)
    if extension_result is not None:
        cpu_runs += sum(r["cpu_seconds"] for r in extension_result["no_finetune"] + extension_result["finetuned"])
    timing = {"wall_seconds": round(wall, 1), "worker_cpu_seconds": round(cpu_runs, 1),
              "estimated_clean_wall_seconds": round(cpu_runs / max(1, min(workers, len(jobs))), 1),
              "note": ("worker_cpu_seconds is the CPU time of the runs (1 thread each); on an idle machine with "
                       "`workers` cores the wall time is about worker_cpu_seconds / workers. A larger wall_seconds "
                       "means the CPU was shared.")}
    for result, name in ((extrapolation, EXTRAPOLATION_FILE), (extension_result, EXTENSION_FILE)):
        if result is None:
            continue
        result["provenance"]["timing_whole_command"] = timing
        result["provenance"]["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        if out_dir is not None:
            (out_dir / name).write_text(json.dumps(result, indent=1) + "\n")
    return {"extrapolation": extrapolation, "context_extension": extension_result}


def live_run(encodings=("alibi",), *, steps: int = 60, batch_size: int = 16, eval_multiples=(1, 4),
             eval_windows: int = 16, seed: int = 0, show_progress: bool = True) -> dict:
    """A small in-process version of the experiment (nothing written): the pipeline of notebook 07 in seconds.

    Returns run_all's "extrapolation" dict (runs, summary, provenance) for these settings.
    """
    cfg = replace(ExperimentConfig(), steps=steps, batch_size=batch_size, encodings=tuple(encodings), seeds=(seed,),
                  eval_multiples=tuple(eval_multiples), eval_windows=eval_windows,
                  warmup_steps=max(1, min(ExperimentConfig.warmup_steps, steps // 5)), log_every=max(1, steps // 6))
    threads = torch.get_num_threads()
    try:
        return run_all(cfg, out_dir=None, workers=1, threads=1, show_progress=show_progress,
                       extension=False)["extrapolation"]
    finally:
        torch.set_num_threads(threads)


_HOOKS = ("add_to_input", "rotate_qk", "score_bias", "value_bias")
_HOOK_PLACES = {"add_to_input": "added to the input", "rotate_qk": "rotates q and k",
                "score_bias": "bias on the scores", "value_bias": "term on the values"}


def where_it_acts(encoding) -> list:
    """The PositionalEncoding hooks an encoding overrides (its class, read off the code, not a table)."""
    cls = encoding if isinstance(encoding, type) else type(encoding)
    if not issubclass(cls, PositionalEncoding):
        raise TypeError(f"encoding must be a PositionalEncoding (instance or class), got {cls.__name__}")
    return [h for h in _HOOKS if getattr(cls, h) is not getattr(PositionalEncoding, h)]


def config_from(results: dict) -> ExperimentConfig:
    """The ExperimentConfig stored in a results dict's provenance."""
    return ExperimentConfig(**{k: tuple(v) if isinstance(v, list) else v
                               for k, v in results["provenance"]["config"].items()})


def encoding_summary(results: dict | None = None, extra=("shaw",)) -> list:
    """One row per encoding: where it acts (the hooks its class overrides), its trainable parameters
    inside the experiment's TinyLM, the measured mean loss at L and its rise at every longer multiple
    (None where it has no value there). `extra` encodings (not in the run) get measured=False and
    None losses. Reads `results` (default: data/)."""
    results = load_results("extrapolation") if results is None else results
    cfg = config_from(results)
    rows = []
    for enc in [*results["summary"], *[e for e in extra if e not in results["summary"]]]:
        model = build_model(enc, cfg, 0)
        hooks = where_it_acts(model.encoding)
        row = results["summary"].get(enc)
        base = None if row is None else row["1"]["mean"]
        rise = {str(m): None for m in cfg.eval_multiples if m != 1} if row is None else {
            m: (None if v is None else round(v["mean"] - base, 4)) for m, v in row.items() if m != "1"}
        rows.append({"encoding": enc, "acts": ", ".join(_HOOK_PLACES[h] for h in hooks) or "nowhere (no position)",
                     "hooks": hooks, "parameters": sum(p.numel() for p in model.encoding.parameters()),
                     "measured": row is not None, "loss_at_L": base, "rise": rise})
    return rows


def method_position_loss(model: TinyLM, valid: torch.Tensor, *, methods=EXTENSION_METHODS, multiple: int = 8,
                         windows: int = 16, cfg: ExperimentConfig | None = None, scalings: dict | None = None) -> dict:
    """Per-position loss of a trained RoPE model on windows of multiple * L with each method's scaling
    (factor = multiple), on `windows` of notebook 07's window ends. `scalings` (label -> scaling
    dict) adds or overrides entries. The model's own encoding is put back afterwards.
    Returns dict(L, multiple, curves: {label: (n,) tensor}, loss: {label: mean over the last L})."""
    cfg = cfg or ExperimentConfig()
    n = cfg.train_len * multiple
    todo = {m: rope_scaling(m, float(multiple), cfg) for m in methods}
    todo.update(scalings or {})
    ends = eval_ends(valid, cfg.train_len * max(cfg.eval_multiples), windows)
    original = model.encoding
    curves, losses = {}, {}
    try:
        for label, scaling in todo.items():
            with_rope_scaling(model, scaling, cfg)
            losses[label], curves[label] = evaluate(model, valid, context_len=n, score_len=cfg.train_len, ends=ends,
                                                    batch=cfg.eval_batch, per_position=True)
    finally:
        model.replace_encoding(original)
    return {"L": cfg.train_len, "multiple": multiple, "curves": curves, "loss": losses}


def load_results(name: str = "extrapolation", data_dir: Path | str = DATA_DIR) -> dict:
    """The cached JSON of 'extrapolation' (notebook 07) or 'context_extension' (notebook 08)."""
    files = {"extrapolation": EXTRAPOLATION_FILE, "context_extension": EXTENSION_FILE}
    if name not in files:
        raise ValueError(f"name must be one of {list(files)}, got {name!r}")
    path = Path(data_dir) / files[name]
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make experiments` (python -m posenc_lib.experiments)")
    return json.loads(path.read_text())


def load_rope_model(data_dir: Path | str = DATA_DIR, cfg: ExperimentConfig | None = None) -> TinyLM:
    """The RoPE TinyLM of notebook 07 (seed 0), trained at L = 64, in eval mode."""
    cfg = cfg or ExperimentConfig()
    path = Path(data_dir) / ROPE_STATE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `make experiments` (python -m posenc_lib.experiments)")
    model = build_model("rope", cfg, 0)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m posenc_lib.experiments", description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=ExperimentConfig.steps)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(ExperimentConfig.seeds))
    parser.add_argument("--encodings", nargs="+", default=list(EXPERIMENT_ENCODINGS))
    parser.add_argument("--finetune-steps", type=int, default=ExperimentConfig.finetune_steps)
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2: one per core)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    parser.add_argument("--out", default=None, help=f"output directory (default {DATA_DIR}; /tmp/... with --quick)")
    parser.add_argument("--no-extension", action="store_true", help="skip notebook 08's part")
    parser.add_argument("--quick", action="store_true", help="smoke run: 60 steps, 1 seed, 16 eval windows")
    args = parser.parse_args(argv)
    cfg = ExperimentConfig(steps=args.steps, seeds=tuple(args.seeds), encodings=tuple(args.encodings),
                           finetune_steps=args.finetune_steps)
    out = args.out or DATA_DIR
    if args.quick:
        cfg = replace(cfg, steps=60, seeds=(0,), eval_windows=16, finetune_steps=20, warmup_steps=10)
        out = args.out or Path("/tmp/posenc_experiments_quick")
    result = run_all(cfg, out_dir=out, workers=args.workers, threads=args.threads)
    ext = result["extrapolation"]
    print(f"wrote {out}: {ext['provenance']['timing_whole_command']}")
    for enc, row in ext["summary"].items():
        print(f"{enc:>11}: " + "  ".join(f"{m}L={'  n/a ' if v is None else format(v['mean'], '.3f')}"
                                         for m, v in row.items()))


if __name__ == "__main__":
    main()
