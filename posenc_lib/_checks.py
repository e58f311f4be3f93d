"""Argument checks shared by every module: each raises a ValueError/TypeError that names the
parameter and says what was expected, so a learner sees the mistake, not a shape error deep inside torch."""
from __future__ import annotations

import math
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
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
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


def boolean(name: str, value) -> bool:
    """A real bool (a string such as "no" is truthy, which would silently mean True)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool (True or False), got {type(value).__name__} ({value!r})")
    return value


# Positions are counted in int64 and turned into angles in float64, which holds every integer up to
# 2**53 exactly; past that, sin(m * theta) would be computed for another m, and key - query of two
# positions near the int64 limits would overflow. So |position| <= 2**53 everywhere.
MAX_POSITION = 2 ** 53


def values_are_cheap(t: torch.Tensor) -> bool:
    """Whether a check may read t's values: only for a CPU tensor outside torch.compile. Reading a CUDA
    tensor's values back to the host (`int(t.max())`, `bool(t.all())`) waits for the GPU on every call,
    every layer, every step, and under torch.compile it breaks the graph; the meta device has no values.
    So value checks (a position's range, finite frequencies) run where they cost nothing; on other devices
    the settings a module is built from are still checked when it is built, and torch's own checks apply
    to the values (an index out of range, say)."""
    return t.is_cpu and not torch.compiler.is_compiling()


def value_range(t: torch.Tensor) -> tuple[int, int]:
    """(min, max) of a non-empty CPU integer tensor as Python ints (a decoding step's one position is
    read as a list: a few microseconds less than a reduction, in every call)."""
    if t.numel() <= 16:
        values = t.flatten().tolist()
        return min(values), max(values)
    return tuple(int(v) for v in torch.aminmax(t))


def position_values(name: str, value: torch.Tensor) -> torch.Tensor:
    """An integer tensor of positions as int64 (uint8/int16/int32 would wrap around in key - query),
    every value within +-MAX_POSITION (checked where values are cheap: see `values_are_cheap`)."""
    return _in_range(name, int_tensor(name, value))


def _in_range(name: str, value: torch.Tensor) -> torch.Tensor:
    """`position_values` of an integer tensor."""
    if value.dtype != torch.int64:
        value = value.to(torch.int64)
    if values_are_cheap(value) and value.numel():
        low, high = value_range(value)
        if low < -MAX_POSITION or high > MAX_POSITION:
            raise ValueError(f"{name} must lie within +-2**53 (angles are computed in float64, exact up to 2**53), "
                             f"got min {low}, max {high}")
    return value


def angle_dtype(device: torch.device) -> torch.dtype:
    """float64 where the device has it (CPU, CUDA, meta), float32 otherwise (e.g. MPS)."""
    return torch.float32 if torch.device(device).type == "mps" else torch.float64


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half-precision inputs are computed in float32; float32/float64 stay as they are."""
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def same_device(reference_name: str, reference: torch.Tensor, **others) -> None:
    """Every tensor in `others` (name=tensor; None is skipped) must be on reference's device.

    Never moved silently: a CPU tensor next to a CUDA (or meta) one is a mistake the caller should
    see, as torch itself reports it, but with the parameters named."""
    owner = reference_name + ("'" if reference_name.endswith("s") else "'s")
    for name, t in others.items():
        if t is not None and t.device != reference.device:
            raise ValueError(f"{name} must be on {owner} device ({reference.device}), got {t.device}")


def positions(name: str, value, *, seq_len: int, device: torch.device, batch: int | None = None) -> torch.Tensor:
    """Integer positions of shape (seq,) or (batch', seq) with seq == seq_len, on `device`, as int64
    within +-MAX_POSITION (see `position_values`).

    batch: the batch size of the tensor they index (None: no batch there, so only (seq,) fits);
    a (batch', seq) tensor needs batch' == batch or batch' == 1. Raises a TypeError for lists,
    float, bool or complex tensors, a ValueError for other shapes or another device."""
    value = int_tensor(name, value)
    if value.dim() not in (1, 2) or value.shape[-1] != seq_len:
        raise ValueError(f"{name} must have shape (seq,) or (batch, seq) with seq={seq_len}, "
                         f"got shape {tuple(value.shape)}")
    if value.dim() == 2 and value.shape[0] not in (1, batch):
        expected = ("no batch dimension (shape (seq,))" if batch is None
                    else "batch 1" if batch == 1 else f"batch 1 or {batch}")
        raise ValueError(f"{name} of shape {tuple(value.shape)} does not fit: expected {expected}")
    if value.device != device and value.device != torch.device(device):  # (a torch.device: no conversion)
        raise ValueError(f"{name} must be on the device of the tensor it indexes ({device}), got {value.device}")
    return _in_range(name, value)


def finite_tensor(name: str, t: torch.Tensor) -> torch.Tensor:
    """A floating tensor with no NaN or inf (checked where values are cheap: see `values_are_cheap`)."""
    float_tensor(name, t)
    if values_are_cheap(t) and t.numel() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must hold finite numbers, got NaN or inf")
    return t


def float_dtype(name: str, dtype) -> torch.dtype | None:
    """None, or a floating dtype: the library's tables hold fractions (sin, cos, slopes)."""
    if dtype is None:
        return None
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype or None, got {type(dtype).__name__} ({dtype!r})")
    if not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point dtype (the values are fractions), got {dtype}")
    return dtype


# ------------------------------------------------------------------------------ sizes, before anything is made
# Stated limits on what a size may ask for: above them an error names the setting, never a MemoryError or a
# build that does not end. Real models stay far below (the deepest published stacks have about 130 layers; the
# widest heads 512 dims, hidden sizes about 25,000).
MAX_LAYERS = 1024
MAX_HEAD_DIM = 4096
MAX_HIDDEN = 1 << 20


def at_most(name: str, value, limit: int, why: str):
    """value (a checked number) if it is <= limit, else a ValueError naming it, the limit and why there is one."""
    if value > limit:
        shown = f"{value:,}" if value < 10 ** 30 else f"a number of {int(math.log10(value)) + 1} digits"
        raise ValueError(f"{name} must be <= {limit:,} ({why}), got {shown}")
    return value


def index(name: str, value, size: int, what: str) -> int:
    """An int in [0, size): one of `size` things (a layer of the cache, say), named with `what` they are."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int in [0, {what}={size}), got {type(value).__name__} ({value!r})")
    if not 0 <= value < size:
        raise ValueError(f"{name} must be an int in [0, {what}={size}), got {value}")
    return int(value)


def pair_slice(name: str, value, size: int) -> tuple[int, int]:
    """(start, stop): ints with 0 <= start < stop <= size and stop - start even (dims that form pairs)."""
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in value)):
        raise TypeError(f"{name} must be a pair of ints (start, stop), got {value!r}")
    start, stop = int(value[0]), int(value[1])
    if not 0 <= start < stop <= size or (stop - start) % 2:
        raise ValueError(f"{name} must be (start, stop) with 0 <= start < stop <= {size} (x's last dimension) and "
                         f"stop - start even (pairs of dims), got {tuple(value)}")
    return start, stop


def lengths(name: str, values, *, max_total: int, why: str) -> list[int]:
    """A non-empty list (tuple, range, 1-D integer tensor) of positive ints whose sum is at most max_total, as
    Python ints; each bad entry is named as name[i]."""
    if isinstance(values, torch.Tensor):
        if values.dim() != 1:
            raise ValueError(f"{name} must be a 1-D list of lengths, got a tensor of shape {tuple(values.shape)}")
        values = int_tensor(name, values).tolist()
    if not isinstance(values, (list, tuple, range)):
        raise TypeError(f"{name} must be a list of positive ints (one length per document), got "
                        f"{type(values).__name__} ({values!r:.40})")
    if not values:
        raise ValueError(f"{name} must hold at least one length, got an empty {type(values).__name__}")
    out = [positive_int(f"{name}[{i}]", n) for i, n in enumerate(values)]
    at_most(f"sum({name})", sum(out), max_total, why)
    return out


def device(name: str, value) -> torch.device | None:
    """None, or a torch.device (a name such as "cpu" or "cuda:0" is made into one)."""
    if value is None or isinstance(value, torch.device):
        return value
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a torch.device, a device name such as 'cpu' or 'cuda', or None, "
                        f"got {type(value).__name__} ({value!r:.40})")
    try:
        return torch.device(value)
    except RuntimeError as error:
        raise ValueError(f"{name} must name a device such as 'cpu' or 'cuda:0', got {value!r}") from error


def token_ids(name: str, ids, vocab_size: int) -> torch.Tensor:
    """Token ids (batch, seq >= 1) of integers in [0, vocab_size), as int64 (the range checked where values are
    cheap: see `values_are_cheap`; elsewhere the embedding's own index check applies)."""
    ids = int_tensor(name, ids)
    if ids.dim() != 2 or ids.shape[-1] == 0:
        raise ValueError(f"{name} must have shape (batch, seq) with seq >= 1, got {tuple(ids.shape)}")
    if values_are_cheap(ids) and ids.numel():
        low, high = value_range(ids)
        if low < 0 or high >= vocab_size:
            raise ValueError(f"{name} must hold token ids in [0, vocab_size={vocab_size}), got min {low}, max {high}")
    return ids if ids.dtype == torch.int64 else ids.long()


def start_positions(name: str, value, *, batch: int, seq_len: int, device) -> torch.Tensor:
    """(batch,) integer positions >= 0 from which each row's seq_len new tokens count on, as int64 on `device`;
    the last of them, start + seq_len - 1, must stay within MAX_POSITION (a start near the int64 limit would
    wrap to negative positions). Values checked where they are cheap (see `values_are_cheap`)."""
    value = int_tensor(name, value)
    if tuple(value.shape) != (batch,):
        raise ValueError(f"{name} must have shape (batch,) = ({batch},), got {tuple(value.shape)}")
    if value.device != torch.device(device):
        raise ValueError(f"{name} must be on the device of the tensor it indexes ({device}), got {value.device}")
    value = value if value.dtype == torch.int64 else value.to(torch.int64)
    if values_are_cheap(value) and value.numel():
        low, high = value_range(value)
        if low < 0 or high > MAX_POSITION - seq_len + 1:
            raise ValueError(f"{name} must lie in [0, 2**53 - seq + 1] with seq={seq_len} (positions start there and "
                             f"count on in float64-exact integers), got min {low}, max {high}")
    return value
