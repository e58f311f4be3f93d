"""Rotary position embedding (RoPE, Su et al. 2021).

Pair i of a query or key at position m is rotated by the angle m * theta_i (counter-clockwise):

    [y1]   [cos(m t)  -sin(m t)] [x1]        y1 = x1 cos - x2 sin
    [y2] = [sin(m t)   cos(m t)] [x2]        y2 = x2 cos + x1 sin       (as complex: y = x * e^{i m t})

so <R_m q, R_n k> = Re[sum_i q_i conj(k_i) e^{i (m-n) theta_i}] depends on m - n only.

Which dimensions form a pair is the layout:
    layout="half"         pair i = (x[i], x[i + dim/2])   GPT-NeoX, Hugging Face (`rotate_half`)
    layout="interleaved"  pair i = (x[2i], x[2i+1])        RoFormer, Meta's Llama (`view_as_complex`)
Both are the same rotation up to the fixed permutation `absolute.layout_permutation(dim)` of dims;
mixing them (weights converted for one, code of the other) gives garbage past the first tokens.

Angles m * theta_i are computed in float64 (float32 on devices without it), cos/sin in float32 or
better; bf16/fp16 inputs are rotated in float32 and returned in their own dtype and device.
"""
from __future__ import annotations

import numbers

import torch

from . import _checks
from .attention import PositionalEncoding, check_positions, default_positions
from .scaling import rope_inv_freq

