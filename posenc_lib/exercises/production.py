"""Exercises of notebook 10: RoPE as production checkpoints use it. How many pairs of a base make less than one
turn in a context, partial rotary (GPT-NeoX, Phi), the base of each layer of a Gemma 3 config (local and
global), which layers of a Llama 4 / SmolLM3 config are NoPE, and what YaRN's attention factor does to q.k.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (all dims rotated, the
frequencies of the whole head, the global base on a local layer, no_rope_layers read backwards, the factor
not squared ...). `attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker. The right answers
come from posenc_lib itself (rope_inv_freq, apply_rope, from_hf_config), which the tests compare with
transformers.

Conventions (as in posenc_lib.rope): theta_i = base ** (-2i/r) over the r rotated dims, wavelength
2 pi / theta_i; "half" layout pairs (i, i + r/2) within the rotated dims, turned counter-clockwise.
"""
from __future__ import annotations

import copy
import math

import torch

from ..configs import from_hf_config
from ..experiments.results import load_model_configs
from ..rope import apply_decoupled_rope, apply_rope
from ..scaling import rope_inv_freq, rotary_dim
from ._common import ExerciseError, as_tensor, attempt, call, number, ok, same

__all__ = ["attempt", "check_slow_pairs", "check_partial_rope", "check_layer_base", "check_nope_layers",
           "check_yarn_score_scale"]


# ------------------------------------------------------------------------------- the base against the context
_SLOW_CASES = ((10000.0, 128, 4096), (500000.0, 128, 8192), (1000000.0, 128, 131072), (10000.0, 64, 2048))


