"""The rules every PositionalEncoding keeps (posenc_lib.encoding_rules, beside attention.PositionalEncoding):
the checks pass every built-in encoding, notebook 07's worked example and its exercise's suggestions, and catch
each kind of broken one, naming the rule and the hook; they leave the encoding and the global RNG alone."""
from __future__ import annotations

import pytest
import torch
from test_attention import ForgetGate, InputSlope, KeyGate, KeyGateFromTheFirstRows, ReRoPE
from torch import nn

from posenc_lib import apply_rope, encoding_rules as R
from posenc_lib.attention import PositionalEncoding
from posenc_lib.model import ENCODINGS, TinyLMConfig


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


class GatesEveryKey(KeyGate):
    """A sigmoid(q.k) gate counted over every key, the later ones too (no causal mask before the sum)."""

    def edit_scores(self, scores, inputs):
        gates = torch.sigmoid(inputs.q @ inputs.k.transpose(-2, -1)).to(scores.dtype)
        return scores - self.slopes.to(scores.dtype)[:, None, None] * gates.flip(-1).cumsum(-1).flip(-1)


class RunningForgetState(ForgetGate):
    """A forget state summed along the tokens it was given: right in one forward, wrong chunk by chunk."""

    def token_state(self, x, positions):
        return {"log_forget": super().token_state(x, positions)["log_forget"].cumsum(2)}


class StateAsAList(ForgetGate):
    def token_state(self, x, positions):
        return [super().token_state(x, positions)["log_forget"]]


class ScoresOfOneHead(KeyGate):
    def edit_scores(self, scores, inputs):
        return super().edit_scores(scores, inputs)[:, :1]


def _sized(cls):
    """A factory config -> cls(d_model, num_heads) or cls(num_heads): the test encodings' own signatures."""
    return lambda config: cls(config.num_heads) if issubclass(cls, KeyGate) else cls(config.d_model, config.num_heads)


BROKEN = [  # (id, encoding, [fragments one of the problems must contain], number of problems)
    ("t over T", NormalisedIndex, [R.RULE_FUTURE, "add_to_input", "cut"], 2),
    ("t over T, no device", NormalisedIndex, [R.RULE_DEVICE, "add_to_input", "device=x.device"], 2),
    ("t over T on device", NormalisedIndexOnDevice, [R.RULE_FUTURE, "add_to_input", "length"], 1),
    ("sequence mean", SequenceMean, [R.RULE_FUTURE, "add_to_input", "inputs at positions >= 5 changed"], 1),
    ("in place", AddsInPlace, [R.RULE_IN_PLACE, "add_to_input", "changed x"], 1),
    ("centred keys", CentresKeys, [R.RULE_FUTURE, "rotate_qk"], 1),
    ("q only", RotatesOnePair, [R.RULE_SHAPE, "rotate_qk", "pair"], 1),
    ("flat bias", FlatBias, [R.RULE_SHAPE, "score_bias", "(8, 9, 9)", "broadcast"], 1),
    ("float32 bias", Float32Bias, [R.RULE_DTYPE, "score_bias", "float64 inputs", "float32"], 1),
    ("CPU bias", CpuBias, [R.RULE_DEVICE, "score_bias", "cpu"], 1),
    ("int(tensor)", ReadsAValue, [R.RULE_DEVICE, "score_bias", ".item()"], 1),
    ("value term", ValueTermFromLaterRows, [R.RULE_FUTURE, "value_bias"], 1),
    ("cross-hook", CrossHookLeak, [R.RULE_FUTURE, "TinyLM (add_to_input, score_bias)", "logits"], 1),
    ("misspelt", Misspelt, [R.RULE_NO_HOOK, "score_biass() looks like a misspelt score_bias()", "forward() is not"], 1),
    ("NoPE", "nope", [R.RULE_NO_HOOK, "NoPE"], 1),
    ("crash", Crashes, [R.RULE_CRASH, "score_bias", "RuntimeError"], 1),
    ("not a PositionalEncoding", NotAnEncoding, [R.RULE_BUILD, "subclass", "PositionalEncoding"], 1),
    ("queries as the first rows", _sized(KeyGateFromTheFirstRows),
     [R.RULE_CACHE, "edit_scores", "LAST q_len of the k_len keys"], 1),
    ("gates over later keys", _sized(GatesEveryKey), [R.RULE_FUTURE, "edit_scores", "scores on keys <= query"], 1),
    ("state summed along the tokens", _sized(RunningForgetState), [R.RULE_CACHE, "token_state", "two chunks"], 1),
    ("state a list", _sized(StateAsAList), [R.RULE_SHAPE, "token_state", "dict name -> tensor, got list"], 2),
    ("scores of one head", _sized(ScoresOfOneHead), [R.RULE_SHAPE, "edit_scores", "(2, 1, 9, 9)", "(2, 4, 9, 9)"], 1),
    ("factory returns no encoding", lambda config: 3, [R.RULE_BUILD, "must return a PositionalEncoding"], 1),
]


