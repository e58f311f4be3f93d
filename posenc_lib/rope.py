"""Rotary position embedding (RoPE; Su et al. 2021, RoFormer, arXiv 2104.09864).

Pair i of a query or key at position m turns counter-clockwise by m * theta_i, theta_i = base ** (-2i / rotary_dim)
(`scaling.rope_inv_freq`, which also rescales them for context extension):

    [y1]   [cos(m t)  -sin(m t)] [x1]        y1 = x1 cos - x2 sin
    [y2] = [sin(m t)   cos(m t)] [x2]        y2 = x2 cos + x1 sin       (as complex: y = x * exp(1j * m * t))

(t = theta_i; 1j is the imaginary unit, kept apart from the pair index i). With q_i, k_i pair i read as complex
numbers, <R_m q, R_n k> = Re[ sum_i q_i * conj(k_i) * exp(1j * (m - n) * theta_i) ] depends on m - n only.
m - n is query - key, as RoFormer writes it; the course's relative position is r = key - query (relative.py,
alibi.py), so m - n = -r. Notebook 06 derives both and checks them against apply_rope.

The layout says which dims form pair i (said here once; every function here takes `layout`):
    "half"         pair i = (x[i], x[i + r/2])   GPT-NeoX, Hugging Face (`rotate_half`)
    "interleaved"  pair i = (x[2i], x[2i+1])     RoFormer, Meta's Llama (`view_as_complex`)
r being the width that turns. The two are one rotation up to the permutation `absolute.layout_permutation(dim)`;
mixing them (weights converted for one, code of the other) leaves only the scores at m = n right.

rotary_dim is the number of dims a form turns (the whole head unless partial or decoupled); the other dims are
copied. Angles m * theta_i are computed in float64 (float32 on devices without it), cos/sin in float32 or better;
bf16/fp16 inputs are turned in float32 and returned in their own dtype and device. Positions are integer tensors
of shape (seq,) or (batch, seq) on x's device. Every function returns a new tensor (x is not modified).
"""
from __future__ import annotations

import numbers

import torch

from . import _checks
from .attention import PositionalEncoding, default_positions
from .scaling import rope_inv_freq, rope_type_of, rotary_dim, rotated_fraction

LAYOUTS = ("half", "interleaved")


# ----------------------------------------------------------------------------- the rotation
def _pair_members(t: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., D) -> two (..., D/2) views: the first and second member of every pair of `layout`."""
    if layout == "half":
        return t.chunk(2, dim=-1)  # [x1 | x2]
    return t.unflatten(-1, (-1, 2)).unbind(-1)  # (x1_0, x2_0, x1_1, x2_1, ...)


def _join_pairs(y1: torch.Tensor, y2: torch.Tensor, layout: str) -> torch.Tensor:
    """Two (..., D/2) tensors -> (..., D) in `layout`: the inverse of `_pair_members`."""
    return torch.cat((y1, y2), dim=-1) if layout == "half" else torch.stack((y1, y2), dim=-1).flatten(-2)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> torch.Tensor:
    """Every pair (x1, x2) of x (..., seq, dim) turned by its angle: y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin
    (unchecked). cos, sin (..., seq, dim/2), one value per pair, in float32 (float64 for float64 x). Hugging Face
    writes the same products as x * [c, c] + rotate_half(x) * [s, s]: equal bit for bit."""
    if x.dtype not in (torch.float32, torch.float64):  # bf16/fp16: rotated in float32, rounded once at the end
        return _rotate(x.float(), cos, sin, layout).to(x.dtype)
    x1, x2 = _pair_members(x, layout)  # (..., seq, dim/2) each
    return _join_pairs(x1 * cos - x2 * sin, x2 * cos + x1 * sin, layout)


def _rotate_slice(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, start: int = 0,
                  stop: int | None = None) -> torch.Tensor:
    """x (..., seq, dim) with dims start .. stop - 1 turned (stop: start + 2 * cos.shape[-1] unless given), the
    others copied: lucidrains' start_index. Full RoPE: (0, dim); partial (GPT-NeoX, Phi): (0, rotary_dim);
    decoupled (DeepSeek): the last rotary_dim dims. Every form of this module and multidim's end here."""
    stop = start + 2 * cos.shape[-1] if stop is None else stop
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
    """x (..., dim) = [x1 | x2] -> [-x2 | x1]: the "half" layout's 90-degree turn (HF's rotate_half), with which
    RoPE is x * [cos, cos] + rotate_half(x) * [sin, sin] (cos/sin of shape (..., dim/2))."""
    _check_pairs("x", x)
    return _rotate_90(x, "half")


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    """x (..., dim) = (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...): the "interleaved" layout's 90-degree turn,
    with which RoPE is x * (c0, c0, c1, c1, ...) + rotate_every_two(x) * (s0, s0, s1, s1, ...)."""
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

    positions: (...,) integers, e.g. (seq,) or (batch, seq); inv_freq: (rotary_dim/2,) on positions' device.
    Returns two (..., rotary_dim/2) tensors in `dtype` (floating) on that device, rounded once from float64
    (float32 on devices without it); a is the attention factor (YaRN; 1 otherwise).
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


