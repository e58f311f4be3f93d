"""Notebook 14, section 4: truncating a trained RoPE model's frequencies, and DroPE, on notebook 07's model.

    truncation   07's seed-0 RoPE model with the slowest or the fastest `count` pairs stopped (angle 0;
                 posenc_lib.frequencies.TruncatedRoPE), NO retraining (p-RoPE and HoPE train with it),
                 evaluated at every multiple of L with 07's windows and scoring (evaluation.evaluate)
    drope        DroPE (Gelberg et al., arXiv 2512.12167): the same model with RoPE removed (NoPE), then
                 recalibrated for recal_steps at recal_multiple * L (the paper recalibrates at the ORIGINAL
                 context length: multiple 1) with 08's fine-tune settings (training.train: finetune_lr,
                 finetune_warmup, cosine to min_lr_ratio, the same tokens per step as pre-training, batch seed
                 1000 + seed), then evaluated like the rest; "no_recalibration" is the drop alone

`run_frequencies` does both and returns (and writes) data/experiments_frequencies.json with its provenance;
`python -m posenc_lib.experiments --frequencies` is the command. The recalibration seeds vary the batches only:
every run starts from the one shipped model (data/ keeps seed 0's weights, not seeds 1 and 2's), so its spread is
not the spread over pre-training seeds that 08's arms report.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from .. import _checks
from ..frequencies import TRUNCATIONS, drop_rope, truncated_rope
from ..printing import seed_stats
from .config import ExperimentConfig, config_from, stored_config
from .corpus import load_corpus
from .evaluation import eval_ends, losses_at_multiples
from .paths import data_file
from .results import load_results, load_rope_model
from .runner import provenance
from .training import train

FREQUENCIES_FILE = "experiments_frequencies.json"
MAKE_FREQUENCIES = "run `python -m posenc_lib.experiments --frequencies` in a clone of the repository"


@dataclass(frozen=True)
class FrequencyConfig:
    """The settings of section 4's runs (07's ExperimentConfig gives the model, the windows and 08's fine-tune)."""
    truncate_counts: tuple = (2, 4, 5, 6)  # pairs stopped, of head_dim / 2 = 8; 5: the pairs with < 1 turn in L
    recal_steps: int = 200               # 08's finetune_steps: the same budget in steps and tokens
    recal_multiple: int = 1              # recalibrate at recal_multiple * L (DroPE: the original length)
    recal_seeds: tuple = (0, 1, 2)       # batch seeds of the recalibration (1000 + seed, as 08's fine-tunes)
    eval_windows: int | None = None      # None: 07's eval_windows (128)

    def __post_init__(self):
        for count in self.truncate_counts:
            _checks.positive_int("truncate_counts entries", count)
        _checks.positive_int("recal_steps", self.recal_steps)
        _checks.positive_int("recal_multiple", self.recal_multiple)
        if not self.recal_seeds:
            raise ValueError("recal_seeds must hold at least one seed")
        for seed in self.recal_seeds:
            _checks.positive_int("recal_seeds entries", seed, allow_zero=True)
        if self.eval_windows is not None:
            _checks.positive_int("eval_windows", self.eval_windows)


QUICK = FrequencyConfig(truncate_counts=(4,), recal_steps=20, recal_seeds=(0,), eval_windows=16)

DESCRIPTION = (
    "Notebook 07's seed-0 RoPE TinyLM (data/experiments_rope_L64_seed0.pt). loss = mean cross-entropy in nats per "
    "character over the LAST train_len positions of windows of multiple * train_len (07's windows and scoring). "
    "baseline: the model as trained. truncation[stop][count]: the slowest or fastest `count` RoPE pairs stopped "
    "(angle 0 at every position), no retraining. drope.no_recalibration: RoPE removed (NoPE), no training. "
    "drope.runs: RoPE removed, then trained recal_steps steps at recal_multiple * train_len with 08's fine-tune "
    "settings (finetune_lr, finetune_warmup, cosine to min_lr_ratio, batch_size / recal_multiple windows, batch "
    "seed 1000 + seed); every run starts from the same model, seeds vary the batches. drope.summary: "
    "mean/std/min/max over the runs.")


def truncation_table(model, cfg: ExperimentConfig, fcfg: FrequencyConfig, valid: torch.Tensor,
                     ends: torch.Tensor) -> dict:
    """{stop: {str(count): losses}} for every stop of frequencies.TRUNCATIONS and count of fcfg.truncate_counts;
    `model`'s encoding is put back afterwards."""
    original = model.encoding
    try:
        table = {}
        for stop in TRUNCATIONS:
            table[stop] = {}
            for count in fcfg.truncate_counts:
                model.replace_encoding(truncated_rope(model, stop, count))
                table[stop][str(count)] = losses_at_multiples(model, valid, cfg, ends)
    finally:
        model.replace_encoding(original)
    return table


