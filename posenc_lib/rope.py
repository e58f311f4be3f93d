"""Rotary position embedding (RoPE, Su et al. 2021).

Pair i of a query or key at position m is rotated counter-clockwise by the angle m * theta_i,
theta_i = base ** (-2i / rotary_dim):

    [y1]   [cos(m t)  -sin(m t)] [x1]        y1 = x1 cos - x2 sin
    [y2] = [sin(m t)   cos(m t)] [x2]        y2 = x2 cos + x1 sin       (as complex: y = x * exp(1j * m * t))

(t = theta_i; 1j is the imaginary unit, as Python writes it, to keep it apart from the pair index i).
For a query q at position m and a key k at position n, with q_i, k_i pair i read as complex numbers,

    <R_m q, R_n k> = Re[ sum_i q_i * conj(k_i) * exp(1j * (m - n) * theta_i) ]

depends on m - n only. m - n is query - key, as RoFormer writes it; the course's relative position
(relative.py, alibi.py, notebook 05) is r = key - query = n - m, so m - n = -r: a key 3 tokens
before its query has m - n = +3 and r = -3. Per pair, with phi = (m - n) * theta_i,

    score_i = (q1 k1 + q2 k2) cos(phi) + (q1 k2 - q2 k1) sin(phi)

whose sine term changes sign with m - n: the scores at m - n = +3 and -3 differ by
2 * sum_i (q1 k2 - q2 k1) sin(3 theta_i), which vanishes at every distance only when q is parallel to
k in every pair (q1 k2 = q2 k1). Notebook 06 checks both formulas against apply_rope.

Which dimensions form a pair is the layout:
    layout="half"         pair i = (x[i], x[i + dim/2])   GPT-NeoX, Hugging Face (`rotate_half`)
    layout="interleaved"  pair i = (x[2i], x[2i+1])        RoFormer, Meta's Llama (`view_as_complex`)
Both are the same rotation up to the fixed permutation `absolute.layout_permutation(dim)` of dims;
mixing them (weights converted for one, code of the other) leaves only the scores at m = n right:
every non-zero distance is wrong.

rotary_dim is the number of dims a form rotates (the whole head unless partial or decoupled); the
other dims are copied. Angles m * theta_i are computed in float64 (float32 on devices without it),
cos/sin in float32 or better; bf16/fp16 inputs are rotated in float32 and returned in their own
dtype and device. Positions are integer tensors of shape (seq,) or (batch, seq) on x's device.
"""
from __future__ import annotations

import numbers

import torch

from . import _checks
from .attention import PositionalEncoding, default_positions
from .scaling import WHOLE_HEAD_PARTIAL, WHOLE_HEAD_TYPES, _resolve_partial, rope_inv_freq, rope_type_of, rotary_dim

LAYOUTS = ("half", "interleaved")


