"""RoPE frequencies and the context-extension methods that rescale them.

    theta_i = base ** (-2i / dim),  i = 0 .. dim/2 - 1        (pair i turns by m * theta_i at position m)
    wavelength_i = 2 * pi / theta_i                            (tokens per full turn)

`scaling` is a dict modelled on Hugging Face's `rope_parameters`, with the parameter names users
already know; one small function per `rope_type`, looked up in one registry. Differences from HF:
`ntk` (static NTK-aware) is a posenc-only type with no HF counterpart; `dynamic` needs
`original_max_position_embeddings` in the dict (HF takes it from `config.max_position_embeddings`);
`partial_rotary_factor` is not supported (it is rejected as an unknown key).

    linear   PI (Chen et al. 2023): every theta_i / factor  (positions squeezed into the trained range)
    ntk      NTK-aware, static (bloc97): base' = base * factor ** (dim / (dim - 2)) -- the highest
             frequency is kept, the lowest is divided by exactly factor, geometric in between
    dynamic  dynamic NTK (emozilla, as in HF): the ntk base with factor' = factor*L/L0 - (factor-1),
             L = max(seq_len, L0), L0 = original_max_position_embeddings; equal to default for L <= L0
    yarn     YaRN (Peng et al. 2023): per-frequency ramp between interpolation (theta/factor) and
             extrapolation (theta) set by beta_fast/beta_slow rotations over L0, plus an attention
             factor 0.1*ln(factor) + 1 multiplying cos and sin
    llama3   Llama 3.1: wavelengths > L0/low_freq_factor divided by factor, < L0/high_freq_factor kept,
             smooth interpolation between

Returns (inv_freq, attention_factor); inv_freq is float64 on the given device (float32 where the
device has no float64), so that angles m * theta_i stay exact far past 65k positions.
"""
from __future__ import annotations

import math

import torch

from . import _checks

_REQUIRED = {
    "default": (),
    "linear": ("factor",),
    "ntk": ("factor",),
    "dynamic": ("factor", "original_max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings"),
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
}
_OPTIONAL = {
    "default": (),
    "linear": (),
    "ntk": (),
    "dynamic": (),
    "yarn": ("beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim", "truncate"),
    "llama3": (),
}
ROPE_TYPES = tuple(_REQUIRED)


def _default(dim, base, device):
    work = _checks.angle_dtype(device)
    return 1.0 / (base ** (torch.arange(0, dim, 2, device=device, dtype=work) / dim))


def _linear(dim, base, device, p, seq_len):
    return _default(dim, base, device) / p["factor"], 1.0


def _ntk(dim, base, device, p, seq_len):
    return _default(dim, base * p["factor"] ** (dim / (dim - 2)), device), 1.0


def _dynamic(dim, base, device, p, seq_len):
    factor, l0 = p["factor"], p["original_max_position_embeddings"]
    length = l0 if seq_len is None else max(seq_len, l0)
    effective = factor * length / l0 - (factor - 1)
    return _default(dim, base * effective ** (dim / (dim - 2)), device), 1.0


def _yarn(dim, base, device, p, seq_len):
    factor, l0 = p["factor"], p["original_max_position_embeddings"]
    beta_fast, beta_slow = p.get("beta_fast") or 32.0, p.get("beta_slow") or 1.0  # None -> default, as in HF

    def mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention_factor = p.get("attention_factor")
    if attention_factor is None:
        if p.get("mscale") and p.get("mscale_all_dim"):
            attention_factor = mscale(factor, p["mscale"]) / mscale(factor, p["mscale_all_dim"])
        else:
            attention_factor = mscale(factor)

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
    return theta / factor * (1 - keep) + theta * keep, float(attention_factor)


def _llama3(dim, base, device, p, seq_len):
    factor, l0 = p["factor"], p["original_max_position_embeddings"]
    low_ff, high_ff = p["low_freq_factor"], p["high_freq_factor"]
    if not high_ff > low_ff:
        raise ValueError(f"scaling['high_freq_factor'] must be > scaling['low_freq_factor'], got {high_ff} <= {low_ff}")
    theta = _default(dim, base, device)
    wavelen = 2 * math.pi / theta
    smooth = ((l0 / wavelen - low_ff) / (high_ff - low_ff)).clamp(0, 1)  # 0: long waves, 1: short waves
    scaled = (1 - smooth) * theta / factor + smooth * theta
    return torch.where(wavelen > l0 / low_ff, theta / factor, torch.where(wavelen < l0 / high_ff, theta, scaled)), 1.0


