"""RoPE frequencies and the context-extension methods that rescale them.

    theta_i = base ** (-2i / rotary_dim),  i = 0 .. rotary_dim/2 - 1   (pair i rotates by m * theta_i at position m)
    wavelength_i = 2 * pi / theta_i                                    (tokens per full turn)
    rotary_dim = int(head_dim * partial_rotary_factor)                 (HF's rule; = head_dim unless partial)

Partial rotary (GPT-NeoX `rotary_pct`, Phi `partial_rotary_factor`, GPT-J `rotary_dim`): only the
first rotary_dim dims of each head are rotated, the rest pass through; the exponent is over
rotary_dim, not head_dim (as in HF and GPT-NeoX), so the frequencies span the same range 1 ..
~1/base whatever the fraction. `rope_inv_freq(head_dim, partial_rotary_factor=f)` returns the
rotary_dim/2 frequencies; `rotary_dim(head_dim, f)` the count.

`scaling` is a dict modelled on Hugging Face's `rope_parameters`, with the parameter names users
already know; one small function per `rope_type`, each with its record in one registry,
`ROPE_SCALINGS`. Differences from HF: `ntk` (static NTK-aware) is a posenc-only type with no HF
counterpart; `dynamic` needs `original_max_position_embeddings` in the dict (HF takes it from
`config.max_position_embeddings`), and `longrope` needs `factor` (HF falls back to
max_position_embeddings / original_max_position_embeddings; `configs.from_hf_config` fills it in);
YaRN's beta_fast < beta_slow is an error (HF only warns). HF's legacy key `type` is accepted for
`rope_type`; "rope_theta" and "partial_rotary_factor" may sit in the dict, as in HF's rope_parameters.

    linear   PI (Chen et al. 2023): every theta_i / factor  (positions squeezed into the trained range)
    ntk      NTK-aware, static (bloc97): base' = base * factor ** (dim / (dim - 2)) -- the highest
             frequency is kept, the lowest is divided by exactly factor, geometric in between
    dynamic  dynamic NTK (emozilla, as in HF): the ntk base with factor' = factor*L/L0 - (factor-1),
             L = max(seq_len, L0), L0 = original_max_position_embeddings; equal to default for L <= L0
    yarn     YaRN (Peng et al. 2023): per-frequency ramp between interpolation (theta/factor) and
             extrapolation (theta) set by beta_fast/beta_slow rotations over L0, plus an attention
             factor 0.1*ln(factor) + 1 multiplying cos and sin
    longrope LongRoPE (Ding et al. 2024; Phi-3, Phi-3.5, Phi-4-mini): theta_i / lambda_i with one searched
             factor lambda_i per pair: short_factor while the current length L <= L0, long_factor
             once L > L0 (HF: L = max(position_ids) + 1, decided per call); attention factor
             sqrt(1 + ln(factor) / ln(L0)) (1 if factor <= 1) on cos and sin at every length
    llama3   Llama 3.1: wavelengths > L0/low_freq_factor divided by factor, < L0/high_freq_factor kept,
             smooth interpolation between (no band when the two are equal, as in Llama 4 Scout)
    proportional  p-RoPE (Barbero et al. 2025, "Round and Round We Go"; Gemma 4): theta_i = base ** (-2i/dim)
             over the WHOLE head for the fastest int(partial_rotary_factor * dim // 2) pairs and 0 for the
             others (those pairs never rotate), then / factor (default 1). The other meaning of "partial":
             GPT-NeoX/Phi rotate the first rotary_dim dims with theta over rotary_dim; p-RoPE keeps the
             head's pairs (i, i + dim/2) and its frequencies, and stops the slowest ones

dim below is the rotary dim. Every type's function returns (inv_freq, attention_factor); inv_freq is
float64 on the given device (float32 where the device has no float64), so that angles m * theta_i
stay exact far past 65k positions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from . import _checks


def _default(dim, base, device):
    """theta_i = base ** (-2i/dim), i = 0 .. dim/2 - 1."""
    work = _checks.angle_dtype(device)
    return 1.0 / (base ** (torch.arange(0, dim, 2, device=device, dtype=work) / dim))


# ----------------------------------------------------------------------------- one function per rope_type
# Each: (dim, base, device, p (the checked scaling dict), seq_len) -> (inv_freq (dim/2,), attention_factor)
def _plain(dim, base, device, p, seq_len):
    return _default(dim, base, device), 1.0


def _linear(dim, base, device, p, seq_len):
    return _default(dim, base, device) / p["factor"], 1.0


def _ntk(dim, base, device, p, seq_len):
    return _default(dim, base * p["factor"] ** (dim / (dim - 2)), device), 1.0


def _dynamic(dim, base, device, p, seq_len):
    factor, l0 = p["factor"], p["original_max_position_embeddings"]
    length = l0 if seq_len is None else max(seq_len, l0)
    effective = factor * length / l0 - (factor - 1)
    return _default(dim, base * effective ** (dim / (dim - 2)), device), 1.0


def yarn_attention_factor(factor: float, mscale: float = 1.0) -> float:
    """YaRN's attention factor (Peng et al. 2023, "YaRN", eq. for sqrt(1/t); transformers' get_mscale):
    0.1 * mscale * ln(s) + 1 for a scale factor s > 1, else 1. It multiplies cos and sin, so q.k is
    multiplied by its square. DeepSeek's configs give mscale and mscale_all_dim: the factor is then the
    ratio yarn_attention_factor(s, mscale) / yarn_attention_factor(s, mscale_all_dim)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def longrope_attention_factor(factor: float, original_max_position_embeddings: int) -> float:
    """LongRoPE's attention factor (transformers' Phi-3 rule): sqrt(1 + ln(s) / ln(L0)) for s > 1, else 1.
    On cos and sin, so q.k is multiplied by 1 + ln(s) / ln(L0) = ln(s L0) / ln(L0): log-n scaling, but
    a constant set by s, equal to ln(n) / ln(L0) only at n = s L0."""
    if factor <= 1:
        return 1.0
    return math.sqrt(1 + math.log(factor) / math.log(original_max_position_embeddings))


