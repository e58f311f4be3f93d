"""Your own encoding in notebook 07's experiment (posenc_lib.experiments.own_encoding): the rule checks
pass every built-in encoding and catch each kind of broken one, naming the rule and the hook; a run
builds the experiment's very model (the same initial weights as build_model), trains and evaluates it
with the experiment's functions (the same numbers as train_and_evaluate), refuses a broken encoding
before training, and its figure draws what it is given."""
from __future__ import annotations

import math
from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from torch import nn

from posenc_lib import apply_rope
from posenc_lib import experiments as E
from posenc_lib.attention import PositionalEncoding
from posenc_lib.experiments import own_encoding as O
from posenc_lib.model import ENCODINGS, TinyLMConfig
from posenc_lib.plots.extension import render_own_encoding
from posenc_lib.relative import T5RelativeBias


# ----------------------------------------------------------------------- encodings, good and broken
class LogBucketBias(PositionalEncoding):
    """Notebook 07's worked example: a learned bias per head for bucket floor(log2(1 + d)), d = query - key."""

    def __init__(self, num_heads, num_buckets=6):
        super().__init__()
        self.num_buckets = num_buckets
        self.bias = nn.Parameter(torch.zeros(num_heads, num_buckets))

    @classmethod
    def from_config(cls, config):
        return cls(config.num_heads)

    def score_bias(self, q, q_positions, k_positions):
        distance = (q_positions[..., :, None] - k_positions[..., None, :]).clamp(min=0)
        bucket = torch.log2(1.0 + distance.double()).floor().long().clamp(max=self.num_buckets - 1)
        return self.bias[:, bucket].movedim(0, -3).to(q.dtype)


class RopeBase500(PositionalEncoding):  # exercise 7.3's first suggestion
    def rotate_qk(self, q, k, q_positions, k_positions):
        return apply_rope(q, q_positions, base=500.0), apply_rope(k, k_positions, base=500.0)


class LearnedSlopes(PositionalEncoding):  # exercise 7.3's second: ALiBi with a learned slope per head
    def __init__(self, num_heads):
        super().__init__()
        self.log_slope = nn.Parameter(torch.linspace(-1.0, -6.0, num_heads))

    @classmethod
    def from_config(cls, config):
        return cls(config.num_heads)

    def score_bias(self, q, q_positions, k_positions):
        d = (q_positions[:, None] - k_positions[None, :]).clamp(min=0).to(q.dtype)  # (Tq, Tk)
        return -self.log_slope.exp().to(q.dtype)[:, None, None] * d  # (H, Tq, Tk)


class _Input(PositionalEncoding):
    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(dim))  # zeros: the checker's noise must still reveal a leak

    @classmethod
    def from_config(cls, config):
        return cls(config.d_model)


class NormalisedIndex(_Input):  # t / T: depends on the length, and the arange has no device
    def add_to_input(self, x, positions):
        frac = torch.arange(x.shape[1]) / x.shape[1]
        return x + frac[:, None] * self.w


class NormalisedIndexOnDevice(_Input):  # the same leak, device kept: only the leak is left
    def add_to_input(self, x, positions):
        frac = positions.to(x.dtype) / x.shape[1]
        return x + frac[:, None] * self.w


class SequenceMean(_Input):
    def add_to_input(self, x, positions):
        return x + x.mean(1, keepdim=True) * self.w


class AddsInPlace(_Input):
    def add_to_input(self, x, positions):
        x += positions[:, None].to(x.dtype) * self.w
        return x


class CentresKeys(PositionalEncoding):
    def rotate_qk(self, q, k, q_positions, k_positions):
        return q, k - k.mean(-2, keepdim=True)


class RotatesOnePair(PositionalEncoding):  # returns q alone, not the pair
    def rotate_qk(self, q, k, q_positions, k_positions):
        return q


class FlatBias(PositionalEncoding):  # (batch * heads, T, T) does not broadcast to (batch, heads, T, T)
    def score_bias(self, q, q_positions, k_positions):
        b, h, t, _ = q.shape
        return torch.zeros(b * h, t, t, dtype=q.dtype, device=q.device)