ROPE_INIT_FUNCTIONS = {
    "default": lambda dim, base, device, p, seq_len: (_default(dim, base, device), 1.0),
    "linear": _linear,
    "ntk": _ntk,
    "dynamic": _dynamic,
    "yarn": _yarn,
    "llama3": _llama3,
}


def _validate(scaling: dict) -> tuple[str, dict]:
    if not isinstance(scaling, dict):
        raise TypeError(f"scaling must be a dict like {{'rope_type': 'linear', 'factor': 2.0}} or None, "
                        f"got {type(scaling).__name__}")
    if "rope_type" not in scaling:
        raise ValueError(f"scaling needs a 'rope_type', one of {list(ROPE_TYPES)}")
    rope_type = _checks.choice("scaling['rope_type']", scaling["rope_type"], ROPE_TYPES)
    allowed = {"rope_type", "rope_theta", *_REQUIRED[rope_type], *_OPTIONAL[rope_type]}
    unknown = sorted(set(scaling) - allowed)
    if unknown:
        raise ValueError(f"scaling for rope_type={rope_type!r} has unknown keys {unknown}; allowed: {sorted(allowed)}")
    missing = [k for k in _REQUIRED[rope_type] if scaling.get(k) is None]
    if missing:
        raise ValueError(f"scaling for rope_type={rope_type!r} is missing {missing}")
    p = dict(scaling)
    if "factor" in p:
        p["factor"] = _checks.positive_float("scaling['factor']", p["factor"], minimum=1.0, inclusive=True)
    if "original_max_position_embeddings" in p:
        p["original_max_position_embeddings"] = _checks.positive_int(
            "scaling['original_max_position_embeddings']", p["original_max_position_embeddings"])
    for key in ("low_freq_factor", "high_freq_factor", "beta_fast", "beta_slow"):
        if p.get(key) is not None:
            p[key] = _checks.positive_float(f"scaling[{key!r}]", p[key])
    return rope_type, p


def rope_inv_freq(dim: int, *, base: float = 10000.0, scaling: dict | None = None, seq_len: int | None = None,
                  device=None) -> tuple[torch.Tensor, float]:
    """(inv_freq, attention_factor) for RoPE on head dimension `dim`: inv_freq has shape (dim/2,).

    Plain RoPE: theta_i = base ** (-2i/dim), i = 0 .. dim/2 - 1 (pair i turns by m * theta_i at
    position m), attention_factor 1. scaling: None or a dict modelled on Hugging Face's rope_parameters
    (the differences are in the module docstring),
    {"rope_type": "linear"|"ntk"|"dynamic"|"yarn"|"llama3"|"default", "factor": f (>= 1),
    "original_max_position_embeddings": L0, ...}; each type's formula is in the module docstring
    ("rope_theta", if present, overrides `base`). seq_len: the current length, used by "dynamic"
    only (its L0 is what HF calls max_position_embeddings). attention_factor (YaRN) multiplies cos
    and sin. inv_freq is float64 (float32 on devices without it) on `device` (default CPU); it
    agrees with HF's ROPE_INIT_FUNCTIONS to a few float32 ulps (HF works in float32).
    Unknown types, unknown/missing keys and out-of-range values raise a ValueError naming the key.
    """
    dim = _checks.even_int("dim", dim)
    if isinstance(scaling, dict) and scaling.get("rope_theta") is not None:
        base = scaling["rope_theta"]
    base = _checks.positive_float("base", base, minimum=1.0)
    if seq_len is not None:
        seq_len = _checks.positive_int("seq_len", seq_len)
    device = torch.device(device if device is not None else "cpu")
    if scaling is None:
        return _default(dim, base, device), 1.0
    rope_type, p = _validate(scaling)
    if rope_type in ("ntk", "dynamic") and dim < 4:
        raise ValueError(f"dim must be >= 4 for rope_type={rope_type!r} (the exponent is dim/(dim-2)), got {dim}")
    return ROPE_INIT_FUNCTIONS[rope_type](dim, base, device, p, seq_len)


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
    return {
        "none": None,
        "linear": {"rope_type": "linear", "factor": factor},
        "ntk": {"rope_type": "ntk", "factor": factor},
        "dynamic": {"rope_type": "dynamic", "factor": dynamic_factor, "original_max_position_embeddings": l0},
        "yarn": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": l0},
        "llama3": {"rope_type": "llama3", "factor": factor, "original_max_position_embeddings": l0,
                   "low_freq_factor": low_freq_factor, "high_freq_factor": high_freq_factor},
    }[method]