def recalibrate(model, seed: int, cfg: ExperimentConfig, fcfg: FrequencyConfig, train_ids: torch.Tensor) -> tuple:
    """DroPE: a NoPE copy of `model` trained fcfg.recal_steps steps (08's fine-tune settings, see the module
    docstring). Returns (the recalibrated copy, its loss curve); `model` is untouched."""
    dropped = drop_rope(model)
    mult = fcfg.recal_multiple
    curve = train(dropped, train_ids, seq_len=cfg.train_len * mult, steps=fcfg.recal_steps,
                  batch_size=max(1, cfg.batch_size // mult), lr=cfg.finetune_lr, seed=1000 + seed,
                  warmup=min(cfg.finetune_warmup, fcfg.recal_steps), min_lr_ratio=cfg.min_lr_ratio,
                  weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip, log_every=min(cfg.log_every, 20))
    return dropped, curve


def run_frequencies(fcfg: FrequencyConfig = FrequencyConfig(), *, out_dir: Path | str | None,
                    threads: int = 1, data_dir: Path | str | None = None) -> dict:
    """Section 4's runs (module docstring) on the shipped RoPE model, with `threads` torch threads (set back
    afterwards). Returns the results dict and, unless out_dir is None, writes it there as FREQUENCIES_FILE."""
    if not isinstance(fcfg, FrequencyConfig):
        raise TypeError(f"fcfg must be a FrequencyConfig, got {type(fcfg).__name__}")
    threads = _checks.positive_int("threads", threads)
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    cfg = config_from(load_results("extrapolation", data_dir))
    if fcfg.eval_windows is not None:
        cfg = replace(cfg, eval_windows=fcfg.eval_windows)
    corpus = load_corpus()
    model = load_rope_model(data_dir, cfg)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(threads)
    prov = provenance(cfg, workers=1, threads=threads)
    prov["frequencies_config"] = asdict(fcfg)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        ends = eval_ends(corpus.valid, cfg.train_len * max(cfg.eval_multiples), cfg.eval_windows)
        baseline = losses_at_multiples(model, corpus.valid, cfg, ends)
        table = truncation_table(model, cfg, fcfg, corpus.valid, ends)
        no_recal = losses_at_multiples(drop_rope(model), corpus.valid, cfg, ends)
        runs = []
        for seed in fcfg.recal_seeds:
            run_cpu = time.process_time()
            recalibrated, curve = recalibrate(model, seed, cfg, fcfg, corpus.train)
            runs.append({"seed": seed, "loss": losses_at_multiples(recalibrated, corpus.valid, cfg, ends),
                         "train_curve": curve, "cpu_seconds": round(time.process_time() - run_cpu, 2)})
    finally:
        torch.set_num_threads(threads_before)
    prov["timing_whole_command"] = {"wall_seconds": round(time.perf_counter() - wall, 1),
                                    "cpu_seconds": round(time.process_time() - cpu, 1)}
    result = {
        "kind": "frequencies", "description": DESCRIPTION, "provenance": prov, "corpus": corpus.info,
        "model_from": "experiments_rope_L64_seed0.pt", "train_len": cfg.train_len,
        "pairs": cfg.d_model // cfg.num_heads // 2, "baseline": baseline, "truncation": table,
        "drope": {"no_recalibration": no_recal, "recal_len": cfg.train_len * fcfg.recal_multiple, "runs": runs,
                  "summary": {str(m): seed_stats([r["loss"][str(m)] for r in runs])
                              for m in sorted(cfg.eval_multiples)}},
    }
    if out_dir is not None:
        (Path(out_dir) / FREQUENCIES_FILE).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def load_frequencies(data_dir: Path | str | None = None) -> dict:
    """The cached results of `run_frequencies` (data/experiments_frequencies.json)."""
    path = data_file(FREQUENCIES_FILE, data_dir, made_by=MAKE_FREQUENCIES)
    return json.loads(path.read_text(encoding="utf-8"))


def frequency_config_from(results: dict) -> FrequencyConfig:
    """The FrequencyConfig stored in run_frequencies' provenance (JSON lists become tuples)."""
    return stored_config(results, FrequencyConfig, key="frequencies_config", written_by="run_frequencies")