def _check_x(x, name: str = "x", *, even: bool = True) -> None:
    """x: a floating (..., seq, dim) tensor; dim even unless only part of it is rotated (even=False)."""
    _checks.float_tensor(name, x)
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., seq, dim), got {tuple(x.shape)}")
    check = _checks.even_int if even else _checks.positive_int
    check(f"{name}'s last dimension (head_dim)", x.shape[-1])


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half", *,
           rotary_dims: tuple | None = None) -> torch.Tensor:
    """x (..., seq, dim) turned by precomputed tables: dims start .. stop - 1 rotate, the others are copied.

    rotary_dims = (start, stop), default (0, dim) (lucidrains' start_index; (0, r) for partial RoPE, the last r
    dims for decoupled). cos/sin broadcast to (..., seq, (stop - start)/2) on x's device: e.g. (seq, r/2) from
    `rope_cos_sin`, (batch, 1, seq, r/2) for batched positions. Computed in float32 (float64 for float64 x): given
    the same tables, HF's eager `x * [c, c] + rotate_half(x) * [s, s]` bit for bit. For fused speed, compile it.
    """
    _check_x(x, even=rotary_dims is None)
    _checks.choice("layout", layout, LAYOUTS)
    start, stop = ((0, x.shape[-1]) if rotary_dims is None
                   else _checks.pair_slice("rotary_dims", rotary_dims, x.shape[-1]))
    half = (*x.shape[:-1], (stop - start) // 2)
    for name, table in (("cos", cos), ("sin", sin)):
        _checks.float_tensor(name, table)
        try:
            fits = torch.broadcast_shapes(table.shape, half) == half
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"{name} of shape {tuple(table.shape)} must broadcast to x's (..., seq, rotary_dim/2) = "
                             f"{half}")
    _checks.same_device("x", x, cos=cos, sin=sin)
    work = _checks.compute_dtype(x.dtype)
    return _rotate_slice(x, cos.to(work), sin.to(work), layout, start, stop)


# ----------------------------------------------------------------------------- the public forms
def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0,
               inv_freq: torch.Tensor | None = None, attention_factor: float = 1.0,
               layout: str = "half", partial_rotary_factor: float = 1.0) -> torch.Tensor:
    """RoPE: pair i of the vector at position m turned counter-clockwise by m * theta_i,

        theta_i = base ** (-2i / rotary_dim),  i = 0 .. rotary_dim/2 - 1       (`rope_inv_freq`)
        y1 = a * (x1 cos(m theta_i) - x2 sin(m theta_i)),   y2 = a * (x2 cos(m theta_i) + x1 sin(m theta_i))

    x: (..., seq, dim), usually (batch, heads, seq, head_dim), floating. positions: (seq,) or (batch, seq)
    integers m on x's device (default 0 .. seq-1; batch = x's first dimension, or 1). layout: "half" or
    "interleaved" (the module docstring). inv_freq: (rotary_dim/2,) finite theta_i on x's device, e.g. from
    `rope_inv_freq` with a scaling (default: the formula above); attention_factor a: YaRN's, LongRoPE's (else 1).
    partial_rotary_factor f in (0, 1]: only the FIRST rotary_dim = int(dim * f) dims turn, pairs formed within
    them (GPT-NeoX rotary_pct, Phi, GPT-J rotary_dim), the others are copied; dim may be odd when rotary_dim is
    even. Returns a new tensor of x's shape, dtype and device. For float32 x it equals HF's eager
    `x * cos + rotate_half(x) * sin` bit for bit given the same tables (`rope_cos_sin`); bf16/fp16 x is turned in
    float32 and rounded once (HF multiplies in that dtype: the two differ by about one unit in its last place).
    """
    whole = type(partial_rotary_factor) in (float, int) and partial_rotary_factor == 1  # (not True: a bool)
    _check_x(x, even=whole)
    if inv_freq is None:  # theta_i = base ** (-2i / rotary_dim), rotary_dim/2 of them
        inv_freq, _ = rope_inv_freq(x.shape[-1], base=base, partial_rotary_factor=partial_rotary_factor,
                                    device=x.device)
    else:
        _check_inv_freq(inv_freq, "x", x, x.shape[-1] if whole else rotary_dim(x.shape[-1], partial_rotary_factor))
    return _apply_to_dims(x, positions, inv_freq, 0, attention_factor, layout)


