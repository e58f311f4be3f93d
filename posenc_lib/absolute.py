"""Absolute position encodings, added to the token embeddings before the first layer.

Sinusoidal (Vaswani et al. 2017), with i = 0 .. dim/2 - 1 the pair index:

    omega_i      = base ** (-2i / dim)              (wavelength 2*pi / omega_i: 2*pi ... just under 2*pi*base)
    PE[pos, 2i]   = sin(pos * omega_i)               layout="interleaved"  (the paper, DistilBERT)
    PE[pos, 2i+1] = cos(pos * omega_i)
    PE[pos, :]    = [sin(pos*omega_0..) | cos(pos*omega_0..)]   layout="half" (Transformer-XL; tensor2tensor
                                                                 and fairseq concatenate too, but divide the
                                                                 exponent by dim/2 - 1: a different table)
"half" is the course's one name for pairing column i with column i + dim/2, here and in RoPE (rope.py's
layout="half", rotate_half): sin and cos of one frequency sit half a vector apart.

The two layouts hold the same numbers; column j of one is column perm[j] of the other
(`layout_permutation`). Angles are computed in float64 (float32 where the device has no float64).
"""
from __future__ import annotations

import math
import numbers

import torch
from torch import nn
from torch.nn import functional as F

from . import _checks
from .attention import PositionalEncoding, check_input

LAYOUTS = ("interleaved", "half")


def sinusoidal_frequencies(dim: int, *, base: float = 10000.0, device=None, dtype=None) -> torch.Tensor:
    """The angular frequencies of the pairs: omega_i = base ** (-2i/dim), i = 0 .. dim/2 - 1.

    Returns shape (dim/2,), float64 (float32 on devices without it) unless `dtype` (a floating
    dtype) is given. omega_0 = 1 is the fastest pair (wavelength 2*pi tokens); the wavelengths
    2*pi/omega_i grow geometrically by base ** (2/dim) per pair, up to just under 2*pi*base. Pair i
    uses the exponent 2i/dim for BOTH of its columns (the mistake is to use the column index:
    2*floor(j/2) is right). base: a finite number > 1.
    """
    dim = _checks.even_int("dim", dim)
    base = _checks.positive_float("base", base, minimum=1.0)
    dtype = _checks.float_dtype("dtype", dtype)
    device = torch.device(device if device is not None else "cpu")
    work = _checks.angle_dtype(device)
    two_i = torch.arange(0, dim, 2, device=device, dtype=work)
    return (base ** (-two_i / dim)).to(dtype or work)


def sinusoidal_table(num_positions: int, dim: int, *, base: float = 10000.0, layout: str = "interleaved",
                     device=None, dtype=None) -> torch.Tensor:
    """The (num_positions, dim) sinusoidal table PE for positions pos = 0 .. num_positions-1.

    With omega_i = base ** (-2i/dim) (`sinusoidal_frequencies`), i = 0 .. dim/2 - 1:
        layout="interleaved" (the paper, DistilBERT):  PE[pos, 2i] = sin(pos*omega_i), PE[pos, 2i+1] = cos(pos*omega_i)
        layout="half" (Transformer-XL):               PE[pos, i]  = sin(pos*omega_i), PE[pos, dim/2 + i] = cos(...)
    The two hold the same numbers, columns permuted by `layout_permutation`. dim must be even;
    num_positions = 0 gives an empty (0, dim) table. Angles are computed in float64 (float32 on
    devices without it); the result is float32 unless `dtype` (a floating dtype) is given, on
    `device` (default CPU).
    """
    num_positions = _checks.positive_int("num_positions", num_positions, allow_zero=True)
    _checks.choice("layout", layout, LAYOUTS)
    dtype = _checks.float_dtype("dtype", dtype)
    device = torch.device(device if device is not None else "cpu")
    work = _checks.angle_dtype(device)
    positions = torch.arange(num_positions, device=device, dtype=work)
    return _table(positions, sinusoidal_frequencies(dim, base=base, device=device), layout).to(dtype or torch.float32)