class Float32Bias(PositionalEncoding):
    def score_bias(self, q, q_positions, k_positions):
        t = q.shape[-2]
        return torch.zeros(t, t, device=q.device)


class CpuBias(PositionalEncoding):
    def score_bias(self, q, q_positions, k_positions):
        r = torch.arange(q.shape[-2])
        return -(r[None, :] - r[:, None]).abs().to(q.dtype)


class ReadsAValue(PositionalEncoding):  # int(tensor) needs data: fails on meta (and syncs a GPU)
    def score_bias(self, q, q_positions, k_positions):
        n = int(q_positions.max()) + 1
        return torch.zeros(n, n, dtype=q.dtype, device=q.device)


class ValueTermFromLaterRows(PositionalEncoding):
    def value_bias(self, probs, q_positions, k_positions):
        b, h, t, _ = probs.shape
        return probs.sum(-2, keepdim=True)[..., :1].expand(b, h, t, 16).clone()


class CrossHookLeak(_Input):
    """Each hook alone is causal; together they are not: add_to_input stores the sequence mean, which
    score_bias then adds to every score. Only the whole-model check can see it."""

    def add_to_input(self, x, positions):
        self.context = x.detach().mean((1, 2))  # (B,): the mean over ALL positions, later ones included
        return x + self.w

    def score_bias(self, q, q_positions, k_positions):
        context = getattr(self, "context", None)
        if context is None or context.shape[0] != q.shape[0]:
            return None
        t = q.shape[-2]
        ramp = torch.arange(t, dtype=q.dtype, device=q.device)
        return (context.to(q.dtype)[:, None, None, None] * ramp).expand(-1, 1, t, t)  # (B, 1, T, T)


class Misspelt(PositionalEncoding):
    def score_biass(self, q, q_positions, k_positions):
        return None

    def forward(self, x):
        return x


class Crashes(PositionalEncoding):
    def score_bias(self, q, q_positions, k_positions):
        return q @ q


class NotAnEncoding(nn.Module):
    pass


BROKEN = [  # (id, encoding, [fragments one of the problems must contain], number of problems)
    ("t over T", NormalisedIndex, [O.RULE_FUTURE, "add_to_input", "cut"], 2),
    ("t over T, no device", NormalisedIndex, [O.RULE_DEVICE, "add_to_input", "device=x.device"], 2),
    ("t over T on device", NormalisedIndexOnDevice, [O.RULE_FUTURE, "add_to_input", "length"], 1),
    ("sequence mean", SequenceMean, [O.RULE_FUTURE, "add_to_input", "inputs at positions >= 5 changed"], 1),
    ("in place", AddsInPlace, [O.RULE_IN_PLACE, "add_to_input", "changed x"], 1),
    ("centred keys", CentresKeys, [O.RULE_FUTURE, "rotate_qk"], 1),
    ("q only", RotatesOnePair, [O.RULE_SHAPE, "rotate_qk", "pair"], 1),
    ("flat bias", FlatBias, [O.RULE_SHAPE, "score_bias", "(8, 9, 9)", "broadcast"], 1),
    ("float32 bias", Float32Bias, [O.RULE_DTYPE, "score_bias", "float64 inputs", "float32"], 1),
    ("CPU bias", CpuBias, [O.RULE_DEVICE, "score_bias", "cpu"], 1),
    ("int(tensor)", ReadsAValue, [O.RULE_DEVICE, "score_bias", ".item()"], 1),
    ("value term", ValueTermFromLaterRows, [O.RULE_FUTURE, "value_bias"], 1),
    ("cross-hook", CrossHookLeak, [O.RULE_FUTURE, "TinyLM (add_to_input, score_bias)", "logits"], 1),
    ("misspelt", Misspelt, [O.RULE_NO_HOOK, "score_biass() looks like a misspelt score_bias()", "forward() is not"], 1),
    ("NoPE", "nope", [O.RULE_NO_HOOK, "NoPE"], 1),
    ("crash", Crashes, [O.RULE_CRASH, "score_bias", "RuntimeError"], 1),
    ("not a PositionalEncoding", NotAnEncoding, [O.RULE_BUILD, "subclass", "PositionalEncoding"], 1),
    ("factory returns no encoding", lambda config: 3, [O.RULE_BUILD, "must return a PositionalEncoding"], 1),
]


