"""Argument checks shared by every module: each raises a ValueError/TypeError that names the
parameter and says what was expected, so a learner sees the mistake, not a shape error deep inside torch."""
from __future__ import annotations

import numbers

import torch


def positive_int(name: str, value, *, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else ">= 1"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return int(value)


def even_int(name: str, value) -> int:
    value = positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (the encoding works on pairs of dimensions), got {value}")
    return value


def positive_float(name: str, value, *, minimum: float = 0.0, inclusive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} ({value!r})")
    ok = value >= minimum if inclusive else value > minimum
    if not ok:
        raise ValueError(f"{name} must be {'>=' if inclusive else '>'} {minimum}, got {value}")
    return float(value)


def choice(name: str, value, options) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}")
    return value


def float_tensor(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor (float16/bfloat16/float32/float64), got {x.dtype}")
    return x


def int_tensor(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor (positions and offsets count tokens), got {x.dtype}")
    return x


def angle_dtype(device: torch.device) -> torch.dtype:
    """float64 where the device has it (CPU, CUDA, meta), float32 otherwise (e.g. MPS)."""
    return torch.float32 if torch.device(device).type == "mps" else torch.float64


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half-precision inputs are computed in float32; float32/float64 stay as they are."""
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32