def _table(positions: torch.Tensor, omega: torch.Tensor, layout: str) -> torch.Tensor:
    angles = positions[..., None] * omega  # (..., T, dim/2)
    if layout == "interleaved":
        return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)  # (..., T, dim): s0 c0 s1 c1 ...
    return torch.cat((angles.sin(), angles.cos()), dim=-1)  # (..., T, dim): s0 s1 ... c0 c1 ...


def layout_permutation(dim: int, *, device=None) -> torch.Tensor:
    """The (dim,) index tensor perm = [0, 2, 4, ..., dim-2, 1, 3, ..., dim-1] with

        sinusoidal_table(layout="half")[:, j] == sinusoidal_table(layout="interleaved")[:, perm[j]]

    and the RoPE analogue: apply_rope(x[..., perm], layout="half") == apply_rope(x, layout="interleaved")[..., perm]
    (half-split dim j holds what interleaved dim perm[j] holds). Its inverse is torch.argsort(perm).
    """
    dim = _checks.even_int("dim", dim)
    idx = torch.arange(dim, device=device)
    return torch.cat((idx[0::2], idx[1::2]))


class SinusoidalEncoding(PositionalEncoding):
    """Adds the sinusoidal table to x of shape (seq, dim) or (batch, seq, dim); no fixed maximum length.

    enc(x, positions=None) = add_to_input(x, positions) = x + PE[positions]: positions (seq,) or
    (batch or 1, seq) integers on x's device, default 0..seq-1. Only the rows asked for are
    computed (position 2**40 costs one row), in float64, and added in x's dtype (x is not modified).
    """

    def __init__(self, dim: int, *, base: float = 10000.0, layout: str = "interleaved"):
        super().__init__()
        self.dim = _checks.even_int("dim", dim)
        self.base = _checks.positive_float("base", base, minimum=1.0)
        self.layout = _checks.choice("layout", layout, LAYOUTS)

    @classmethod
    def from_config(cls, config):
        return cls(config.d_model)

    def add_to_input(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        positions = check_input(x, positions)
        if x.shape[-1] != self.dim:
            raise ValueError(f"x's last dimension must be dim={self.dim}, got {x.shape[-1]}")
        work = _checks.angle_dtype(x.device)
        omega = sinusoidal_frequencies(self.dim, base=self.base, device=x.device)
        table = _table(positions.to(work), omega, self.layout)  # (T, D) or (B, T, D)
        return x + table.to(x.dtype)

    def extra_repr(self):
        return f"dim={self.dim}, base={self.base}, layout={self.layout!r}"


# What the max_len error suggests. Not "use a relative encoding": an encoding that computes its value
# at any position (sinusoidal, RoPE, T5, ALiBi) runs there, but running is not generalising (notebook 07
# measures RoPE and T5 degrading past the trained length too).
_PAST_THE_TABLE = ("Train with a larger max_len, or extend the table and fine-tune (Longformer copies the "
                   "trained rows, ViT interpolates them); encodings that compute a value at any position run "
                   "there but do not necessarily generalise there (notebook 07)")


class LearnedEncoding(PositionalEncoding):
    """A trainable table P of shape (max_len, dim) (BERT/GPT-2 style): enc(x, positions) = x + P[positions].

    x: (seq, dim) or (batch, seq, dim); positions (seq,) or (batch or 1, seq) integers on x's
    device, default 0..seq-1. They must lie in [0, max_len): past the trained length there is
    simply no row, and this raises a ValueError naming max_len instead of the bare 'index out of
    range in self'. (Other encodings compute a value at any position; that makes them run past the
    trained length, not generalise there: notebook 07.)
    """

    def __init__(self, max_len: int, dim: int, *, init_std: float = 0.02):
        super().__init__()
        self.max_len = _checks.positive_int("max_len", max_len)
        self.dim = _checks.positive_int("dim", dim)
        self.table = nn.Embedding(self.max_len, self.dim)
        nn.init.normal_(self.table.weight, std=_checks.positive_float("init_std", init_std))

    @classmethod
    def from_config(cls, config):
        return cls(config.max_len, config.d_model)

    def add_to_input(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        given = positions is not None
        positions = check_input(x, positions)
        if x.shape[-1] != self.dim:
            raise ValueError(f"x's last dimension must be dim={self.dim}, got {x.shape[-1]}")
        _checks.same_device("x", x, table=self.table.weight)
        if not given and x.shape[-2] > self.max_len:
            raise ValueError(f"sequence length {x.shape[-2]} exceeds max_len={self.max_len}: a learned table has "
                             f"no row for positions >= max_len. {_PAST_THE_TABLE}")
        if given and _checks.values_are_cheap(positions) and positions.numel() and (  # elsewhere: torch's index check
                int(positions.min()) < 0 or int(positions.max()) >= self.max_len):
            raise ValueError(f"positions must lie in [0, max_len={self.max_len}), got "
                             f"min {int(positions.min())}, max {int(positions.max())}: a learned table has no "
                             f"row outside its trained range. {_PAST_THE_TABLE}")
        return x + self.table(positions).to(x.dtype)

    def extra_repr(self):
        return f"max_len={self.max_len}, dim={self.dim}"


def offset_matrix(k, dim: int, *, base: float = 10000.0, layout: str = "interleaved", device=None,
                  dtype=None) -> torch.Tensor:
    """M_k, the (dim, dim) matrix with sinusoidal_table(...)[pos + k] == M_k @ sinusoidal_table(...)[pos] for every pos.

    From the angle-sum identities, with a = pos * omega_i and b = k * omega_i on the (sin, cos) pair i:

        [sin(a + b)]   [ cos b   sin b] [sin a]
        [cos(a + b)] = [-sin b   cos b] [cos a]

    so M_k is block-diagonal, one 2x2 block per frequency, depending on k and omega_i only (not on pos).
    Orientation: with sin as the first coordinate this block turns the pair CLOCKWISE by b; it is the
    transpose of RoPE's counter-clockwise [[cos, -sin], [sin, cos]], i.e. offset_matrix(k) equals
    rope.rope_matrix(-k) with the interleaved layout. M_{-k} = M_k^T, and M_j @ M_k = M_{j+k}.

    k: a finite real offset (negative allowed) or a 1-D tensor of them, giving (len(k), dim, dim);
    a tensor k sets the device (`device`, if given, must be the same). layout: which columns form a
    pair, as in `sinusoidal_table` ("interleaved": columns (2i, 2i+1); "half": columns
    (i, i + dim/2)). Returns float64 (float32 on devices without float64) unless `dtype` (a floating
    dtype) is given.
    """
    dim = _checks.even_int("dim", dim)
    _checks.choice("layout", layout, LAYOUTS)
    dtype = _checks.float_dtype("dtype", dtype)
    if isinstance(k, torch.Tensor):
        if k.dim() > 1 or k.is_complex() or k.dtype == torch.bool:
            raise TypeError(f"k must be a number or a 1-D real tensor of offsets, got a {k.dtype} tensor "
                            f"of shape {tuple(k.shape)}")
        if device is not None and torch.device(device) != k.device:
            raise ValueError(f"k must be on the device asked for (device={torch.device(device)}), got {k.device}")
        device = k.device
        offsets = k.to(_checks.angle_dtype(device))
        if k.is_floating_point():
            _checks.finite_tensor("k", offsets)
    elif isinstance(k, numbers.Real) and not isinstance(k, bool):
        if not math.isfinite(k):
            raise ValueError(f"k must be a finite offset, got {k}")
        device = torch.device(device if device is not None else "cpu")
        offsets = torch.tensor(float(k), device=device, dtype=_checks.angle_dtype(device))
    else:
        raise TypeError(f"k must be a number or a 1-D tensor of offsets, got {type(k).__name__} ({k!r})")
    work = offsets.dtype
    beta = offsets[..., None] * sinusoidal_frequencies(dim, base=base, device=device)  # (..., dim/2)
    cos, sin = beta.cos(), beta.sin()
    half = dim // 2
    if layout == "interleaved":
        sin_cols = torch.arange(0, dim, 2, device=device)
        cos_cols = sin_cols + 1
    else:
        sin_cols = torch.arange(half, device=device)
        cos_cols = sin_cols + half
    m = torch.zeros(*offsets.shape, dim, dim, device=device, dtype=work)
    m[..., sin_cols, sin_cols] = cos
    m[..., sin_cols, cos_cols] = sin
    m[..., cos_cols, sin_cols] = -sin
    m[..., cos_cols, cos_cols] = cos
    return m.to(dtype or work)


def relative_part(W: torch.Tensor, *, layout: str = "interleaved") -> torch.Tensor:
    """The matrix W' closest to W (Frobenius norm) for which PE(m) W' PE(n)^T depends on n - m only
    (notebook 03, exercise 3.3): W (..., dim, dim) -> the same shape, W's dtype and device, W not modified.

    With a = m*omega_i, b = n*omega_j, block (i, j) of PE(m) W PE(n)^T mixes sin/cos of a and b; only
    for i = j and only the combinations cos(b - a) and sin(b - a) are functions of n - m. Those are the
    blocks alpha*I + beta*J, J = [[0, 1], [-1, 0]] on the pair's (sin, cos) columns: PE(m) (alpha I + beta J)
    PE(n)^T = sum_i alpha_i cos((n-m) omega_i) + beta_i sin((n-m) omega_i). So: on each diagonal 2x2 block
    [[a, b], [c, d]] keep alpha = (a + d)/2, beta = (b - c)/2; zero every entry outside the diagonal blocks.
    The kept subspace has dimension dim (2 per pair), so for a random W it holds about 1/dim of ||W||^2.
    layout: which columns form a pair, as in `sinusoidal_table`.
    """
    _checks.float_tensor("W", W)
    _checks.choice("layout", layout, LAYOUTS)
    if W.dim() < 2 or W.shape[-1] != W.shape[-2] or W.shape[-1] % 2:
        raise ValueError(f"W must be a square (..., dim, dim) matrix with an even dim, got shape {tuple(W.shape)}")
    dim = W.shape[-1]
    sin_cols = (torch.arange(0, dim, 2, device=W.device) if layout == "interleaved"
                else torch.arange(dim // 2, device=W.device))
    cos_cols = sin_cols + (1 if layout == "interleaved" else dim // 2)
    alpha = (W[..., sin_cols, sin_cols] + W[..., cos_cols, cos_cols]) / 2                # (..., dim/2)
    beta = (W[..., sin_cols, cos_cols] - W[..., cos_cols, sin_cols]) / 2
    out = torch.zeros_like(W)
    out[..., sin_cols, sin_cols] = alpha
    out[..., cos_cols, cos_cols] = alpha
    out[..., sin_cols, cos_cols] = beta
    out[..., cos_cols, sin_cols] = -beta
    return out


def relative_share(W: torch.Tensor, *, layout: str = "interleaved") -> torch.Tensor:
    """||relative_part(W)||^2 / ||W||^2 over the last two dims: the share of W's squared norm that a
    relative position-position term can use (1 for W = I; about 1/dim for a random W). (...,) in W's dtype.
    relative_part is an orthogonal projection, so the share lies in [0, 1]."""
    part = relative_part(W, layout=layout)
    total = W.pow(2).sum((-2, -1))
    if W.device.type != "meta" and bool((total == 0).any()):
        raise ValueError("W must not be all zeros: its relative share is undefined")
    return part.pow(2).sum((-2, -1)) / total


# ----------------------------------------------------------------- how alike the rows of a table are
def position_similarity(table: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of every pair of rows of a (num_positions, dim) table: (num_positions, num_positions).

    Computed in float64; entry (i, j) = <P_i, P_j> / (|P_i| |P_j|), so the diagonal is 1.
    """
    _checks.float_tensor("table", table)
    if table.dim() != 2:
        raise ValueError(f"table must have shape (num_positions, dim), got {tuple(table.shape)}")
    unit = F.normalize(table.detach().to(torch.float64), dim=-1)
    return unit @ unit.T


def similarity_by_distance(similarity: torch.Tensor) -> torch.Tensor:
    """Mean of the k-th diagonal of a (T, T) similarity matrix for k = 0 .. T-1: how alike positions k apart are."""
    _checks.float_tensor("similarity", similarity)
    if similarity.dim() != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(f"similarity must be a square (T, T) matrix, got shape {tuple(similarity.shape)}")
    T = similarity.shape[-1]
    return torch.stack([similarity.diagonal(k).mean() for k in range(T)])
