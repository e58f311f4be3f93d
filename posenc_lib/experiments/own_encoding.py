"""Your own encoding in notebook 07's experiment: one training run of it beside the cached arms,
after the protocol's rules (posenc_lib.encoding_rules, beside attention.PositionalEncoding) are
checked with the experiment's sizes.

    problems = encoding_rule_problems(MyEncoding, experiment_config())   # [] when it keeps every rule
    run = train_own_encoding(MyEncoding, cfg=cfg)   # one seed, the cached run's steps: about a minute

`encoding` is what you wrote: a PositionalEncoding subclass (built with its `from_config`, as
TinyLM builds a registered one), a function config -> encoding, or a name in ENCODINGS.

Training (`train_own_encoding`): the experiment's TinyLM (`build_model`'s settings and initial
weights: an encoding's own weights are drawn last, so seed 0 shares every other weight with the
cached seed-0 arms), `training.train` on the same batches, `evaluation.evaluate` on the same window
ends, on one thread as each worker of `make experiments`. With the defaults (cfg's steps, batch and
windows; seed 0) a built-in encoding gets the numbers `runner.train_and_evaluate` gives it, so a run
compares with the cached seed-0 runs; with fewer steps or windows it does not, and the run says so.
"""
from __future__ import annotations

import time
from dataclasses import replace

import torch

from .. import _checks
from ..encoding_rules import build_encoding, encoding_name, encoding_rule_problems
from ..i18n import tr
from ..model import TinyLM, TinyLMConfig
from .config import ExperimentConfig
from .corpus import load_corpus
from .evaluation import eval_ends, evaluate
from .training import build_model, train

# ------------------------------------------------------------------------------ the experiment's sizes

def experiment_config(cfg: ExperimentConfig | None = None) -> TinyLMConfig:
    """The TinyLMConfig an encoding is built from in the experiment (build_model's settings: d_model,
    heads, max_len = train_len, T5's buckets ...), with encoding="nope"; the global RNG is untouched."""
    with torch.random.fork_rng(devices=[]):
        return build_model("nope", cfg or ExperimentConfig(), 0).config


# ------------------------------------------------------------------------------------ one training run

def own_model(encoding, cfg: ExperimentConfig | None = None, seed: int = 0) -> TinyLM:
    """The experiment's TinyLM with `encoding`: build_model's settings and initial weights, the
    encoding's own weights drawn last, so a registered class gives exactly build_model(name, cfg, seed)."""
    cfg = cfg or ExperimentConfig()
    if isinstance(encoding, str):
        return build_model(encoding, cfg, seed)
    model = build_model("nope", cfg, seed)  # seeds, draws the shared weights; NoPE draws nothing
    model.replace_encoding(build_encoding(encoding, model.config))
    model.kind = encoding_name(encoding)
    return model


def train_own_encoding(encoding, *, cfg: ExperimentConfig | None = None, seed: int = 0, steps: int | None = None,
                       eval_windows: int | None = None, name: str | None = None, check_rules: bool = True,
                       threads: int | None = 1, show_progress: bool = True) -> dict:
    """Train your encoding as notebook 07 trained its arms (one seed) and evaluate it at every multiple.

    cfg: the cached run's ExperimentConfig (notebook 07: config_from(res)); steps / eval_windows
    default to cfg's (then, with seed 0, the numbers compare with the cached seed-0 runs: same initial
    weights, batches and windows); fewer steps compress the warm-up in proportion. check_rules: refuse
    (ValueError listing them) an encoding that breaks a rule, before training. threads: torch threads
    during the run (1, as each worker of `make experiments`, so float sums add up in the same order: a
    built-in encoding then gets the numbers runner.train_and_evaluate gives it; None keeps the current
    setting), set back afterwards. A tqdm bar shows the steps.

    Returns a run dict as in the cached results' "runs" ("encoding", "seed", "loss" {"1": ...},
    "per_position_loss", "train_curve", "parameters", seconds) plus "steps", "batch_size",
    "eval_windows" and "comparable" (True when steps and windows are the cached run's).
    """
    from tqdm.auto import tqdm

    cfg = cfg or ExperimentConfig()
    if not isinstance(cfg, ExperimentConfig):
        raise TypeError(f"cfg must be an ExperimentConfig or None, got {type(cfg).__name__}")
    seed = _checks.positive_int("seed", seed, allow_zero=True)
    steps = cfg.steps if steps is None else _checks.positive_int("steps", steps)
    windows = cfg.eval_windows if eval_windows is None else _checks.positive_int("eval_windows", eval_windows)
    _checks.boolean("check_rules", check_rules)
    _checks.boolean("show_progress", show_progress)
    if threads is not None:
        _checks.positive_int("threads", threads)
    name = encoding_name(encoding) if name is None else name
    if check_rules:
        found = encoding_rule_problems(encoding, experiment_config(cfg))
        if found:
            raise ValueError(tr(f"encoding {name} breaks the protocol's rules, not trained:\n  ",
                                f"编码 {name} 违反了实验协议的规则，不予训练：\n  ") + "\n  ".join(found))
    run_cfg = replace(cfg, steps=steps, eval_windows=windows,
                      warmup_steps=(cfg.warmup_steps if steps == cfg.steps
                                    else max(1, cfg.warmup_steps * steps // cfg.steps)),
                      log_every=cfg.log_every if steps >= cfg.log_every else max(1, steps // 5))
    corpus = load_corpus()
    threads_before = torch.get_num_threads()
    wall, cpu = time.perf_counter(), time.process_time()
    model = own_model(encoding, run_cfg, seed)
    bar = tqdm(total=steps, unit=tr("step", "步"), desc=tr(f"{name} (seed {seed})", f"{name}（种子 {seed}）"),
               disable=not show_progress, dynamic_ncols=True)
    try:
        torch.set_num_threads(threads or threads_before)
        curve = train(model, corpus.train, seq_len=run_cfg.train_len, steps=steps, batch_size=run_cfg.batch_size,
                      lr=run_cfg.lr, seed=seed, warmup=run_cfg.warmup_steps, min_lr_ratio=run_cfg.min_lr_ratio,
                      weight_decay=run_cfg.weight_decay, grad_clip=run_cfg.grad_clip, log_every=run_cfg.log_every,
                      progress=bar.update)
        train_seconds = time.perf_counter() - wall
        lengths = ", ".join(f"{m}L" for m in sorted(run_cfg.eval_multiples))
        bar.set_postfix_str(tr(f"evaluating at {lengths}", f"正在评估 {lengths}"))
        ends = eval_ends(corpus.valid, run_cfg.train_len * max(run_cfg.eval_multiples), windows)
        losses, per_position = {}, None
        for mult in sorted(run_cfg.eval_multiples):
            loss, per_pos = evaluate(model, corpus.valid, context_len=run_cfg.train_len * mult,
                                     score_len=run_cfg.train_len, ends=ends, batch=run_cfg.eval_batch,
                                     per_position=True)
            losses[str(mult)] = None if loss is None else round(loss, 5)
            per_position = per_position if per_pos is None else per_pos
    finally:
        bar.close()
        torch.set_num_threads(threads_before)
    return {"encoding": name, "seed": seed, "loss": losses,
            "per_position_loss": [round(float(v), 4) for v in per_position], "train_curve": curve,
            "parameters": sum(p.numel() for p in model.parameters()), "steps": steps,
            "batch_size": run_cfg.batch_size, "eval_windows": windows,
            "comparable": steps == cfg.steps and windows == cfg.eval_windows,
            "train_seconds": round(train_seconds, 2), "seconds": round(time.perf_counter() - wall, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2)}