def _apply_to_dims(x, positions, inv_freq, start: int, attention_factor, layout: str) -> torch.Tensor:
    """apply_rope_to_dims once x, inv_freq and start are checked (the public forms check them their own way)."""
    _checks.choice("layout", layout, LAYOUTS)
    attention_factor = _checks.positive_float("attention_factor", attention_factor)
    positions = _positions(positions, x)
    cos, sin = _cos_sin(positions, inv_freq, attention_factor, _checks.compute_dtype(x.dtype))  # (..., seq, r/2)
    return _rotate_slice(x, _over_heads(cos, x, positions), _over_heads(sin, x, positions), layout, start)


def apply_rope_to_dims(x: torch.Tensor, positions: torch.Tensor | None = None, *, inv_freq: torch.Tensor,
                       start: int = 0, attention_factor: float = 1.0, layout: str = "half") -> torch.Tensor:
    """RoPE on one slice of each head: dims start .. start + rotary_dim - 1 turn, the others are copied.

    rotary_dim = 2 * len(inv_freq); pair i of the slice (pairs formed within it) at position m turns by
    m * inv_freq[i], cos and sin times attention_factor. x (..., seq, head_dim); positions and inv_freq as in
    `apply_rope`. `apply_rope` (start 0) and `apply_decoupled_rope` (the last dims) are this with their
    frequencies; a checkpoint's layer (configs.LayerPositions.apply) calls it with its own slice.
    """
    _check_x(x, even=False)
    _check_inv_freq(inv_freq, "x", x)
    start = _checks.positive_int("start", start, allow_zero=True)
    if start + 2 * inv_freq.shape[0] > x.shape[-1]:
        raise ValueError(f"start={start} + rotary_dim={2 * inv_freq.shape[0]} (2 * len(inv_freq)) must be <= x's last "
                         f"dimension (head_dim {x.shape[-1]})")
    return _apply_to_dims(x, positions, inv_freq, start, attention_factor, layout)