@pytest.mark.parametrize("name", [n for n in ENCODINGS if n != "nope"])
def test_every_built_in_encoding_keeps_the_rules(name):
    report = O.rule_report(name)
    assert report["problems"] == [] and report["hooks"]


@pytest.mark.parametrize("encoding", [LogBucketBias, LogBucketBias(4), lambda config: LogBucketBias(config.num_heads)],
                         ids=["class", "instance", "function"])
def test_the_worked_example_keeps_the_rules_in_every_form(encoding):
    assert O.rule_report(encoding) == {"name": O.encoding_name(encoding), "hooks": ["score_bias"], "problems": []}


@pytest.mark.parametrize("encoding", [RopeBase500, LearnedSlopes], ids=["RoPE base 500", "learned slopes"])
def test_the_exercises_suggestions_keep_the_rules(encoding):
    assert O.encoding_rule_problems(encoding) == []


@pytest.mark.parametrize("encoding, fragments, count", [row[1:] for row in BROKEN], ids=[row[0] for row in BROKEN])
def test_each_broken_rule_is_named_with_its_hook(encoding, fragments, count):
    problems = O.encoding_rule_problems(encoding)
    assert len(problems) == count, problems
    assert any(all(f in p for f in fragments) for p in problems), problems
    assert all(p.startswith("[") and p.split("]")[0][1:] in O.RULES for p in problems)


def test_the_cross_hook_leak_is_causal_hook_by_hook():
    """The whole-model check is needed: each hook of CrossHookLeak alone passes the hook checks."""
    enc = CrossHookLeak.from_config(O.experiment_config())
    assert all(O._hook_problems(enc, hook, O.experiment_config()) == [] for hook in ("add_to_input", "score_bias"))


def test_the_check_leaves_the_encoding_and_the_global_rng_alone():
    enc = LogBucketBias(4)
    with torch.no_grad():
        enc.bias.copy_(torch.arange(24.0).view(4, 6))
    before = enc.bias.detach().clone()
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    assert O.encoding_rule_problems(enc) == []
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(enc.bias.detach(), before) and enc.training


def test_not_implemented_passes_through():
    class Unsolved(PositionalEncoding):
        def score_bias(self, q, q_positions, k_positions):
            raise NotImplementedError

    with pytest.raises(NotImplementedError):
        O.rule_report(Unsolved)


def test_rule_report_rejects_a_config_of_another_kind():
    with pytest.raises(TypeError, match="config"):
        O.rule_report(LogBucketBias, config={"num_heads": 4})


def test_experiment_config_is_build_models():
    cfg = E.ExperimentConfig()
    config = O.experiment_config(cfg)
    assert isinstance(config, TinyLMConfig)
    assert (config.d_model, config.num_heads, config.num_layers, config.max_len, config.num_buckets,
            config.max_distance) == (cfg.d_model, cfg.num_heads, cfg.num_layers, cfg.train_len, cfg.t5_num_buckets,
                                     cfg.t5_max_distance)


# ------------------------------------------------------------------------------------ training
@pytest.mark.parametrize("name, cls", [("t5", T5RelativeBias), ("rope", ENCODINGS["rope"]), ("learned", ENCODINGS["learned"])])
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


def test_build_encoding_names_what_it_needs():
    config = O.experiment_config()
    with pytest.raises(ValueError, match="encoding"):
        O.build_encoding("xpos", config)
    with pytest.raises(TypeError, match="PositionalEncoding subclass"):
        O.build_encoding(3, config)


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