LAYOUTS = ("half", "interleaved")
_CHUNK_ELEMENTS = 1 << 18  # ~1 MB of float32 per step: the chunk and its temporaries stay in cache


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[x1, x2] -> [-x2, x1] on the last dim's halves (the half-split layout's 90-degree turn)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    """(x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...) (the interleaved layout's 90-degree turn)."""
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def rope_angles(positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """m * theta_i in float64 (float32 on devices without float64): (..., seq) x (dim/2,) -> (..., seq, dim/2)."""
    work = _checks.angle_dtype(positions.device)
    return positions.to(work)[..., None] * inv_freq.to(device=positions.device, dtype=work)


def _full_width(t: torch.Tensor, layout: str) -> torch.Tensor:
    """(..., dim/2) -> (..., dim): [c, c] for half, c0 c0 c1 c1 ... for interleaved."""
    return torch.cat((t, t), dim=-1) if layout == "half" else t.repeat_interleave(2, dim=-1)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half") -> torch.Tensor:
    """Rotate x (..., seq, dim) by precomputed cos/sin of shape (..., seq, dim/2) broadcastable to x.

    The result equals the eager form `x * cos_full + rotate_half(x) * sin_full` bit for bit (same
    products, same sums, same rounding), but is computed in cache-sized chunks without the
    temporaries of the eager form. Under autograd the eager form itself is used.
    """
    work = _checks.compute_dtype(x.dtype)
    xw = x.to(work)
    cos_full, sin_full = _full_width(cos.to(work), layout), _full_width(sin.to(work), layout)
    turn = rotate_half if layout == "half" else rotate_every_two
    if (torch.is_grad_enabled() and (x.requires_grad or cos.requires_grad)) or cos_full.dim() > 2 or x.dim() < 2:
        return (xw * cos_full + turn(xw) * sin_full).to(x.dtype)
    seq, dim = x.shape[-2:]
    flat = xw.reshape(-1, seq, dim)  # (N, seq, dim); a view when x is contiguous
    out = torch.empty(flat.shape, device=x.device, dtype=work)
    rows = max(1, _CHUNK_ELEMENTS // max(1, seq * dim))
    tmp = torch.empty((min(rows, flat.shape[0]), seq, dim), device=x.device, dtype=work)
    h = dim // 2
    for start in range(0, flat.shape[0], rows):
        xi, oi = flat[start:start + rows], out[start:start + rows]
        ti = tmp[: xi.shape[0]]
        torch.mul(xi, cos_full, out=oi)  # x * cos
        torch.mul(xi, sin_full, out=ti)  # x * sin, then moved to its partner: turn(x) * sin
        if layout == "half":
            oi[..., :h].sub_(ti[..., h:])  # y1 = x1 cos - x2 sin
            oi[..., h:].add_(ti[..., :h])  # y2 = x2 cos + x1 sin
        else:
            oi[..., 0::2].sub_(ti[..., 1::2])
            oi[..., 1::2].add_(ti[..., 0::2])
    return out.view(x.shape).to(x.dtype)


def _broadcast_to_x(t: torch.Tensor, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """cos/sin of shape (B, T, d/2) from batched positions -> (B, 1, ..., T, d/2) to line up with x."""
    if positions.dim() == 1:
        return t
    if x.dim() < 3 or x.shape[0] not in (1, positions.shape[0]):
        raise ValueError(f"batched positions of shape {tuple(positions.shape)} need x of shape "
                         f"(batch={positions.shape[0]}, ..., seq, dim), got {tuple(x.shape)}")
    return t.reshape(t.shape[0], *([1] * (x.dim() - 3)), *t.shape[1:])


def _check_x(x, name="x"):
    _checks.float_tensor(name, x)
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., seq, dim), got {tuple(x.shape)}")
    _checks.even_int(f"{name}'s last dimension (head_dim)", x.shape[-1])


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0,
               inv_freq: torch.Tensor | None = None, attention_factor: float = 1.0,
               layout: str = "half") -> torch.Tensor:
    """Rotate every pair of x (..., seq, dim) by positions * theta (see the module docstring).

    positions: (seq,) or (batch, seq) integers (default 0..seq-1). inv_freq: (dim/2,) frequencies,
    e.g. from `rope_inv_freq` with a scaling; default base ** (-2i/dim). attention_factor multiplies
    cos and sin (YaRN). Returns a new tensor of x's shape, dtype and device; x is not modified.
    """
    _check_x(x)
    _checks.choice("layout", layout, LAYOUTS)
    positions = default_positions(x) if positions is None else check_positions(positions, x.shape[-2], device=x.device)
    dim = x.shape[-1]
    if inv_freq is None:
        inv_freq, _ = rope_inv_freq(dim, base=base, device=x.device)
    elif not isinstance(inv_freq, torch.Tensor) or inv_freq.shape != (dim // 2,):
        raise ValueError(f"inv_freq must be a tensor of shape (dim/2,) = ({dim // 2},), got "
                         f"{tuple(inv_freq.shape) if isinstance(inv_freq, torch.Tensor) else type(inv_freq).__name__}")
    angles = rope_angles(positions, inv_freq)  # (..., T, d/2)
    cos, sin = angles.cos() * attention_factor, angles.sin() * attention_factor
    cos, sin = _broadcast_to_x(cos, x, positions), _broadcast_to_x(sin, x, positions)
    return rotate(x, cos, sin, layout)


def rope_complex(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0) -> torch.Tensor:
    """The derivation's form: pairs (x[2i], x[2i+1]) as complex numbers z_i, times e^{i m theta_i}.

    Same result as apply_rope(x, positions, base=base, layout="interleaved") up to rounding.
    """
    _check_x(x)
    positions = default_positions(x) if positions is None else check_positions(positions, x.shape[-2], device=x.device)
    inv_freq, _ = rope_inv_freq(x.shape[-1], base=base, device=x.device)
    angles = rope_angles(positions, inv_freq)
    work = _checks.compute_dtype(x.dtype)
    rotation = torch.polar(torch.ones_like(angles), angles)  # e^{i m theta}, complex128 (or complex64)
    rotation = _broadcast_to_x(rotation, x, positions)
    z = torch.view_as_complex(x.to(work).reshape(*x.shape[:-1], -1, 2).contiguous())  # (..., T, d/2)
    out = torch.view_as_real(z * rotation.to(z.dtype)).flatten(-2)
    return out.to(x.dtype)


def rope_matrix(position: int, dim: int, *, base: float = 10000.0, layout: str = "interleaved",
                device=None, dtype=torch.float64) -> torch.Tensor:
    """The explicit (dim, dim) block-diagonal rotation R_m, so that apply_rope(x)[m] == R_m @ x[m]."""
    _checks.choice("layout", layout, LAYOUTS)
    if isinstance(position, bool) or not isinstance(position, numbers.Integral):
        raise TypeError(f"position must be an int (a token index), got {type(position).__name__} ({position!r})")
    inv_freq, _ = rope_inv_freq(dim, base=base, device=device)
    angle = int(position) * inv_freq.to(dtype)
    c, s = angle.cos(), angle.sin()
    h = dim // 2
    first = torch.arange(h, device=device) if layout == "half" else torch.arange(0, dim, 2, device=device)
    second = first + h if layout == "half" else first + 1
    R = torch.zeros(dim, dim, device=device, dtype=dtype)
    R[first, first], R[first, second] = c, -s
    R[second, first], R[second, second] = s, c
    return R


class RotaryEmbedding(PositionalEncoding):
    """RoPE as a module: forward(q, k, positions=None) -> (rotated q, rotated k).

    q, k: (batch, heads, seq, head_dim). cos/sin tables are cached per (device, dtype), grown
    (doubled) only when a position beyond the cached length is asked for, never rebuilt on every
    call; `cache_builds` counts how often a table was built. With scaling {"rope_type": "dynamic"}
    the frequencies depend on the length, so the table is rebuilt when that length changes.
    """

    def __init__(self, dim: int, *, base: float = 10000.0, layout: str = "half", scaling: dict | None = None):
        super().__init__()
        self.dim = _checks.even_int("dim", dim)
        self.base = _checks.positive_float("base", base, minimum=1.0)
        self.layout = _checks.choice("layout", layout, LAYOUTS)
        rope_inv_freq(self.dim, base=self.base, scaling=scaling)  # validate now, not at the first call
        self.scaling = scaling
        self._cache: dict = {}  # (device, dtype) -> (length, key, cos, sin)
        self.cache_builds = 0

    def _tables(self, positions: torch.Tensor, dtype: torch.dtype):
        device = positions.device
        dynamic = self.scaling is not None and self.scaling.get("rope_type") == "dynamic"
        if device.type == "meta":  # values unknowable: compute for these positions, nothing to cache
            inv, factor = rope_inv_freq(self.dim, base=self.base, scaling=self.scaling, device=device)
            angles = rope_angles(positions, inv)
            return (angles.cos() * factor).to(dtype), (angles.sin() * factor).to(dtype), False
        needed = int(positions.max()) + 1 if positions.numel() else 1
        key = (device, dtype)
        seq_key = needed if dynamic else None
        entry = self._cache.get(key)
        if entry is None or entry[0] < needed or entry[1] != seq_key:
            length = needed if dynamic else max(needed, 2 * entry[0] if entry else 0, 64)
            inv, factor = rope_inv_freq(self.dim, base=self.base, scaling=self.scaling, device=device,
                                        seq_len=needed if dynamic else None)
            angles = rope_angles(torch.arange(length, device=device), inv)
            entry = (length, seq_key, (angles.cos() * factor).to(dtype), (angles.sin() * factor).to(dtype))
            self._cache[key] = entry
            self.cache_builds += 1
        return entry[2], entry[3], True

    def _rotate_one(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        if positions.device.type != "meta" and positions.numel() and int(positions.min()) < 0:
            raise ValueError(f"positions must be >= 0 for RotaryEmbedding's cache, got min {int(positions.min())}")
        cos, sin, cached = self._tables(positions, _checks.compute_dtype(x.dtype))
        if cached:
            cos, sin = cos[positions], sin[positions]  # (..., T, d/2)
        return rotate(x, _broadcast_to_x(cos, x, positions), _broadcast_to_x(sin, x, positions), self.layout)

    def forward(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor | None = None):
        return self.rotate_qk(q, k, positions, positions)

    def rotate_qk(self, q, k, q_positions=None, k_positions=None):
        _check_x(q, "q")
        _check_x(k, "k")
        for name, t in (("q", q), ("k", k)):
            if t.shape[-1] != self.dim:
                raise ValueError(f"{name}'s last dimension must be dim={self.dim}, got {t.shape[-1]}")
        q_positions = default_positions(q) if q_positions is None else check_positions(q_positions, q.shape[-2], device=q.device)
        k_positions = default_positions(k) if k_positions is None else check_positions(k_positions, k.shape[-2], device=k.device)
        return self._rotate_one(q, q_positions), self._rotate_one(k, k_positions)

    def extra_repr(self):
        return f"dim={self.dim}, base={self.base}, layout={self.layout!r}, scaling={self.scaling}"


def rope_decay_bound(distance, dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoFormer's relative upper bound on a RoPE score at relative distance r = m - n (Su et al. 2021, sec. 3.4.3).

    Take the d/2 pairs of q and k as complex numbers and h_i = q_i * conj(k_i); then the score is
    <R_m q, R_n k> = Re sum_{i<d/2} h_i e^{i r theta_i}, theta_i = base ** (-2i/d). With the partial
    sums S_j = sum_{k<j} e^{i r theta_k} (S_0 = 0) and h_{d/2} = 0, Abel summation gives

        |score| <= (max_i |h_{i+1} - h_i|) * sum_{j=1}^{d/2} |S_j|.

    This returns the part that depends on the distance, averaged over the pairs:
    (1 / (d/2)) * sum_{j=1}^{d/2} |S_j|, which equals (d/2 + 1) / 2 at r = 0 and shrinks as |r| grows
    (the "long-term decay"). It depends on |r| only (S_j(-r) = conj S_j(r)).

    distance: a number, a sequence or a tensor of real distances (any shape); dim: even head dim.
    Returns a float64 tensor of distance's shape (float32 on devices without float64), on its device.
    """
    dim = _checks.even_int("dim", dim)
    base = _checks.positive_float("base", base, minimum=1.0)
    if isinstance(distance, torch.Tensor):
        if distance.is_complex() or distance.dtype == torch.bool:
            raise TypeError(f"distance must hold real numbers, got a tensor of {distance.dtype}")
        device = distance.device
    else:
        device = torch.device("cpu")
        try:
            distance = torch.as_tensor(distance, dtype=torch.float64, device=device)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"distance must be a number, a sequence of numbers or a tensor, got {distance!r}") from error
    work = _checks.angle_dtype(device)
    inv_freq, _ = rope_inv_freq(dim, base=base, device=device)
    angles = distance.to(work)[..., None] * inv_freq.to(work)  # (..., d/2): r * theta_k
    partial_sums = torch.polar(torch.ones_like(angles), angles).cumsum(dim=-1)  # S_1 .. S_{d/2}
    return partial_sums.abs().mean(dim=-1)
