"""Checkers of notebook 10 (posenc_lib.exercises.production): typical wrong answers get the message that names
the mistake (all dims rotated, the global base on a local layer, no_rope_layers read backwards ...), and right
answers in another valid form (float32, a tensor of indices, numpy numbers) pass."""
import math

import numpy as np
import torch
from exercise_mistakes import assert_named, assert_passes_with_float32_note, each_mistake

from posenc_lib import apply_decoupled_rope, apply_rope, from_hf_config, rope_inv_freq
from posenc_lib.exercises import production as ex

S = ex.SOLUTIONS


def _slow(base, d, context, exponent=2.0, turn=2 * math.pi):
    i = np.arange(d // 2)
    return int((turn * base ** (exponent * i / d) > context).sum())


def _partial_in_place(x, positions, f, base=10000.0):
    out = S["partial_rope"](x, positions, f, base)
    x.zero_()
    return out


def _partial_head_frequencies(x, positions, f, base=10000.0):
    r = int(x.shape[-1] * f)
    return apply_rope(x, positions, inv_freq=rope_inv_freq(x.shape[-1], base=base)[0][: r // 2],
                      partial_rotary_factor=f)


def _partial_across_the_head(x, positions, f, base=10000.0):
    d, r = x.shape[-1], int(x.shape[-1] * f)
    index = torch.cat((torch.arange(r // 2), d // 2 + torch.arange(r // 2)))
    out = x.clone()
    out[..., index] = apply_rope(x[..., index], positions, base=base)
    return out


def _partial_touches_the_rest(x, positions, f, base=10000.0):
    out = S["partial_rope"](x, positions, f, base)
    r = int(x.shape[-1] * f)
    return torch.cat((out[..., :r], 2 * out[..., r:]), -1)


def _base_mutates(config, layer):
    config["rope_theta"] = 1.0
    return 1.0


def _nope_with(rule):
    def nope_layers(config):
        n, interval = config["num_hidden_layers"], config.get("no_rope_layer_interval", 4)
        flags = config.get("no_rope_layers")
        return rule(n, interval, flags)
    return nope_layers


def _partial_low_precision_angles(x, positions, fraction, base, dtype):
    """The learner's partial RoPE with the angles, their cos and sin in bf16 or fp16 (the rest in x's dtype)."""
    rot = int(x.shape[-1] * fraction)
    angles = positions[:, None].to(dtype) * (base ** (-torch.arange(0, rot, 2, dtype=torch.float64) / rot)).to(dtype)
    cos, sin = torch.cat((angles.cos(),) * 2, -1).to(x.dtype), torch.cat((angles.sin(),) * 2, -1).to(x.dtype)
    head = x[..., :rot]
    return torch.cat((head * cos + torch.cat((-head[..., rot // 2:], head[..., :rot // 2]), -1) * sin,
                      x[..., rot:]), -1)


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("partial: float32 result", ex.check_partial_rope,
     lambda x, p, f, b=1e4: S["partial_rope"](x.float(), p, f, b), ["torch.float32 for x in torch.float64"]),
    ("slow: the fast pairs", ex.check_slow_pairs, lambda b, d, L: d // 2 - _slow(b, d, L), ["DO complete a turn"]),
    ("slow: exponent i/d", ex.check_slow_pairs, lambda b, d, L: _slow(b, d, L, exponent=1.0), ["-2i / head_dim"]),
    ("slow: no 2 pi", ex.check_slow_pairs, lambda b, d, L: _slow(b, d, L, turn=1.0), ["2 pi"]),
    ("slow: dims", ex.check_slow_pairs, lambda b, d, L: 2 * _slow(b, d, L), ["dims, not pairs"]),
    ("slow: crash", ex.check_slow_pairs, lambda b, d, L: b.nonexistent, ["AttributeError"]),
    ("slow: not a number", ex.check_slow_pairs, lambda b, d, L: "18", ["number"]),
    ("partial: all dims", ex.check_partial_rope, lambda x, p, f, b=1e4: apply_rope(x, p, base=b),
     ["rotated all", "first r"]),
    ("partial: last dims", ex.check_partial_rope,
     lambda x, p, f, b=1e4: apply_decoupled_rope(x, p, rope_dim=int(x.shape[-1] * f), base=b, layout="half"),
     ["LAST rot dims", "DeepSeek"]),
    ("partial: head frequencies", ex.check_partial_rope, _partial_head_frequencies, ["base ** (-2i/rot)"]),
    ("partial: pairs across the head", ex.check_partial_rope, _partial_across_the_head, ["(i, i + rot/2)"]),
    ("partial: interleaved", ex.check_partial_rope,
     lambda x, p, f, b=1e4: apply_rope(x, p, base=b, layout="interleaved", partial_rotary_factor=f), ["GPT-J"]),
    ("partial: bf16 angles", ex.check_partial_rope,
     lambda x, p, f, b=1e4: _partial_low_precision_angles(x, p, f, b, torch.bfloat16), ["rounded to bf16", "float64"]),
    ("partial: fp16 angles", ex.check_partial_rope,
     lambda x, p, f, b=1e4: _partial_low_precision_angles(x, p, f, b, torch.float16), ["rounded to fp16"]),
    ("partial: in place", ex.check_partial_rope, _partial_in_place, ["in place"]),
    ("partial: rest changed", ex.check_partial_rope, _partial_touches_the_rest, ["copied unchanged"]),
    ("partial: dropped the rest", ex.check_partial_rope,
     lambda x, p, f, b=1e4: apply_rope(x[..., : int(x.shape[-1] * f)], p, base=b), ["unrotated dims stay"]),
    ("base: global everywhere", ex.check_layer_base, lambda c, i: c["rope_theta"], ["GLOBAL", "rope_local_base_freq"]),
    ("base: local everywhere", ex.check_layer_base, lambda c, i: c["rope_local_base_freq"], ["every 6th layer"]),
    ("base: swapped", ex.check_layer_base,
     lambda c, i: c["rope_local_base_freq"] if (i + 1) % c["sliding_window_pattern"] == 0 else c["rope_theta"],
     ["swapped"]),
    ("base: off by one", ex.check_layer_base,
     lambda c, i: c["rope_theta"] if i % c["sliding_window_pattern"] == 0 else c["rope_local_base_freq"],
     ["off by one", "5, 11"]),
    ("base: pattern 6 hard-coded", ex.check_layer_base,
     lambda c, i: c["rope_theta"] if (i + 1) % 6 == 0 else c["rope_local_base_freq"], ["sliding_window_pattern = 4"]),
    ("base: modifies the config", ex.check_layer_base, _base_mutates, ["changed the config"]),
    ("nope: flags backwards", ex.check_nope_layers,
     _nope_with(lambda n, k, flags: [i for i in range(n) if (flags[i] if flags else (i + 1) % k == 0)]),
     ["backwards", "USES RoPE"]),
    ("nope: off by one", ex.check_nope_layers, _nope_with(lambda n, k, flags: list(range(0, n, k))), ["off by one"]),
    ("nope: list ignored", ex.check_nope_layers,
     _nope_with(lambda n, k, flags: [i for i in range(n) if (i + 1) % k == 0]), ["no_rope_layers: when the list"]),
    ("nope: interval 4 hard-coded", ex.check_nope_layers,
     _nope_with(lambda n, k, flags: [i for i in range(n) if (flags[i] == 0 if flags else (i + 1) % 4 == 0)]),
     ["no_rope_layer_interval = 3"]),
    ("nope: not a list", ex.check_nope_layers, lambda c: 3, ["list of layer indices"]),
    ("yarn: not squared", ex.check_yarn_score_scale, lambda s: 0.1 * math.log(s) + 1 if s > 1 else 1.0,
     ["square", "rotated q AND the rotated k"]),
    ("yarn: log10", ex.check_yarn_score_scale, lambda s: (0.1 * math.log10(s) + 1) ** 2, ["log10"]),
    ("yarn: inverted", ex.check_yarn_score_scale, lambda s: 1 / (0.1 * math.log(s) + 1) ** 2, ["inverted"]),
    ("yarn: no 0.1", ex.check_yarn_score_scale, lambda s: (math.log(s) + 1) ** 2, ["coefficient"]),
    ("yarn: log2", ex.check_yarn_score_scale, lambda s: (0.1 * math.log2(s) + 1) ** 2, ["not log2"]),
    ("yarn: the paper's sqrt(t)", ex.check_yarn_score_scale, lambda s: 1 / (0.1 * math.log(s) + 1),
     ["sqrt(t)", "1/t"]),
    ("slow: degrees", ex.check_slow_pairs, lambda b, d, L: _slow(b, d, L, turn=360.0), ["not 360"]),
    ("slow: a fraction", ex.check_slow_pairs, lambda b, d, L: _slow(b, d, L) / (d // 2), ["fraction", "how many"]),
    ("base: the global base times the factor", ex.check_layer_base,
     lambda c, i: c["rope_theta"] * c["rope_scaling"]["factor"] if (i + 1) % c["sliding_window_pattern"] == 0 else
     c["rope_local_base_freq"], ["rope_theta * factor", "does not raise their base"]),
    ("base: the window as the base", ex.check_layer_base,
     lambda c, i: c["rope_theta"] if (i + 1) % c["sliding_window_pattern"] == 0 else c["sliding_window"],
     ["sliding_window", "not its RoPE base"]),
    ("nope: the RoPE layers", ex.check_nope_layers,
     _nope_with(lambda n, k, flags: [i for i in range(n) if (flags[i] == 0 if flags else (i + 1) % k)]),
     ["the layers that USE RoPE", "one in every 3"]),
    ("nope: numbered from 1", ex.check_nope_layers,
     _nope_with(lambda n, k, flags: [i + 1 for i in range(n) if (flags[i] == 0 if flags else (i + 1) % k == 0)]),
     ["from 1", "indexed from 0"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def _partial_rope_float32_angles(x, positions, partial_rotary_factor, base=10000.0):  # as transformers computes
    rot = int(x.shape[-1] * partial_rotary_factor)
    theta = 1.0 / base ** (torch.arange(0, rot, 2, dtype=torch.float32) / rot)
    angles = positions.float()[:, None] * theta
    cos, sin = torch.cat((angles.cos(),) * 2, -1), torch.cat((angles.sin(),) * 2, -1)
    part = x[..., :rot].float()
    turned = part * cos + torch.cat((-part[..., rot // 2:], part[..., :rot // 2]), -1) * sin
    return torch.cat((turned.to(x.dtype), x[..., rot:]), -1)


def test_float32_angles_pass_partial_rope_with_a_note(capsys):
    assert_passes_with_float32_note(ex.check_partial_rope, _partial_rope_float32_angles, S["partial_rope"], capsys)


def test_other_valid_forms_pass(capsys):
    ex.check_slow_pairs(lambda b, d, L: torch.tensor(S["slow_pairs"](b, d, L)))
    ex.check_partial_rope(_partial_rope_float32_angles)     # float32 angles pass, with a note
    ex.check_layer_base(lambda c, i: np.float64(S["layer_base"](c, i)))
    ex.check_nope_layers(lambda c: torch.tensor(S["nope_layers"](c))[torch.randperm(len(S["nope_layers"](c)))])
    ex.check_yarn_score_scale(lambda s: torch.tensor(S["yarn_score_scale"](s)))
    assert capsys.readouterr().out.count("✓ ") == 5


def test_checkers_compare_with_the_config_reader_and_the_library():
    """The right answers come from from_hf_config and rope_inv_freq (both tested against transformers): the
    solutions agree with them on the configs the checkers use, and the slow-pair count with the wavelengths."""
    for config in ex._gemma3_configs():
        positions = from_hf_config(config)
        assert [S["layer_base"](config, i) for i in range(config["num_hidden_layers"])] == \
            [layer.base for layer in positions.layers]
    for config in ex._nope_configs():
        assert S["nope_layers"](config) == from_hf_config(config).nope_layers
    assert S["nope_layers"](ex._nope_configs()[2]) == [2, 5, 8, 11]           # interval 3, no list
    for base, d, context in ex._SLOW_CASES:
        waves = 2 * math.pi / rope_inv_freq(d, base=base)[0]
        assert S["slow_pairs"](base, d, context) == int((waves > context).sum())
    scaling = {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096}
    assert S["yarn_score_scale"](40.0) == rope_inv_freq(64, scaling=scaling)[1] ** 2


# ---- notebook 10's "Common mistakes", where an exercise can make them (issue 25)

NOTEBOOK_10_MISTAKES = [
    # rotating all the dims; the last d_r dims; frequencies over the whole head; pairs across the head
    ("partial: all dims", ex.check_partial_rope, lambda x, p, f, b=1e4: apply_rope(x, p, base=b), ["rotated all"]),
    ("partial: DeepSeek's slice", ex.check_partial_rope,
     lambda x, p, f, b=1e4: apply_decoupled_rope(x, p, rope_dim=int(x.shape[-1] * f), base=b, layout="half"),
     ["LAST rot dims"]),
    ("partial: base^(-2i/d)", ex.check_partial_rope, _partial_head_frequencies, ["whole head's"]),
    ("partial: pairs (i, i + d/2)", ex.check_partial_rope, _partial_across_the_head, ["whole head"]),
    # one base for every layer of Gemma 3
    ("base: one for all", ex.check_layer_base, lambda c, i: c["rope_theta"], ["every layer got rope_theta"]),
    # reading no_rope_layers as "1 = NoPE"
    ("nope: 1 = NoPE", ex.check_nope_layers,
     _nope_with(lambda n, k, flags: [i for i in range(n) if (flags[i] if flags else (i + 1) % k == 0)]),
     ["USES RoPE"]),
    # YaRN's factor once, or twice
    ("yarn: once", ex.check_yarn_score_scale, lambda s: 0.1 * math.log(s) + 1 if s > 1 else 1.0, ["its square"]),
    ("yarn: twice", ex.check_yarn_score_scale, lambda s: (0.1 * math.log(s) + 1) ** 4, ["twice", "DeepSeek-V3"]),
    # several inputs: positions and base are used
    ("partial: positions ignored", ex.check_partial_rope,
     lambda x, p, f, b=1e4: S["partial_rope"](x, torch.arange(x.shape[0]), f, b), ["`positions`", "torch.arange(T)"]),
    ("partial: base ignored", ex.check_partial_rope, lambda x, p, f, b=1e4: S["partial_rope"](x, p, f), ["`base`"]),
    ("slow: base ignored", ex.check_slow_pairs, lambda b, d, L: S["slow_pairs"](10000.0, d, L), ["`base`", "500000"]),
]


@each_mistake(NOTEBOOK_10_MISTAKES)
def test_notebook_10_common_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)