def apply_decoupled_rope(x: torch.Tensor, positions: torch.Tensor | None = None, *, rope_dim: int,
                         base: float = 10000.0, inv_freq: torch.Tensor | None = None, attention_factor: float = 1.0,
                         layout: str = "interleaved") -> torch.Tensor:
    """Decoupled RoPE (DeepSeek-V2/V3's multi-head latent attention): only the LAST rope_dim dims turn.

    x: (..., seq, head_dim) = [x_nope | x_rope], DeepSeek's q = [q_nope | q_pe] (HF: qk_nope_head_dim 128 +
    qk_rope_head_dim 64 = 192); rope_dim is this form's rotary_dim (DeepSeek's name). x_rope turns by m * theta_i,
    theta_i = base ** (-2i/rope_dim) (or the given inv_freq (rope_dim/2,), e.g. YaRN's, with its attention_factor);
    x_nope is copied, so q.k = q_nope.k_nope + (R_m q_pe).(R_n k_pe). layout "interleaved" by default, as
    DeepSeek's code (`view_as_complex`) and HF's rope_interleave=True pair them (HF's
    `apply_rotary_pos_emb_interleave` writes the slice back de-interleaved: other order, same scores). Why MLA
    needs the split: notebook 10. Returns a new tensor of x's shape, dtype and device.
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
    """The derivation's form: z_i = x[2i] + 1j * x[2i+1], out = z_i * exp(1j * m * theta_i), back to reals.

    x: (..., seq, dim), dim even; positions as in `apply_rope`; theta_i = base ** (-2i/dim). The same rotation as
    apply_rope(x, positions, base=base, layout="interleaved") up to rounding (the pairing of `view_as_complex`).
    The product in complex64 (complex128 for float64 x); returns x's shape, dtype and device.
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

    For each pair i = (a, b) of `layout` (`pair_indices`; "interleaved" gives RoFormer's block-diagonal form),
    with t = position * base ** (-2i/dim):
        R[a, a] = cos t,  R[a, b] = -sin t,  R[b, a] = sin t,  R[b, b] = cos t   (counter-clockwise)
    and zeros elsewhere; R_m^T = R_{-m} = R_m^{-1}. position: an int; returns `dtype` (floating, default
    float64) on `device`.
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
    """RoPE as a module: forward(q, k, positions=None) -> (rotated q, rotated k); `rotate_qk(q, k, q_positions,
    k_positions)` is the protocol hook (queries and keys at different positions: new queries against cached keys).

    q, k: (batch, heads, seq, head_dim) on one device (k may have fewer heads: GQA); positions (seq,) or (batch, seq)
    there; q and k come back each in its own dtype. dim: the head dim. partial_rotary_factor f (or
    scaling['partial_rotary_factor']): only the first rotary_dim = int(dim * f) dims turn, as in `apply_rope`.
    p-RoPE (scaling={"rope_type": "proportional", "partial_rotary_factor": f}, Gemma 4) turns the whole head; f
    says how many of the fastest pairs keep their frequencies (the slower get 0: copied as they are).

    State: only the frequencies theta_i and attention factor, per device; cos/sin are made from the positions at
    every call, as transformers' LlamaRotaryEmbedding does, so a call's result is apply_rope's whatever ran before.
    Nothing is read back from the device (but L below): torch.compile(fullgraph=True) traces one graph.

    Dynamic NTK and LongRoPE: the frequencies depend on L = 1 + the largest position among q's and k's (HF:
    max(position_ids) + 1), one set per call for q and k, so scores depend on m - n only (dynamic: L itself;
    LongRoPE: its long factors when L > L0). HF's `dynamic_rope_update` instead keeps the longest length seen (its
    frequencies only grow); here no call depends on an earlier one. Keys cached after rotation keep the frequencies
    of THEIR call: once L changes, scores are no longer a function of m - n (in HF too); for one layer, cache keys
    before rotation and pass them all to rotate_qk with their positions (notebook 12 measures both).
    """

    def __init__(self, dim: int, *, base: float = 10000.0, layout: str = "half", scaling: dict | None = None,
                 partial_rotary_factor: float | None = None):
        super().__init__()
        # the fraction of the head that is rotated, and the keyword rope_inv_freq takes (p-RoPE: the whole head)
        self.partial_rotary_factor, self._partial_keyword = rotated_fraction(partial_rotary_factor, scaling)
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
        """(inv_freq, attention_factor) for a call at these positions, on `device`: theta_i = base ** (-2i/rotary_dim)
        rescaled by `scaling` (scaling.rope_inv_freq). Kept per device, but dynamic NTK's (made for each call's L)
        and LongRoPE's two sets (short and long, both kept) depend on L = 1 + the largest position."""
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


def rope_decay_bound(distance, dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoFormer's relative upper bound on a RoPE score at distance m - n (sec. 3.4.3; notebook 06 derives it).

    With h_i = q_i * conj(k_i) (pairs as complex numbers, h_{d/2} = 0) and the partial sums
    S_p = sum_{l<p} exp(1j (m-n) theta_l), theta_l = base ** (-2l/d), summation by parts gives

        |score| <= (max_i |h_{i+1} - h_i|) * sum_{p=1}^{d/2} |S_p|.

    This returns the distance's part averaged over the pairs, (1 / (d/2)) * sum_p |S_p|: (d/2 + 1) / 2 at m = n,
    shrinking with wiggles as |m - n| grows (a worst case: a particular q, k can still score high far away). It
    depends on |m - n| only, so the sign convention does not matter. distance: a finite number, a sequence of
    them or a real tensor (any shape); dim: even. Returns float64 (float32 on devices without it) of distance's
    shape, on its device.
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
    angles = distance.to(work)[..., None] * inv_freq.to(work)  # (..., d/2): (m - n) * theta_l
    partial_sums = torch.polar(torch.ones_like(angles), angles).cumsum(dim=-1)  # S_1 .. S_{d/2}
    return partial_sums.abs().mean(dim=-1)