@pytest.mark.parametrize("name", [n for n in ENCODINGS if n != "nope"])
def test_every_built_in_encoding_keeps_the_rules(name):
    report = R.rule_report(name)
    assert report["problems"] == [] and report["hooks"]


@pytest.mark.parametrize("encoding", [LogBucketBias, LogBucketBias(4), lambda config: LogBucketBias(config.num_heads)],
                         ids=["class", "instance", "function"])
def test_the_worked_example_keeps_the_rules_in_every_form(encoding):
    assert R.rule_report(encoding) == {"name": R.encoding_name(encoding), "hooks": ["score_bias"], "problems": []}


@pytest.mark.parametrize("cls", [KeyGate, InputSlope, ForgetGate, ReRoPE],
                         ids=["key gate", "input slope", "forget gate", "ReRoPE"])
def test_encodings_reading_k_x_or_a_token_state_keep_the_rules(cls):
    """The extended hooks under every rule, the cache rule included (tests/test_attention.py decodes them)."""
    report = R.rule_report((lambda config: ReRoPE(window=3)) if cls is ReRoPE else _sized(cls))
    assert report["problems"] == [] and "edit_scores" in report["hooks"]
    assert ("token_state" in report["hooks"]) == (cls is ForgetGate)


@pytest.mark.parametrize("encoding", [RopeBase500, LearnedSlopes], ids=["RoPE base 500", "learned slopes"])
def test_the_exercises_suggestions_keep_the_rules(encoding):
    assert R.encoding_rule_problems(encoding) == []


@pytest.mark.parametrize("encoding, fragments, count", [row[1:] for row in BROKEN], ids=[row[0] for row in BROKEN])
def test_each_broken_rule_is_named_with_its_hook(encoding, fragments, count):
    problems = R.encoding_rule_problems(encoding)
    assert len(problems) == count, problems
    assert any(all(f in p for f in fragments) for p in problems), problems
    assert all(p.startswith("[") and p.split("]")[0][1:] in R.RULES for p in problems)


def test_the_cross_hook_leak_is_causal_hook_by_hook():
    """The whole-model check is needed: each hook of CrossHookLeak alone passes the hook checks."""
    enc = CrossHookLeak.from_config(TinyLMConfig(encoding="nope"))
    assert all(R._hook_problems(enc, hook, TinyLMConfig(encoding="nope")) == []
               for hook in ("add_to_input", "score_bias"))


def test_the_check_leaves_the_encoding_and_the_global_rng_alone():
    enc = LogBucketBias(4)
    with torch.no_grad():
        enc.bias.copy_(torch.arange(24.0).view(4, 6))
    before = enc.bias.detach().clone()
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    assert R.encoding_rule_problems(enc) == []
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(enc.bias.detach(), before) and enc.training


def test_not_implemented_passes_through():
    class Unsolved(PositionalEncoding):
        def score_bias(self, q, q_positions, k_positions):
            raise NotImplementedError

    with pytest.raises(NotImplementedError):
        R.rule_report(Unsolved)


def test_rule_report_rejects_a_config_of_another_kind():
    with pytest.raises(TypeError, match="config"):
        R.rule_report(LogBucketBias, config={"num_heads": 4})


def test_build_encoding_names_what_it_needs():
    config = TinyLMConfig(encoding="nope")
    with pytest.raises(ValueError, match="encoding"):
        R.build_encoding("mine", config)
    with pytest.raises(TypeError, match="PositionalEncoding subclass"):
        R.build_encoding(3, config)