def _yarn_attention_factor(p) -> float:
    if p.get("attention_factor") is not None:
        return p["attention_factor"]
    if p.get("mscale") and p.get("mscale_all_dim"):
        return yarn_attention_factor(p["factor"], p["mscale"]) / yarn_attention_factor(p["factor"], p["mscale_all_dim"])
    return yarn_attention_factor(p["factor"])


def _yarn(dim, base, device, p, seq_len):
    factor, l0 = p["factor"], p["original_max_position_embeddings"]
    beta_fast, beta_slow = p.get("beta_fast") or 32.0, p.get("beta_slow") or 1.0  # None -> default, as in HF

    # the pair index d at which a frequency makes `rotations` turns over l0 tokens
    def pair_dim(rotations):
        return dim * math.log(l0 / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_dim(beta_fast), pair_dim(beta_slow)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # avoid 0/0, as the reference implementation does
    theta = _default(dim, base, device)
    ramp = ((torch.arange(dim // 2, device=device, dtype=theta.dtype) - low) / (high - low)).clamp(0, 1)
    keep = 1 - ramp  # 1: extrapolate (keep theta, high frequencies); 0: interpolate (theta / factor)
    return theta / factor * (1 - keep) + theta * keep, float(_yarn_attention_factor(p))


def _longrope_attention_factor(p) -> float:
    if p.get("attention_factor") is not None:
        return p["attention_factor"]
    return longrope_attention_factor(p["factor"], p["original_max_position_embeddings"])


def _longrope(dim, base, device, p, seq_len):
    # one rescale factor lambda_i per pair: the short set up to L0, the long set beyond (the current length)
    lambdas = p["long_factor"] if seq_len is not None and seq_len > p["original_max_position_embeddings"] \
        else p["short_factor"]
    theta = _default(dim, base, device)
    return theta / torch.tensor(lambdas, device=device, dtype=theta.dtype), float(_longrope_attention_factor(p))


def _llama3(dim, base, device, p, seq_len):
    factor, l0 = p["factor"], p["original_max_position_embeddings"]
    low_ff, high_ff = p["low_freq_factor"], p["high_freq_factor"]
    theta = _default(dim, base, device)
    wavelen = 2 * math.pi / theta
    if high_ff > low_ff:
        smooth = ((l0 / wavelen - low_ff) / (high_ff - low_ff)).clamp(0, 1)  # 0: long waves, 1: short waves
    else:  # no band (Llama 4 Scout: both 1): a step at wavelength L0 / low_freq_factor
        smooth = (l0 / wavelen > low_ff).to(theta.dtype)
    scaled = (1 - smooth) * theta / factor + smooth * theta
    return torch.where(wavelen > l0 / low_ff, theta / factor, torch.where(wavelen < l0 / high_ff, theta, scaled)), 1.0


def _proportional(dim, base, device, p, seq_len):
    # p-RoPE (Gemma 4): the whole head's frequencies, base ** (-2i/dim); only the fastest int(f * dim // 2)
    # pairs keep theirs, the slower ones get 0 (cos 1, sin 0: never rotated); all divided by factor
    rotating = int(p.get("partial_rotary_factor", 1.0) * dim // 2)
    theta = _default(dim, base, device)
    theta = torch.where(torch.arange(dim // 2, device=device) < rotating, theta, torch.zeros_like(theta))
    return theta / p.get("factor", 1.0), 1.0


# ----------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class RopeScaling:
    """One rope_type: its keys in the scaling dict, the function that makes its frequencies, what it does."""
    name: str
    init: Callable  # (dim, base, device, p, seq_len) -> (inv_freq, attention_factor)
    required: tuple = ()
    optional: tuple = ()
    description: str = ""


_L0 = "original_max_position_embeddings"
ROPE_SCALINGS = {r.name: r for r in (
    RopeScaling("default", _plain, description="plain RoPE, theta_i = base ** (-2i/dim)"),
    RopeScaling("linear", _linear, ("factor",), description="position interpolation: every theta_i / factor"),
    RopeScaling("ntk", _ntk, ("factor",), description="static NTK-aware: base * factor ** (dim / (dim - 2))"),
    RopeScaling("dynamic", _dynamic, ("factor", _L0),
                description="dynamic NTK: the ntk base for the current length L > L0, plain RoPE up to L0"),
    RopeScaling("yarn", _yarn, ("factor", _L0),
                ("beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim", "truncate"),
                description="YaRN: ramp from theta (fast pairs) to theta / factor (slow), cos/sin scaled"),
    RopeScaling("longrope", _longrope, ("factor", _L0, "short_factor", "long_factor"), ("attention_factor",),
                description="LongRoPE: theta_i / lambda_i, lambda = short_factor up to L0, long_factor beyond; "
                            "cos/sin scaled"),
    RopeScaling("llama3", _llama3, ("factor", _L0, "low_freq_factor", "high_freq_factor"),
                description="Llama 3.1: long wavelengths / factor, short ones kept, smooth between"),
    RopeScaling("proportional", _proportional, (), ("partial_rotary_factor", "factor"),
                description="p-RoPE (Gemma 4): the head's own frequencies, the slowest 1 - partial_rotary_factor of "
                            "the pairs set to 0; the whole head is the rotary dim"),
)}
# rope_types whose partial_rotary_factor does not shrink the rotary dim: they use it inside their frequencies
WHOLE_HEAD_TYPES = ("proportional",)
WHOLE_HEAD_PARTIAL = ("partial_rotary_factor for rope_type='proportional' goes in the scaling dict: it sets how many "
                      "pairs rotate, not how many dims (the whole head is rotated)")
ROPE_TYPES = tuple(ROPE_SCALINGS)


# ----------------------------------------------------------------------------- checking a scaling dict
def rope_type_of(scaling: dict | None) -> str:
    """scaling['rope_type'], or HF's legacy scaling['type'] (the same thing; both given must agree);
    "default" for None (plain RoPE)."""
    if scaling is None:
        return "default"
    given = {key: scaling[key] for key in ("rope_type", "type") if scaling.get(key) is not None}
    if not given:
        raise ValueError(f"scaling needs a 'rope_type', one of {list(ROPE_TYPES)}")
    if len(set(given.values())) > 1:
        raise ValueError(f"scaling['rope_type'] and its legacy name scaling['type'] disagree: "
                         f"{given['rope_type']!r} and {given['type']!r}")
    key, value = next(iter(given.items()))
    return _checks.choice(f"scaling[{key!r}]", value, ROPE_TYPES)


SHARED_KEYS = ("rope_theta", "partial_rotary_factor")  # accepted with every rope_type, as in HF's rope_parameters


def _fraction(name: str, value) -> float:
    """A partial rotary factor: a number in (0, 1]."""
    value = _checks.positive_float(name, value)
    if value > 1:
        raise ValueError(f"{name} must be in (0, 1] (the fraction of each head's dims that is rotated), got {value}")
    return value


def _factor_list(name: str, values) -> tuple:
    """LongRoPE's per-pair factors: a list or tuple of finite positive numbers."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of numbers (one rescale factor per pair), got {type(values).__name__}")
    return tuple(_checks.positive_float(f"{name}[{i}]", v) for i, v in enumerate(values))


def rotary_dim(head_dim: int, partial_rotary_factor: float = 1.0) -> int:
    """How many dims of a head RoPE rotates: int(head_dim * partial_rotary_factor), Hugging Face's rule.

    GPT-NeoX-20B: head_dim 96, rotary_pct 0.25 -> 24; Phi-2: 80 * 0.4 -> 32; GPT-J-6B states
    rotary_dim = 64 of 256 directly. The rotated dims are the FIRST rotary_dim of the head (both layouts
    pair within them); the rest carry no position. partial_rotary_factor in (0, 1]; the result must be
    even and >= 2 (pairs), else a ValueError naming partial_rotary_factor.
    """
    head_dim = _checks.positive_int("head_dim", head_dim)
    factor = _fraction("partial_rotary_factor", partial_rotary_factor)
    dim = int(head_dim * factor)
    if dim < 2 or dim % 2:
        raise ValueError(f"partial_rotary_factor={factor} of head_dim={head_dim} gives rotary_dim={dim}: it must be "
                         f"even and >= 2 (RoPE rotates pairs of dims)")
    return dim


def _resolve_partial(partial_rotary_factor, scaling) -> float:
    """The keyword, or scaling['partial_rotary_factor'], or 1 (checked: a number in (0, 1]); both given must agree."""
    in_dict = scaling.get("partial_rotary_factor") if isinstance(scaling, dict) else None
    if in_dict is not None:
        in_dict = _fraction("scaling['partial_rotary_factor']", in_dict)
    if partial_rotary_factor is None:
        return 1.0 if in_dict is None else in_dict
    partial_rotary_factor = _fraction("partial_rotary_factor", partial_rotary_factor)
    if in_dict is not None and in_dict != partial_rotary_factor:
        raise ValueError(f"partial_rotary_factor={partial_rotary_factor!r} and scaling['partial_rotary_factor']="
                         f"{in_dict!r} disagree; give it once")
    return partial_rotary_factor


def rotated_fraction(partial_rotary_factor, scaling) -> tuple:
    """(the fraction of each head RoPE rotates, the partial_rotary_factor keyword for rope_inv_freq). p-RoPE
    ("proportional", Gemma 4) rotates the whole head: its scaling['partial_rotary_factor'] stops the slowest
    pairs inside the frequencies, so the keyword is refused there and the rotated fraction is 1."""
    if isinstance(scaling, dict) and rope_type_of(scaling) in WHOLE_HEAD_TYPES:
        if partial_rotary_factor is not None:
            raise ValueError(WHOLE_HEAD_PARTIAL)
        return 1.0, None
    factor = _resolve_partial(partial_rotary_factor, scaling)
    return factor, factor


def _validate(scaling: dict) -> tuple[RopeScaling, dict]:
    """The record of scaling's rope_type and a copy of scaling with every value checked."""
    if not isinstance(scaling, dict):
        raise TypeError(f"scaling must be a dict like {{'rope_type': 'linear', 'factor': 2.0}} or None, "
                        f"got {type(scaling).__name__}")
    record = ROPE_SCALINGS[rope_type_of(scaling)]
    allowed = {"rope_type", "type", *SHARED_KEYS, *record.required, *record.optional}
    unknown = sorted(set(scaling) - allowed)
    if unknown:
        raise ValueError(f"scaling for rope_type={record.name!r} has unknown keys {unknown}; "
                         f"allowed: {sorted(allowed)}")
    missing = [k for k in record.required if scaling.get(k) is None]
    if missing:
        raise ValueError(f"scaling for rope_type={record.name!r} is missing {missing}")
    p = {k: v for k, v in scaling.items() if v is not None}

    def number(key, **bounds):
        if key in p:
            p[key] = _checks.positive_float(f"scaling[{key!r}]", p[key], **bounds)

    number("factor", minimum=1.0, inclusive=True)
    number("rope_theta", minimum=1.0)
    for key in ("low_freq_factor", "high_freq_factor", "beta_fast", "beta_slow", "attention_factor"):
        number(key)
    for key in ("mscale", "mscale_all_dim"):  # 0 means "not given" in HF's formula
        number(key, inclusive=True)
    if "partial_rotary_factor" in p:
        p["partial_rotary_factor"] = _fraction("scaling['partial_rotary_factor']", p["partial_rotary_factor"])
    for key in ("short_factor", "long_factor"):
        if key in p:
            p[key] = _factor_list(f"scaling[{key!r}]", p[key])
    if _L0 in p:
        p[_L0] = _checks.positive_int(f"scaling[{_L0!r}]", p[_L0])
    if "truncate" in p and not isinstance(p["truncate"], bool):
        raise TypeError(f"scaling['truncate'] must be True or False, got {p['truncate']!r}")
    if record.name == "yarn" and p.get("beta_fast", 32.0) < p.get("beta_slow", 1.0):
        raise ValueError(f"scaling['beta_fast'] must be >= scaling['beta_slow'] (fast pairs make more turns), "
                         f"got {p.get('beta_fast', 32.0)} < {p.get('beta_slow', 1.0)} (defaults 32 and 1)")
    if record.name == "llama3" and p["high_freq_factor"] < p["low_freq_factor"]:
        raise ValueError(f"scaling['high_freq_factor'] must be >= scaling['low_freq_factor'] (equal: no smoothing "
                         f"band), got {p['high_freq_factor']} < {p['low_freq_factor']}")
    return record, p


def rope_inv_freq(dim: int, *, base: float = 10000.0, scaling: dict | None = None, seq_len: int | None = None,
                  device=None, partial_rotary_factor: float | None = None) -> tuple[torch.Tensor, float]:
    """(inv_freq, attention_factor) for RoPE on a head of `dim` dims: inv_freq has shape (rotary_dim/2,).

    Plain RoPE: theta_i = base ** (-2i/rotary_dim), i = 0 .. rotary_dim/2 - 1 (pair i rotates by
    m * theta_i at position m), attention_factor 1; rotary_dim = int(dim * partial_rotary_factor)
    (`rotary_dim`; default factor 1, so rotary_dim = dim, which must then be even). scaling: None or
    a dict modelled on Hugging Face's rope_parameters (the differences are in the module docstring),
    {"rope_type": "linear"|"ntk"|"dynamic"|"yarn"|"longrope"|"llama3"|"default", "factor": f (>= 1),
    "original_max_position_embeddings": L0, ...}; each type's formula is in the module docstring and
    its keys in `ROPE_SCALINGS` ("rope_theta", if present, overrides `base`; "partial_rotary_factor"
    may be given there instead of as the keyword, not differently in both). Every scaling formula
    works on the rotary dims, as in HF. seq_len: the current length L (HF: max(position_ids) + 1),
    used by "dynamic" (its L0 is what HF calls max_position_embeddings) and "longrope" (long
    factors when L > L0). attention_factor (YaRN, LongRoPE) multiplies cos and sin. inv_freq is
    float64 (float32 on devices without it) on `device` (default CPU); it agrees with HF's
    ROPE_INIT_FUNCTIONS to a few float32 ulps (HF works in float32). Unknown types, unknown/missing
    keys and out-of-range or non-finite values raise a ValueError (a TypeError for a wrong type)
    naming the key, e.g. scaling['factor'].
    """
    partial = _resolve_partial(partial_rotary_factor, scaling)
    whole_head = isinstance(scaling, dict) and rope_type_of(scaling) in WHOLE_HEAD_TYPES
    if whole_head and partial_rotary_factor is not None:
        raise ValueError(WHOLE_HEAD_PARTIAL)
    dim = (rotary_dim(_checks.positive_int("dim", dim), partial) if partial != 1 and not whole_head
           else _checks.even_int("dim", dim))
    base = _checks.positive_float("base", base, minimum=1.0)
    if seq_len is not None:
        seq_len = _checks.positive_int("seq_len", seq_len)
    device = torch.device(device if device is not None else "cpu")
    if scaling is None:
        return _default(dim, base, device), 1.0
    record, p = _validate(scaling)
    if record.name in ("ntk", "dynamic") and dim < 4:
        raise ValueError(f"dim must be >= 4 for rope_type={record.name!r} (the exponent is dim/(dim-2)), got {dim}")
    for key in ("short_factor", "long_factor"):
        if key in p and len(p[key]) != dim // 2:
            raise ValueError(f"scaling[{key!r}] must have one factor per pair, rotary_dim/2 = {dim // 2} "
                             f"(head dim {dim} rotated{'' if partial == 1 else f' of the head, partial {partial}'}), "
                             f"got {len(p[key])}")
    return record.init(dim, p.get("rope_theta", base), device, p, seq_len)


EXTENSION_METHODS = ("none", "linear", "ntk", "dynamic", "yarn", "llama3")


def extension_scaling(method: str, factor: float, *, original_max_position_embeddings: int,
                      dynamic_factor: float = 2.0, low_freq_factor: float = 1.0,
                      high_freq_factor: float = 4.0) -> dict | None:
    """The `scaling` dict that stretches a RoPE model trained at L0 = original_max_position_embeddings
    to factor * L0 with `method` ("none" -> None: plain RoPE). Dynamic NTK is deployed with one fixed
    `dynamic_factor` (the current length does the rest); Llama 3 uses low/high_freq_factor."""
    _checks.choice("method", method, EXTENSION_METHODS)
    factor = _checks.positive_float("factor", factor, minimum=1.0, inclusive=True)
    l0 = _checks.positive_int("original_max_position_embeddings", original_max_position_embeddings)
    dynamic_factor = _checks.positive_float("dynamic_factor", dynamic_factor, minimum=1.0, inclusive=True)
    low_freq_factor = _checks.positive_float("low_freq_factor", low_freq_factor)
    high_freq_factor = _checks.positive_float("high_freq_factor", high_freq_factor)
    scaling = {
        "none": None,
        "linear": {"rope_type": "linear", "factor": factor},
        "ntk": {"rope_type": "ntk", "factor": factor},
        "dynamic": {"rope_type": "dynamic", "factor": dynamic_factor, "original_max_position_embeddings": l0},
        "yarn": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": l0},
        "llama3": {"rope_type": "llama3", "factor": factor, "original_max_position_embeddings": l0,
                   "low_freq_factor": low_freq_factor, "high_freq_factor": high_freq_factor},
    }[method]
    if scaling is not None:
        _validate(scaling)  # e.g. low_freq_factor < high_freq_factor: checked like any scaling dict
    return scaling