def _count_slow(base, head_dim, context, *, exponent=2.0, turn=2 * math.pi, slower=True):
    """Pairs i < head_dim/2 whose wavelength turn * base ** (exponent * i / head_dim) exceeds (or, slower=False,
    does not exceed) the context: the right count with the defaults, a typical mistake otherwise."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    waves = turn * base ** (exponent * i / head_dim)
    return int((waves > context).sum()) if slower else int((waves <= context).sum())


def check_slow_pairs(fn) -> None:
    """fn(base, head_dim, context) -> how many of the head_dim/2 RoPE pairs make less than one full turn in
    `context` tokens: wavelength 2 pi / theta_i > context, theta_i = base ** (-2i/head_dim)."""
    answers = []
    for base, head_dim, context in _SLOW_CASES:
        got = number(call(fn, base, head_dim, context, what=f"your function({base:g}, {head_dim}, {context})"),
                     "your count")
        answers.append(got)
    right = [float(_count_slow(*case)) for case in _SLOW_CASES]
    if answers == right:
        ok(f"pairs with less than one turn: {[int(a) for a in answers]} (Llama 2, Llama 3 at 8k, Qwen2.5 at 128k, "
           f"a 64-dim head at 2k).")
        return

    def matches(**kw):
        return answers == [float(_count_slow(*case, **kw)) for case in _SLOW_CASES]

    if matches(slower=False):
        raise ExerciseError("you counted the pairs that DO complete a turn (wavelength <= context); the question is "
                            "the slow ones, wavelength > context")
    if matches(exponent=1.0):
        raise ExerciseError("frequency exponent: theta_i = base ** (-2i / head_dim) for pair i = 0 .. head_dim/2 - 1; "
                            "you used i / head_dim, which spans only the square root of the base")
    if matches(turn=1.0):
        raise ExerciseError("a full turn is 2 pi radians: the wavelength is 2 pi / theta_i tokens, not 1 / theta_i")
    if answers == [2 * r for r in right]:
        raise ExerciseError("you counted dims, not pairs: each pair is two dims that turn together")
    raise ExerciseError(f"for (base, head_dim, context) = {list(_SLOW_CASES)} expected {[int(r) for r in right]}, "
                        f"got {answers}")


# ------------------------------------------------------------------------------- partial rotary
def _wrong_pairs_across_the_head(x, positions, fraction, base):
    """Pairs (i, i + d/2) of the WHOLE head for i < r/2 (rotate_half over the head, then keep r/2 pairs)."""
    d, r = x.shape[-1], rotary_dim(x.shape[-1], fraction)
    index = torch.cat((torch.arange(r // 2), d // 2 + torch.arange(r // 2)))
    out = x.clone()
    out[..., index] = apply_rope(x[..., index], positions, base=base)
    return out


def check_partial_rope(fn) -> None:
    """fn(x (T, d), positions (T,) int64, partial_rotary_factor, base) -> x with RoPE on its first
    r = int(d * partial_rotary_factor) dims only (half layout within them: pairs (i, i + r/2), theta_i =
    base ** (-2i/r)), dims r .. d-1 unchanged; as Hugging Face's GPT-NeoX and Phi."""
    gen = torch.Generator().manual_seed(10)
    positions = torch.tensor([0, 1, 2, 5, 17, 100])
    for d, fraction, base in ((24, 0.5, 100.0), (20, 0.4, 10000.0)):
        x = torch.randn(6, d, generator=gen, dtype=torch.float64)
        before = x.clone()
        got = as_tensor(call(fn, x, positions, fraction, base, what="your partial RoPE"), "your partial RoPE")
        if not torch.equal(x, before):
            raise ExerciseError("your function changed x in place: return a new tensor")
        want = apply_rope(x, positions, base=base, partial_rotary_factor=fraction)
        if tuple(got.shape) != tuple(want.shape):
            raise ExerciseError(f"expected the shape of x {tuple(x.shape)}, got {tuple(got.shape)}: the unrotated "
                                f"dims stay in the output")
        if same(got, want, atol=1e-5):
            continue
        r = rotary_dim(d, fraction)
        theta_head = rope_inv_freq(d, base=base)[0][: r // 2]
        known_mistakes = (  # (what that mistake returns, what to tell the learner)
            (apply_rope(x, positions, base=base),
             f"you rotated all {d} dims: a partial-rotary model (GPT-NeoX rotary_pct, Phi partial_rotary_factor) "
             f"turns only the first r = int(d * factor) = {r}; the other {d - r} carry no position and must pass "
             f"through unchanged"),
            (apply_decoupled_rope(x, positions, rope_dim=r, base=base, layout="half"),
             "you rotated the LAST r dims (DeepSeek's decoupled layout); GPT-NeoX and Phi rotate the FIRST "
             "r = int(d * factor) dims and copy the rest"),
            (apply_rope(x, positions, inv_freq=theta_head, partial_rotary_factor=fraction),
             "your frequencies are the whole head's, base ** (-2i/d); the exponent runs over the rotated dims, "
             "theta_i = base ** (-2i/r), as in transformers (rope_inv_freq of r)"),
            (_wrong_pairs_across_the_head(x, positions, fraction, base),
             "you paired dim i with dim i + d/2 of the whole head; the pairs live inside the rotated dims: "
             "(i, i + r/2) for i < r/2 (rotate_half on x[..., :r])"),
            (apply_rope(x, positions, base=base, layout="interleaved", partial_rotary_factor=fraction),
             "you paired neighbours (2i, 2i+1), GPT-J's interleaved layout; GPT-NeoX and Phi in transformers "
             "pair (i, i + r/2) within the rotated dims"),
        )
        for mistaken, message in known_mistakes:
            if same(got, mistaken, atol=1e-5):
                raise ExerciseError(message)
        if not torch.equal(got[..., r:].to(x.dtype), x[..., r:]):
            raise ExerciseError(f"dims {r} .. {d - 1} must be copied unchanged (bit for bit); yours differ")
        if not same(got[0], x[0], atol=1e-5):
            raise ExerciseError("position 0 must not move (angle 0); yours changes it")
        raise ExerciseError(f"wrong values in the rotated dims: max |difference| "
                            f"{float((got.double() - want).abs().max()):.3g}")
    ok("RoPE on the first int(d * factor) dims, pairs (i, i + r/2), theta over r, the rest copied: "
       "partial rotary as GPT-NeoX and Phi do it.")


# ------------------------------------------------------------------------------- Gemma 3: local and global bases
def _gemma3_configs() -> list:
    """The Gemma 3 entry of data/model_configs.json (its text_config, flat) and a smaller variant with another
    pattern and other bases, so that nothing hard-coded passes."""
    entry = next(m for m in load_model_configs() if m["name"].startswith("Gemma 3"))
    real = dict(entry["config"]["text_config"])
    variant = {**real, "num_hidden_layers": 10, "sliding_window_pattern": 4, "rope_theta": 500000.0,
               "rope_local_base_freq": 20000.0}
    return [real, variant]


def check_layer_base(fn) -> None:
    """fn(config, layer) -> the RoPE base of layer `layer` of a Gemma 3 text config (a dict with rope_theta,
    rope_local_base_freq, sliding_window_pattern, num_hidden_layers): every sliding_window_pattern-th layer
    (layers p-1, 2p-1, ...) is global and uses rope_theta; the others are local (sliding window) and use
    rope_local_base_freq. Checked against from_hf_config, which reads the config as transformers does."""
    for config in _gemma3_configs():
        layers = from_hf_config(config).layers
        pattern, n = config["sliding_window_pattern"], config["num_hidden_layers"]
        glob, local = config["rope_theta"], config["rope_local_base_freq"]
        got = []
        for i in range(n):
            given = copy.deepcopy(config)
            got.append(number(call(fn, given, i, what=f"your function(config, {i})"), "your base"))
            if given != config:
                raise ExerciseError("your function changed the config dict; read it, do not modify it")
        want = [layer.base for layer in layers]
        if got == want:
            continue
        is_global = [(i + 1) % pattern == 0 for i in range(n)]
        if got == [glob] * n:
            raise ExerciseError(f"every layer got rope_theta = {glob:g}: that is the GLOBAL layers' base; the local "
                                f"(sliding-window) layers use rope_local_base_freq = {local:g}")
        if got == [local] * n:
            raise ExerciseError(f"every layer got rope_local_base_freq = {local:g}; every {pattern}th layer is global "
                                f"and uses rope_theta = {glob:g}")
        if got == [local if g else glob for g in is_global]:
            raise ExerciseError("local and global swapped: rope_theta belongs to the global layers (every "
                                "sliding_window_pattern-th), rope_local_base_freq to the sliding-window ones")
        if got == [glob if i % pattern == 0 else local for i in range(n)]:
            raise ExerciseError(f"off by one: the global layers are {pattern - 1}, {2 * pattern - 1}, ... "
                                f"((i + 1) % sliding_window_pattern == 0), not 0, {pattern}, ... (i % pattern == 0)")
        if pattern != 6 and got == [glob if (i + 1) % 6 == 0 else local for i in range(n)]:
            raise ExerciseError(f"right for Gemma 3's own pattern of 6, wrong for a config with "
                                f"sliding_window_pattern = {pattern}: read the pattern from the config")
        wrong = [i for i in range(n) if got[i] != want[i]]
        raise ExerciseError(f"layers {wrong[:6]} get the wrong base (e.g. layer {wrong[0]}: {got[wrong[0]]:g}, "
                            f"expected {want[wrong[0]]:g})")
    ok("local layers rope_local_base_freq, every sliding_window_pattern-th layer rope_theta: Gemma 3's bases, "
       "layer by layer.")


# ------------------------------------------------------------------------------- NoPE layers
def _nope_configs() -> list:
    """Llama 4 Scout's text_config (an explicit no_rope_layers list), SmolLM3's (the default interval), a
    llama4_text config with interval 3 and no list, and a smollm3 config with an irregular list."""
    models = load_model_configs()
    scout = dict(next(m for m in models if m["name"].startswith("Llama 4"))["config"]["text_config"])
    smol = dict(next(m for m in models if m["name"].startswith("SmolLM3"))["config"])
    small = {"model_type": "llama4_text", "num_hidden_layers": 12, "num_attention_heads": 4, "hidden_size": 64,
             "head_dim": 16, "no_rope_layer_interval": 3}
    irregular = {"model_type": "smollm3", "num_hidden_layers": 8, "num_attention_heads": 4, "hidden_size": 64,
                 "no_rope_layers": [1, 1, 0, 1, 0, 1, 1, 1]}
    return [scout, smol, small, irregular]


def check_nope_layers(fn) -> None:
    """fn(config) -> the sorted indices of the NoPE layers (no rotation of q and k) of a Llama 4 or SmolLM3 config:
    no_rope_layers, when given, has one flag per layer, 1 = this layer USES RoPE (transformers' naming), 0 =
    NoPE; without it, every no_rope_layer_interval-th layer (layers k-1, 2k-1, ...; default 4) is NoPE."""
    for config in _nope_configs():
        given = copy.deepcopy(config)
        result = call(fn, given, what="your function(config)")
        if given != config:
            raise ExerciseError("your function changed the config dict; read it, do not modify it")
        try:
            got = sorted(int(i) for i in (result.tolist() if isinstance(result, torch.Tensor) else result))
        except (TypeError, ValueError) as error:
            raise ExerciseError(f"return a list of layer indices, got {type(result).__name__}") from error
        want = from_hf_config(config).nope_layers
        if got == want:
            continue
        n = config["num_hidden_layers"]
        flags = config.get("no_rope_layers")
        interval = config.get("no_rope_layer_interval", 4)
        if flags and got == [i for i in range(n) if flags[i]]:
            raise ExerciseError("no_rope_layers read backwards: despite its name, a 1 at index i means layer i USES "
                                "RoPE (transformers: use_rope = no_rope_layers[i]); the NoPE layers are the 0s")
        if got == list(range(0, n, interval)):
            raise ExerciseError(f"off by one: with an interval of {interval} the NoPE layers are {interval - 1}, "
                                f"{2 * interval - 1}, ... ((i + 1) % interval == 0), not 0, {interval}, ...")
        if flags and got == [i for i in range(n) if (i + 1) % interval == 0]:
            raise ExerciseError("this config lists its layers in no_rope_layers: when the list is given, it decides "
                                "(the interval is only the default)")
        if interval != 4 and got == [i for i in range(n) if (i + 1) % 4 == 0]:
            raise ExerciseError(f"right for an interval of 4, wrong for no_rope_layer_interval = {interval}: read it "
                                f"from the config (4 is only the default)")
        raise ExerciseError(f"for a {config['model_type']} config of {n} layers expected NoPE layers {want}, got {got}")
    ok("NoPE layers: the 0s of no_rope_layers (1 = uses RoPE), else every interval-th layer: Llama 4 and SmolLM3.")


# ------------------------------------------------------------------------------- YaRN's factor on q.k
_FACTORS = (1.0, 2.0, 8.0, 40.0)


def check_yarn_score_scale(fn) -> None:
    """fn(factor) -> the number YaRN multiplies every score q.k by when it stretches a model by `factor` >= 1
    (default mscale): its attention factor 0.1 ln(factor) + 1 (1 for factor 1) multiplies cos and sin, and
    so both the rotated q and the rotated k."""
    got = [number(call(fn, s, what=f"your function({s:g})"), "your factor") for s in _FACTORS]
    right = []
    for s in _FACTORS:
        scaling = {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": 4096}
        right.append(rope_inv_freq(64, scaling=scaling)[1] ** 2)
    if all(math.isclose(g, r, rel_tol=1e-6) for g, r in zip(got, right)):  # float32 answers pass
        ok("q.k x (0.1 ln s + 1)^2: the attention factor is on cos and sin, so the score gets it twice "
           f"(x{got[-1]:.3f} at s = {_FACTORS[-1]:g}, DeepSeek-V3's factor).")
        return

    def close(values):
        return all(math.isclose(g, v, rel_tol=1e-6) for g, v in zip(got, values))

    if close([math.sqrt(r) for r in right]):
        raise ExerciseError("that is the attention factor itself, 0.1 ln s + 1; it multiplies cos and sin, so the "
                            "rotated q AND the rotated k carry it: q.k is multiplied by its square")
    if close([(0.1 * math.log10(s) + 1) ** 2 for s in _FACTORS]):
        raise ExerciseError("ln is the natural logarithm (math.log), not log10")
    if close([1 / r for r in right]):
        raise ExerciseError("inverted: the factor is >= 1 and sharpens the softmax (a larger q.k), it does not divide")
    if close([(math.log(s) + 1) ** 2 for s in _FACTORS]):
        raise ExerciseError("the coefficient of ln s is 0.1: (0.1 ln s + 1)^2")
    raise ExerciseError(f"for factors {list(_FACTORS)} expected {[round(r, 6) for r in right]}, got {got}")


# ------------------------------------------------------------------------------- reference solutions
def _solution_slow_pairs(base, head_dim, context):
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    wavelength = 2 * math.pi * base ** (2 * i / head_dim)  # 2 pi / theta_i
    return int((wavelength > context).sum())


def _solution_partial_rope(x, positions, partial_rotary_factor, base=10000.0):
    r = int(x.shape[-1] * partial_rotary_factor)
    theta = base ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)      # over the rotated dims
    angles = positions.double()[:, None] * theta                            # (T, r/2)
    cos, sin = torch.cat((angles.cos(), angles.cos()), -1), torch.cat((angles.sin(), angles.sin()), -1)
    rot = x[..., :r].double()
    turned = rot * cos + torch.cat((-rot[..., r // 2:], rot[..., : r // 2]), -1) * sin
    return torch.cat((turned.to(x.dtype), x[..., r:]), dim=-1)


def _solution_layer_base(config, layer):
    is_global = (layer + 1) % config["sliding_window_pattern"] == 0
    return config["rope_theta"] if is_global else config["rope_local_base_freq"]


def _solution_nope_layers(config):
    n = config["num_hidden_layers"]
    flags = config.get("no_rope_layers")
    if not flags:  # default: every interval-th layer is NoPE
        interval = config.get("no_rope_layer_interval", 4)
        flags = [int((i + 1) % interval != 0) for i in range(n)]
    return [i for i in range(n) if flags[i] == 0]  # 1 = uses RoPE


def _solution_yarn_score_scale(factor):
    attention_factor = 0.1 * math.log(factor) + 1 if factor > 1 else 1.0
    return attention_factor ** 2  # on cos and sin: q and k each carry it once


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "slow_pairs": _solution_slow_pairs,
    "partial_rope": _solution_partial_rope,
    "layer_base": _solution_layer_base,
    "nope_layers": _solution_nope_layers,
    "yarn_score_scale": _solution_yarn_score_scale,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
