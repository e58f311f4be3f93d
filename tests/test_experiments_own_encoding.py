"""Your own encoding in notebook 07's experiment (posenc_lib.experiments.own_encoding): its checks use the
experiment's sizes; a run builds the experiment's very model (the same initial weights as build_model), trains
and evaluates it with the experiment's functions (the same numbers as train_and_evaluate), refuses a broken
encoding before training, and its figure draws what it is given. (The rules themselves: test_encoding_rules.py.)"""
from __future__ import annotations

import math
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from test_encoding_rules import LogBucketBias, SequenceMean

from posenc_lib import experiments as E
from posenc_lib.experiments import own_encoding as O
from posenc_lib.model import ENCODINGS, TinyLMConfig
from posenc_lib.plots.extension import render_own_encoding
from posenc_lib.relative import T5RelativeBias


def test_experiment_config_is_build_models():
    cfg = E.ExperimentConfig()
    config = O.experiment_config(cfg)
    assert isinstance(config, TinyLMConfig)
    assert (config.d_model, config.num_heads, config.num_layers, config.max_len, config.num_buckets,
            config.max_distance) == (cfg.d_model, cfg.num_heads, cfg.num_layers, cfg.train_len, cfg.t5_num_buckets,
                                     cfg.t5_max_distance)


# ------------------------------------------------------------------------------------ training
@pytest.mark.parametrize("name, cls", [("t5", T5RelativeBias), ("rope", ENCODINGS["rope"]),
                                       ("learned", ENCODINGS["learned"])])
def test_own_model_is_build_models_model(name, cls):
    """A registered class passed as a class gets exactly the weights build_model gives its name."""
    cfg = E.ExperimentConfig()
    mine, theirs = O.own_model(cls, cfg, 1).state_dict(), E.build_model(name, cfg, 1).state_dict()
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)


TINY = replace(E.ExperimentConfig(), steps=3, batch_size=2, eval_windows=2, eval_multiples=(1, 2), log_every=1,
               warmup_steps=1)


def test_a_run_is_the_experiments_run():
    """With the config's steps and windows, a registered encoding gives train_and_evaluate's numbers."""
    torch.manual_seed(123)  # the run seeds itself: the global state before it does not matter
    mine = O.train_own_encoding(T5RelativeBias, cfg=TINY, show_progress=False)
    theirs = E.train_and_evaluate("t5", 0, TINY, progress=lambda n: None)
    assert mine["comparable"] and mine["steps"] == 3 and mine["eval_windows"] == 2
    for key in ("loss", "per_position_loss", "train_curve", "parameters"):
        assert mine[key] == theirs[key], key
    assert mine["encoding"] == "T5RelativeBias" and mine["seed"] == 0


def test_fewer_steps_are_marked_not_comparable_and_show_a_bar(capsys, monkeypatch):
    threads, evaluate = [], O.evaluate
    monkeypatch.setattr(O, "evaluate", lambda *a, **k: threads.append(torch.get_num_threads()) or evaluate(*a, **k))
    torch.set_num_threads(2)
    run = O.train_own_encoding(LogBucketBias, cfg=TINY, steps=2, eval_windows=1, name="buckets", threads=1)
    assert threads == [1, 1] and torch.get_num_threads() == 2  # one thread during the run, then set back
    assert not run["comparable"] and run["steps"] == 2 and run["eval_windows"] == 1
    assert run["encoding"] == "buckets" and [s for s, _ in run["train_curve"]] == [1, 2]
    assert set(run["loss"]) == {"1", "2"} and all(math.isfinite(v) for v in run["loss"].values())
    assert len(run["per_position_loss"]) == 2 * TINY.train_len
    assert "2/2" in capsys.readouterr().err  # the progress bar reached its end


def test_the_rules_are_checked_with_the_experiments_sizes(monkeypatch):
    """The encoding is checked as it will be trained: built from experiment_config(cfg), not the checker's default."""
    seen = []
    monkeypatch.setattr(O, "encoding_rule_problems", lambda encoding, config: seen.append(config) or ["[rule] hook: x"])
    with pytest.raises(ValueError, match="LogBucketBias breaks"):
        O.train_own_encoding(LogBucketBias, cfg=replace(TINY, d_model=32, num_heads=2), show_progress=False)
    assert seen == [O.experiment_config(replace(TINY, d_model=32, num_heads=2))] and seen[0].num_heads == 2


def test_a_broken_encoding_is_refused_before_training(monkeypatch):
    monkeypatch.setattr(O, "train", lambda *a, **k: pytest.fail("trained a broken encoding"))
    with pytest.raises(ValueError, match=r"(?s)SequenceMean breaks.*\[leaks future positions\] add_to_input"):
        O.train_own_encoding(SequenceMean, cfg=TINY, show_progress=False)


@pytest.mark.parametrize("kw, error, match", [
    ({"steps": 0}, ValueError, "steps"), ({"seed": -1}, ValueError, "seed"), ({"eval_windows": 1.5}, TypeError,
                                                                               "eval_windows"),
    ({"cfg": {"steps": 3}}, TypeError, "cfg"), ({"check_rules": "yes"}, TypeError, "check_rules"),
    ({"threads": 0}, ValueError, "threads"),
])
def test_bad_arguments_are_named(kw, error, match):
    with pytest.raises(error, match=match):
        O.train_own_encoding(LogBucketBias, **{"cfg": TINY, "show_progress": False, **kw})


# ------------------------------------------------------------------------------------ the figure
def test_render_own_encoding_draws_the_run_beside_the_cached_arms():
    results = E.load_results("extrapolation")
    cfg = results["provenance"]["config"]
    multiples = sorted(int(m) for m in results["runs"][0]["loss"])
    run = {"encoding": "mine", "seed": 0, "steps": cfg["steps"], "eval_windows": cfg["eval_windows"],
           "loss": {str(m): 2.0 + 0.1 * i for i, m in enumerate(multiples)},
           "train_curve": [[50, 3.0], [100, 2.5]]}
    fig, axes = plt.subplots(1, 2)
    out = render_own_encoding(axes, results, run)
    assert out["comparable"]
    np.testing.assert_allclose(out["own"], [2.0 + 0.1 * i for i in range(len(multiples))])
    np.testing.assert_array_equal(out["lengths"], np.array(multiples) * cfg["train_len"])
    assert set(out["mean"]) == set(results["summary"])
    alibi = [r["loss"]["1"] for r in results["runs"] if r["encoding"] == "alibi"]
    assert out["mean"]["alibi"][0] == pytest.approx(sum(alibi) / len(alibi))
    np.testing.assert_array_equal(out["own_train"][0], [50, 100])
    assert "NOT comparable" not in axes[0].get_title()
    fig, axes = plt.subplots(1, 2)
    out = render_own_encoding(axes, results, {**run, "steps": 20})
    assert not out["comparable"] and "NOT comparable" in axes[0].get_title()
    with pytest.raises(ValueError, match="multiples"):
        render_own_encoding(axes, results, {**run, "loss": {"1": 2.0}})