# ----------------------------------------------------------------------------- the rotation
def _pair_members(t: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., D) -> two (..., D/2) views: the first and second member of every pair (see `layout`)."""
    if layout == "half":
        return t.chunk(2, dim=-1)  # [x1 | x2]
    return t.unflatten(-1, (-1, 2)).unbind(-1)  # (x1_0, x2_0, x1_1, x2_1, ...)


def _join_pairs(y1: torch.Tensor, y2: torch.Tensor, layout: str) -> torch.Tensor:
    """Two (..., D/2) tensors -> (..., D) in `layout`: the inverse of `_pair_members`."""
    return torch.cat((y1, y2), dim=-1) if layout == "half" else torch.stack((y1, y2), dim=-1).flatten(-2)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> torch.Tensor:
    """Every pair (x1, x2) of `layout` rotated counter-clockwise by its angle (unchecked):

        [y1]   [cos  -sin] [x1]        y1 = x1 cos - x2 sin
        [y2] = [sin   cos] [x2]        y2 = x2 cos + x1 sin

    x (..., seq, dim); cos, sin (..., seq, dim/2), one value per pair, in float32 (float64 for float64 x).
    Hugging Face writes the same products as x * [c, c] + rotate_half(x) * [s, s]: equal bit for bit.
    """
    if x.dtype not in (torch.float32, torch.float64):  # bf16/fp16: rotated in float32, rounded once at the end
        return _rotate(x.float(), cos, sin, layout).to(x.dtype)
    x1, x2 = _pair_members(x, layout)  # (..., seq, dim/2) each
    return _join_pairs(x1 * cos - x2 * sin, x2 * cos + x1 * sin, layout)


def _rotate_slice(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, start: int = 0) -> torch.Tensor:
    """x (..., seq, dim) with dims start .. start + rotary_dim - 1 rotated, the others copied, where
    rotary_dim = 2 * cos.shape[-1] (the tables say how wide; start says where, as lucidrains' start_index).
    Full RoPE: start 0, rotary_dim = dim; partial (GPT-NeoX, Phi, GPT-J): start 0; decoupled (DeepSeek): the end."""
    stop = start + 2 * cos.shape[-1]
    if start == 0 and stop == x.shape[-1]:
        return _rotate(x, cos, sin, layout)
    return torch.cat((x[..., :start], _rotate(x[..., start:stop], cos, sin, layout), x[..., stop:]), dim=-1)


def _rotate_90(x: torch.Tensor, layout: str) -> torch.Tensor:
    """Each pair (x1, x2) -> (-x2, x1): a rotation by 90 degrees (unchecked; the public forms check)."""
    x1, x2 = _pair_members(x, layout)
    return _join_pairs(-x2, x1, layout)


def _check_pairs(name: str, x) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < 1 or x.shape[-1] % 2:
        raise ValueError(f"{name}'s last dimension must be even (pairs of dims), got shape {tuple(x.shape)}")


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """x (..., dim) = [x1 | x2] (halves) -> [-x2 | x1]: the half-split layout's 90-degree rotation (GPT-NeoX/HF).

    With it, RoPE in the "half" layout is x * [cos, cos] + rotate_half(x) * [sin, sin] (cos/sin of
    shape (..., dim/2)): pair i = (x[i], x[i + dim/2]) rotated counter-clockwise. Same as HF's rotate_half.
    """
    _check_pairs("x", x)
    return _rotate_90(x, "half")


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    """x (..., dim) = (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...): the interleaved layout's 90-degree rotation.

    RoPE in the "interleaved" layout (RoFormer, Meta's Llama) is x * cos_rep + rotate_every_two(x) * sin_rep
    with cos_rep = (c0, c0, c1, c1, ...): pair i = (x[2i], x[2i+1]) rotated counter-clockwise.
    """
    _check_pairs("x", x)
    return _rotate_90(x, "interleaved")


# ----------------------------------------------------------------------------- the cos/sin tables
def _cos_sin(positions: torch.Tensor, inv_freq: torch.Tensor, attention_factor: float, dtype: torch.dtype):
    """a cos(m theta_i), a sin(m theta_i): positions (...,), inv_freq (rotary_dim/2,) -> (..., rotary_dim/2) each."""
    # m * theta_i in float64 (int64 times float64: m exact up to 2**53; float32 where the device has no float64)
    angles = positions.unsqueeze(-1) * inv_freq.to(_checks.angle_dtype(positions.device))
    cos, sin = angles.cos(), angles.sin()
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos.to(dtype), sin.to(dtype)


def _check_inv_freq(inv_freq, owner_name: str, owner: torch.Tensor, rotary_dim: int | None = None) -> torch.Tensor:
    """inv_freq: a finite floating (rotary_dim/2,) tensor (any length when rotary_dim is None) on owner's device."""
    if not isinstance(inv_freq, torch.Tensor):
        raise TypeError(f"inv_freq must be a torch.Tensor of frequencies theta_i, got {type(inv_freq).__name__}")
    if inv_freq.dim() != 1 or (rotary_dim is not None and inv_freq.shape[0] != rotary_dim // 2):
        expected = "(rotary_dim/2,)" if rotary_dim is None else f"(rotary_dim/2,) = ({rotary_dim // 2},)"
        raise ValueError(f"inv_freq must be a tensor of shape {expected}, got {tuple(inv_freq.shape)}")
    _checks.same_device(owner_name, owner, inv_freq=inv_freq)
    return _checks.finite_tensor("inv_freq", inv_freq)


def rope_cos_sin(positions: torch.Tensor, inv_freq: torch.Tensor, *, attention_factor: float = 1.0,
                 dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """The tables a * cos(m * theta_i) and a * sin(m * theta_i) for positions m, frequencies theta_i.

    positions: (...,) integers, e.g. (seq,) or (batch, seq); inv_freq: (rotary_dim/2,) on positions'
    device. Returns two tensors of shape (..., rotary_dim/2) in `dtype` (a floating dtype) on positions'
    device. The angles and their cos/sin are computed in float64 (float32 on devices without it) and
    rounded once to `dtype`; a is the attention factor (YaRN; 1 otherwise).
    """
    positions = _checks.position_values("positions", positions)
    inv_freq = _check_inv_freq(inv_freq, "positions", positions)
    attention_factor = _checks.positive_float("attention_factor", attention_factor)
    return _cos_sin(positions, inv_freq, attention_factor, _checks.float_dtype("dtype", dtype) or torch.float32)


def _positions(positions, x: torch.Tensor, name: str = "positions") -> torch.Tensor:
    """Checked positions for x (..., seq, dim): (seq,) or (batch, seq) ints on x's device (default 0..seq-1)."""
    if positions is None:
        return default_positions(x)
    batch = x.shape[0] if x.dim() >= 3 else None
    positions = _checks.positions(name, positions, seq_len=x.shape[-2], device=x.device, batch=batch)
    return positions[0] if positions.dim() == 2 and x.dim() < 3 else positions  # (1, seq) for x (seq, dim)


def _over_heads(table: torch.Tensor, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """A table (batch, seq, r/2) from batched positions -> (batch, 1, ..., seq, r/2), to broadcast over x's heads."""
    if positions.dim() == 1:
        return table
    return table.reshape(table.shape[0], *([1] * (x.dim() - 3)), *table.shape[1:])


def _tables_for(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor, attention_factor: float):
    """cos/sin (..., seq, rotary_dim/2) for x's (checked) positions, in x's compute dtype, lined up over its heads."""
    cos, sin = _cos_sin(positions, inv_freq, attention_factor, _checks.compute_dtype(x.dtype))
    return _over_heads(cos, x, positions), _over_heads(sin, x, positions)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half") -> torch.Tensor:
    """Rotate x (..., seq, dim) by precomputed cos/sin that broadcast to (..., seq, dim/2).

    cos/sin: e.g. (seq, dim/2) from `rope_cos_sin`, or (batch, 1, seq, dim/2) for batched positions, on
    x's device. Returns a new tensor of x's shape, dtype and device (x is not modified), computed in
    float32 (float64 for float64 x). Given the same tables, it equals Hugging Face's eager
    `x * [c, c] + rotate_half(x) * [s, s]` bit for bit: the same products and sums, each rounded once
    (x1 c - x2 s is x1 c + (-x2) s exactly). For fused speed, compile it (`torch.compile`).
    """
    _check_x(x)
    _checks.choice("layout", layout, LAYOUTS)
    half = (*x.shape[:-1], x.shape[-1] // 2)
    for name, table in (("cos", cos), ("sin", sin)):
        _checks.float_tensor(name, table)
        try:
            fits = torch.broadcast_shapes(table.shape, half) == half
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"{name} of shape {tuple(table.shape)} must broadcast to x's (..., seq, dim/2) = {half}")
    _checks.same_device("x", x, cos=cos, sin=sin)
    work = _checks.compute_dtype(x.dtype)
    return _rotate(x, cos.to(work), sin.to(work), layout)


def _check_x(x, name: str = "x", *, even: bool = True) -> None:
    """x: a floating (..., seq, dim) tensor; dim even unless only part of it is rotated (even=False)."""
    _checks.float_tensor(name, x)
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., seq, dim), got {tuple(x.shape)}")
    check = _checks.even_int if even else _checks.positive_int
    check(f"{name}'s last dimension (head_dim)", x.shape[-1])


# ----------------------------------------------------------------------------- the public forms
def apply_rope_to_dims(x: torch.Tensor, positions: torch.Tensor | None = None, *, inv_freq: torch.Tensor,
                       start: int = 0, attention_factor: float = 1.0, layout: str = "half") -> torch.Tensor:
    """RoPE on one slice of each head: dims start .. start + rotary_dim - 1 rotated, the others copied.

    rotary_dim = 2 * len(inv_freq): pair i of the slice (`layout`'s pairs, formed within it) at position m
    is rotated by m * inv_freq[i], cos and sin multiplied by attention_factor. x (..., seq, head_dim);
    positions (seq,) or (batch, seq) integers on x's device (default 0 .. seq-1); inv_freq (rotary_dim/2,)
    finite, on x's device. `apply_rope` (start 0) and `apply_decoupled_rope` (the last dims) are this
    with their frequencies; a checkpoint's layer (configs.LayerPositions.apply) calls it with its own slice.
    Returns a new tensor of x's shape, dtype and device.
    """
    _check_x(x, even=False)
    _check_inv_freq(inv_freq, "x", x)
    start = _checks.positive_int("start", start, allow_zero=True)
    if start + 2 * inv_freq.shape[0] > x.shape[-1]:
        raise ValueError(f"start={start} + rotary_dim={2 * inv_freq.shape[0]} (2 * len(inv_freq)) must be <= x's last "
                         f"dimension (head_dim {x.shape[-1]})")
    return _apply_to_dims(x, positions, inv_freq, start, attention_factor, layout)


def _apply_to_dims(x, positions, inv_freq, start: int, attention_factor, layout: str) -> torch.Tensor:
    """apply_rope_to_dims once x, inv_freq and start are checked (the public forms check them their own way)."""
    _checks.choice("layout", layout, LAYOUTS)
    attention_factor = _checks.positive_float("attention_factor", attention_factor)
    positions = _positions(positions, x)
    cos, sin = _tables_for(x, positions, inv_freq, attention_factor)  # (..., seq, rotary_dim/2)
    return _rotate_slice(x, cos, sin, layout, start)


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0,
               inv_freq: torch.Tensor | None = None, attention_factor: float = 1.0,
               layout: str = "half", partial_rotary_factor: float = 1.0) -> torch.Tensor:
    """RoPE: rotate pair i of the vector at position m counter-clockwise by m * theta_i,

        theta_i = base ** (-2i / rotary_dim),  i = 0 .. rotary_dim/2 - 1       (`rope_inv_freq`)
        y1 = a * (x1 cos(m theta_i) - x2 sin(m theta_i)),   y2 = a * (x2 cos(m theta_i) + x1 sin(m theta_i))

    x: (..., seq, dim), usually (batch, heads, seq, head_dim), floating point, dim even.
    positions: (seq,) or (batch, seq) integers m on x's device (default 0 .. seq-1); batch must be
    x's first dimension (or 1). layout: which dims form pair i -- "half": (x[i], x[i + dim/2])
    (GPT-NeoX, Hugging Face) or "interleaved": (x[2i], x[2i+1]) (RoFormer, Meta's Llama); the two
    agree up to `layout_permutation`. inv_freq: (rotary_dim/2,) finite frequencies theta_i on x's device,
    e.g. from `rope_inv_freq` with a scaling; default the formula above. attention_factor a
    multiplies cos and sin (YaRN, LongRoPE; 1 otherwise).
    partial_rotary_factor f in (0, 1]: only the FIRST rotary_dim = int(dim * f) dims are rotated
    (`rotary_dim`; GPT-NeoX rotary_pct, Phi, GPT-J rotary_dim), the layout's pairs formed within them
    ("half": (x[i], x[i + rotary_dim/2]), HF's GPT-NeoX/Phi; "interleaved": (x[2i], x[2i+1]), GPT-J), and
    the other dims are copied unchanged; dim may be odd when rotary_dim is even. Without a partial
    factor, rotary_dim = dim.
    Angles in float64, the rotation in float32 (float64 for float64 x); returns a new tensor of x's
    shape, dtype and device (x is not modified). For float32 x it is bit-identical to HF's eager
    `x * cos + rotate_half(x) * sin` given the same cos/sin tables (`rope_cos_sin`); for bf16/fp16,
    HF rounds the tables to that dtype and multiplies in it, while this rotates in float32 and rounds
    once, so the two differ by about one unit in the last place of the input's dtype.
    """
    whole = type(partial_rotary_factor) in (float, int) and partial_rotary_factor == 1  # (not True: a bool)
    _check_x(x, even=whole)
    if inv_freq is None:  # theta_i = base ** (-2i / rotary_dim), rotary_dim/2 of them
        inv_freq, _ = rope_inv_freq(x.shape[-1], base=base, partial_rotary_factor=partial_rotary_factor,
                                    device=x.device)
    else:
        _check_inv_freq(inv_freq, "x", x, x.shape[-1] if whole else rotary_dim(x.shape[-1], partial_rotary_factor))
    return _apply_to_dims(x, positions, inv_freq, 0, attention_factor, layout)


def apply_decoupled_rope(x: torch.Tensor, positions: torch.Tensor | None = None, *, rope_dim: int,
                         base: float = 10000.0, inv_freq: torch.Tensor | None = None, attention_factor: float = 1.0,
                         layout: str = "interleaved") -> torch.Tensor:
    """Decoupled RoPE (DeepSeek-V2/V3 multi-head latent attention): rotate only the LAST rope_dim dims.

    x: (..., seq, head_dim) = [x_nope (head_dim - rope_dim) | x_rope (rope_dim)], DeepSeek's q = [q_nope |
    q_pe] and k = [k_nope | k_pe] (HF: qk_nope_head_dim 128 + qk_rope_head_dim 64 = 192). rope_dim is this
    form's rotary_dim (DeepSeek's and HF's name for it). x_rope is rotated by m * theta_i,
    theta_i = base ** (-2i/rope_dim) (or the given inv_freq, (rope_dim/2,), e.g. YaRN's from
    `rope_inv_freq(rope_dim, scaling=...)`, with its attention_factor), pairs of `layout` formed
    within it -- "interleaved" (x[2i], x[2i+1]) by default, as DeepSeek's reference code
    (`view_as_complex`) and HF's `rope_interleave=True` pair them; x_nope is copied unchanged. So
    q.k = q_nope.k_nope + (R_m q_pe).(R_n k_pe): a position-free part plus a RoPE part.

    Why MLA needs it (DeepSeek-V2, sec. 2.1.3): the cache holds one latent c_n per token and k_n = W_UK c_n,
    so without RoPE q_m . k_n = (W_UK^T q_m) . c_n: W_UK folds into the query once. RoPE would put R_{n-m}
    between them (q_m^T R_{n-m} W_UK c_n), which changes with the distance, so every cached key would have
    to be expanded again; the small rope slice (k_pe = RoPE(W_KR h_n), shared by all heads) carries position.

    HF's `apply_rotary_pos_emb_interleave` computes the same rotation but writes each head's rope slice
    back de-interleaved, [y1 of every pair | y2 of every pair], which changes no score (q and k are
    permuted alike); this function keeps DeepSeek's interleaved order. Returns a new tensor of x's
    shape, dtype and device; angles in float64, the rotation in float32 (float64 for float64 x).
    """
    _check_x(x, even=False)
    rope_dim = _checks.even_int("rope_dim", rope_dim)
    if rope_dim > x.shape[-1]:
        raise ValueError(f"rope_dim={rope_dim} must be <= x's last dimension (head_dim {x.shape[-1]})")
    if inv_freq is None:
        inv_freq, _ = rope_inv_freq(rope_dim, base=base, device=x.device)
    else:
        _check_inv_freq(inv_freq, "x", x, rope_dim)
    return _apply_to_dims(x, positions, inv_freq, x.shape[-1] - rope_dim, attention_factor, layout)  # [x_nope | x_rope]


def rope_complex(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0) -> torch.Tensor:
    """The derivation's form: z_i = x[2i] + 1j * x[2i+1] (complex), out = z_i * exp(1j * m * theta_i), back to reals.

    x: (..., seq, dim), dim even; positions (seq,) or (batch, seq) ints on x's device (default
    0 .. seq-1); theta_i = base ** (-2i/dim). Multiplying by e^{i m theta} is the counter-clockwise
    rotation of apply_rope, with the interleaved pairing of `view_as_complex` (RoFormer, Meta's Llama):
    same result as apply_rope(x, positions, base=base, layout="interleaved") up to rounding. Returns
    x's shape, dtype and device; angles in float64, the product in complex64 (complex128 for float64 x).
    """
    _check_x(x)
    positions = _positions(positions, x)
    inv_freq, _ = rope_inv_freq(x.shape[-1], base=base, device=x.device)
    angles = _over_heads(positions.unsqueeze(-1) * inv_freq, x, positions)  # (..., seq, d/2), float64
    rotation = torch.polar(torch.ones_like(angles), angles)  # e^{i m theta}, complex128 (or complex64)
    work = _checks.compute_dtype(x.dtype)
    z = torch.complex(*_pair_members(x.to(work), "interleaved"))  # (..., seq, d/2): x[2i] + i x[2i+1]
    out = torch.view_as_real(z * rotation.to(z.dtype)).flatten(-2)  # back to (x[2i], x[2i+1]) pairs
    return out.to(x.dtype)


def pair_indices(dim: int, layout: str = "half", *, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(first, second): two (dim/2,) index tensors, pair i = dims (first[i], second[i]) of `layout`:
    "half" (i, i + dim/2), "interleaved" (2i, 2i+1). rope_matrix and generators.rope_generator place pair i's
    2 x 2 block there."""
    _checks.choice("layout", layout, LAYOUTS)
    half = _checks.even_int("dim", dim) // 2
    if layout == "half":
        first = torch.arange(half, device=device)
        return first, first + half
    first = torch.arange(0, dim, 2, device=device)
    return first, first + 1


def rope_matrix(position: int, dim: int, *, base: float = 10000.0, layout: str = "interleaved",
                device=None, dtype=torch.float64) -> torch.Tensor:
    """The explicit (dim, dim) rotation R_m with apply_rope(x, layout=layout)[..., m, :] == R_m @ x[..., m, :].

    For each pair i = (a, b) (layout "interleaved": (2i, 2i+1), the block-diagonal form of the
    RoFormer paper; "half": (i, i + dim/2)), with t = position * base ** (-2i/dim):
        R[a, a] = cos t,  R[a, b] = -sin t,  R[b, a] = sin t,  R[b, b] = cos t   (counter-clockwise)
    and zeros elsewhere; R_m^T = R_{-m} = R_m^{-1}. position: an int; returns `dtype` (a floating
    dtype, default float64) on `device`.
    """
    _checks.choice("layout", layout, LAYOUTS)
    if isinstance(position, bool) or not isinstance(position, numbers.Integral):
        raise TypeError(f"position must be an int (a token index), got {type(position).__name__} ({position!r})")
    if abs(position) > _checks.MAX_POSITION:
        raise ValueError(f"position must lie within +-2**53 (angles are computed in float64), got {position}")
    dtype = _checks.float_dtype("dtype", dtype) or torch.float64
    inv_freq, _ = rope_inv_freq(dim, base=base, device=device)
    angle = float(position) * inv_freq  # float64 (exact for |position| < 2**53)
    c, s = angle.cos().to(dtype), angle.sin().to(dtype)
    first, second = pair_indices(dim, layout, device=device)
    R = torch.zeros(dim, dim, device=device, dtype=dtype)
    R[first, first], R[first, second] = c, -s
    R[second, first], R[second, second] = s, c
    return R


# ----------------------------------------------------------------------------- the module
class RotaryEmbedding(PositionalEncoding):
    """RoPE as a module: forward(q, k, positions=None) -> (rotated q, rotated k).

    q, k: (batch, heads, seq, head_dim) on one device; positions (seq,) or (batch, seq) on that device.
    `rotate_qk(q, k, q_positions, k_positions)` is the protocol hook (queries and keys at different
    positions, e.g. one new query against cached keys).

    dim is the head dim; partial_rotary_factor f (or scaling['partial_rotary_factor']) rotates only the
    first `rotary_dim` = int(dim * f) dims of each head and copies the rest (GPT-NeoX, Phi, GPT-J; see
    `apply_rope`). A MultiHeadAttention with `encoding=RotaryEmbedding(head_dim, partial_rotary_factor=f)`
    is a partial-rotary attention layer. p-RoPE (scaling={"rope_type": "proportional", "partial_rotary_factor": f},
    Gemma 4) is the other partial: the whole head is rotated, and f sets how many of the fastest pairs keep
    their frequencies (the slower ones get 0: copied as they are). q and k come back each in its own dtype.

    State: only the frequencies theta_i (and the attention factor), kept per device; cos/sin are made from
    the positions at every call, as transformers' LlamaRotaryEmbedding does, so a call's result is
    apply_rope's whatever ran before. Nothing is read back from the device (but dynamic NTK's and LongRoPE's
    length, below): a GPU forward never waits, and torch.compile(fullgraph=True) traces one graph.

    Dynamic NTK ({"rope_type": "dynamic"}) and LongRoPE ({"rope_type": "longrope"}): the frequencies depend
    on the length L = 1 + the largest position among q's and k's (HF: max(position_ids) + 1), one set per
    call for q and k, so their scores depend on m - n only. Dynamic uses L itself; LongRoPE its long factors
    when L > L0, else the short ones (HF's `longrope_frequency_update`, also per call). HF's
    `dynamic_rope_update` instead keeps the longest length seen (its frequencies only grow); here no call
    depends on an earlier one, so every result can be checked from the call alone. Keys cached after
    rotation keep the frequencies of THEIR call: once L changes, scores are no longer a function of m - n
    (in HF too); for one layer, cache keys before rotation and pass them all to rotate_qk with their
    positions (notebook 12 measures both).
    """

    def __init__(self, dim: int, *, base: float = 10000.0, layout: str = "half", scaling: dict | None = None,
                 partial_rotary_factor: float | None = None):
        super().__init__()
        # the fraction of the head that is rotated, and the keyword rope_inv_freq takes (p-RoPE: the whole head)
        self.partial_rotary_factor, self._partial_keyword = _rotated_fraction(partial_rotary_factor, scaling)
        self.dim = (_checks.even_int("dim", dim) if self.partial_rotary_factor == 1
                    else _checks.positive_int("dim", dim))
        self.rotary_dim = rotary_dim(self.dim, self.partial_rotary_factor)
        self.base = _checks.positive_float("base", base, minimum=1.0)
        self.layout = _checks.choice("layout", layout, LAYOUTS)
        rope_inv_freq(self.dim, base=self.base, scaling=scaling,  # validate now, not at the first call
                      partial_rotary_factor=self._partial_keyword)
        self.scaling, self.rope_type = scaling, rope_type_of(scaling)
        self._inv_freq: dict = {}  # (device, length) -> (inv_freq (rotary_dim/2,), attention factor)

    @classmethod
    def from_config(cls, config) -> RotaryEmbedding:
        """From a posenc_lib.model.TinyLMConfig: head_dim d_model / num_heads, rope_base, rope_scaling."""
        return cls(config.d_model // config.num_heads, base=config.rope_base, scaling=config.rope_scaling)

    @classmethod
    def check_config(cls, config) -> None:
        """RoPE rotates pairs of dims: head_dim = d_model / num_heads must be even; rope_scaling is checked now."""
        head_dim = config.d_model // config.num_heads
        if head_dim % 2:
            raise ValueError(f"RoPE needs an even head_dim = d_model / num_heads, got d_model={config.d_model}, "
                             f"num_heads={config.num_heads} (head_dim {head_dim})")
        rope_inv_freq(head_dim, base=config.rope_base, scaling=config.rope_scaling)

    def _frequencies(self, device, *positions: torch.Tensor) -> tuple[torch.Tensor, float]:
        """(inv_freq, attention_factor) for a call at these positions, on `device`.

        theta_i = base ** (-2i/rotary_dim), rescaled by `scaling` (scaling.rope_inv_freq). Only dynamic NTK
        and LongRoPE depend on the call, through L = 1 + the largest position: dynamic uses L itself (made
        at every call), LongRoPE only whether L > L0 (two sets, both kept). The others are made once per device.
        """
        length = None
        if self.rope_type in ("dynamic", "longrope") and torch.device(device).type != "meta":
            largest = max((int(p.max()) for p in positions if p.numel()), default=0)  # reads the device, as HF
            l0 = self.scaling["original_max_position_embeddings"]
            length = largest + 1 if self.rope_type == "dynamic" else (l0 + 1 if largest + 1 > l0 else None)
        key = (device, length)
        if self.rope_type == "dynamic" or key not in self._inv_freq:
            made = rope_inv_freq(self.dim, base=self.base, scaling=self.scaling, device=device, seq_len=length,
                                 partial_rotary_factor=self._partial_keyword)
            if self.rope_type != "dynamic":
                self._inv_freq[key] = made
            return made
        return self._inv_freq[key]

    def forward(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor | None = None):
        """(R q, R k) with q and k at the same positions (seq,) or (batch, seq) (default 0 .. seq-1)."""
        return self.rotate_qk(q, k, positions, positions)

    def rotate_qk(self, q, k, q_positions=None, k_positions=None):
        for name, t in (("q", q), ("k", k)):
            _check_x(t, name, even=self.dim == self.rotary_dim)
            if t.shape[-1] != self.dim:
                raise ValueError(f"{name}'s last dimension must be dim={self.dim}, got {t.shape[-1]}")
        _checks.same_device("q", q, k=k)
        # forward(q, k, positions): one check and one set of tables, also when k has fewer heads (GQA, MQA)
        same = k_positions is q_positions and k.dim() == q.dim() and k.shape[-2] == q.shape[-2] and (
            q.dim() < 3 or k.shape[0] == q.shape[0])
        q_positions = _positions(q_positions, q, "q_positions")
        k_positions = q_positions if same else _positions(k_positions, k, "k_positions")
        inv_freq, attention_factor = self._frequencies(q.device, q_positions, k_positions)
        # the tables in the finer of q's and k's compute dtypes; each is rotated in its own, returned in its dtype
        work = torch.promote_types(_checks.compute_dtype(q.dtype), _checks.compute_dtype(k.dtype))
        q_cos, q_sin = _cos_sin(q_positions, inv_freq, attention_factor, work)  # (..., seq, rotary_dim/2)
        k_cos, k_sin = (q_cos, q_sin) if same else _cos_sin(k_positions, inv_freq, attention_factor, work)
        out = []
        for t, cos, sin, p in ((q, q_cos, q_sin, q_positions), (k, k_cos, k_sin, k_positions)):
            own = _checks.compute_dtype(t.dtype)
            out.append(_rotate_slice(t, _over_heads(cos.to(own), t, p), _over_heads(sin.to(own), t, p), self.layout))
        return out[0], out[1]

    def extra_repr(self):
        partial = "" if self.rotary_dim == self.dim else f", rotary_dim={self.rotary_dim}"
        return f"dim={self.dim}{partial}, base={self.base}, layout={self.layout!r}, scaling={self.scaling}"


def _rotated_fraction(partial_rotary_factor, scaling) -> tuple:
    """(the fraction of each head RoPE rotates, the partial_rotary_factor keyword for rope_inv_freq). p-RoPE
    ("proportional", Gemma 4) rotates the whole head: its scaling['partial_rotary_factor'] stops the slowest
    pairs inside the frequencies (scaling.py), so the keyword is refused there and the rotated fraction is 1."""
    if isinstance(scaling, dict) and rope_type_of(scaling) in WHOLE_HEAD_TYPES:
        if partial_rotary_factor is not None:
            raise ValueError(WHOLE_HEAD_PARTIAL)
        return 1.0, None
    factor = _resolve_partial(partial_rotary_factor, scaling)
    return factor, factor


def rope_decay_bound(distance, dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoFormer's relative upper bound on a RoPE score at distance m - n (Su et al. 2021, sec. 3.4.3).

    m - n is query position - key position, as RoFormer writes it (= -r, r = key - query elsewhere in
    posenc_lib); the bound depends on |m - n| only, so the sign convention does not matter here.
    Take the d/2 pairs of q and k as complex numbers and h_i = q_i * conj(k_i); then the score is
    <R_m q, R_n k> = Re sum_{i<d/2} h_i exp(1j (m-n) theta_i), theta_i = base ** (-2i/d) (1j: the
    imaginary unit). With the partial sums S_p = sum_{l<p} exp(1j (m-n) theta_l) (S_0 = 0) and
    h_{d/2} = 0, summation by parts (Abel) gives

        |score| <= (max_i |h_{i+1} - h_i|) * sum_{p=1}^{d/2} |S_p|.

    This returns the part that depends on the distance, averaged over the pairs:
    (1 / (d/2)) * sum_{p=1}^{d/2} |S_p|, which equals (d/2 + 1) / 2 at m = n and shrinks, with
    wiggles, as |m - n| grows (the "long-term decay"; S_p(-x) = conj S_p(x)). A worst-case bound: a
    particular q, k can still score high far away.

    distance: a finite number, a sequence of them or a real tensor (any shape); dim: even head dim.
    Returns a float64 tensor of distance's shape (float32 on devices without float64), on its device.
    """
    dim = _checks.even_int("dim", dim)
    base = _checks.positive_float("base", base, minimum=1.0)
    if isinstance(distance, torch.Tensor):
        if distance.is_complex() or distance.dtype == torch.bool:
            raise TypeError(f"distance must hold real numbers, got a tensor of {distance.dtype}")
    else:
        try:
            distance = torch.as_tensor(distance, dtype=torch.float64, device="cpu")
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"distance must be a number, a sequence of numbers or a tensor, "
                            f"got {distance!r}") from error
    if distance.is_floating_point():
        _checks.finite_tensor("distance", distance)
    work = _checks.angle_dtype(distance.device)
    inv_freq, _ = rope_inv_freq(dim, base=base, device=distance.device)
    angles = distance.to(work)[..., None] * inv_freq.to(work)  # (..., d/2): r * theta_k
    partial_sums = torch.polar(torch.ones_like(angles), angles).cumsum(dim=-1)  # S_1 .. S_{d/2}
    return partial_sums.abs().mean(dim=-1)
