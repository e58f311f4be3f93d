"""Positions beyond one dimension: 2-D axial RoPE for image patches, and M-RoPE for text, images and
video in one sequence (Qwen2-VL, Qwen2.5-VL, Qwen3-VL).

One idea covers all of them. A token's position is now a small vector, (row, col) for a patch or
(t, h, w) for a vision-language token, and each RoPE pair reads ONE of its coordinates:

    angle_i = p[axis(i)] * freq_i              pair i, i = 0 .. dim/2 - 1

turned counter-clockwise as in posenc_lib.rope (y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin). Because
pair i of a query at p and a key at p' meets the angle (p - p')[axis(i)] * freq_i, the score depends
on the coordinate differences only, e.g. on (d_row, d_col) = (row_q - row_k, col_q - col_k), which
is query - key as in RoFormer (the course's relative position is key - query, its negative).

What the models choose is `axis` and `freq` (pairs in the "half" layout of Hugging Face, pair i =
(x[i], x[i + dim/2]), unless `layout` says otherwise):

    axial, Qwen2-VL vision tower   pairs 0 .. dim/4-1 read the row,    freq_i = phi_i
    (also Qwen2.5-VL, Qwen3-VL)    pairs dim/4 .. dim/2-1 the column,  freq_i = phi_{i - dim/4}
                                   phi_j = base ** (-2j / (dim/2)): rows and columns share one set
    axial, Pixtral                 the same split, but with theta_j = base ** (-2j / dim):
                                   rows get theta_0, theta_2, theta_4 ..., columns theta_1, theta_3 ...
                                   (rows as Qwen's, columns half a step slower: no frequency used twice)
    M-RoPE (Qwen2-VL, 2.5-VL)      freq_i = theta_i of plain RoPE; mrope_section = (s_t, s_h, s_w),
                                   s_t + s_h + s_w = dim/2: the first s_t pairs read t, the next s_h
                                   read h, the last s_w read w (chunks)
    interleaved M-RoPE (Qwen3-VL)  freq_i = theta_i; pair i reads h if i % 3 == 1 and i < 3 s_h,
                                   w if i % 3 == 2 and i < 3 s_w, t otherwise (t h w t h w ... t t)

A text token has t = h = w (its ordinary 1-D position), so M-RoPE on text is plain RoPE.

Position ids (`patch_positions`, `mrope_position_ids`) and tables are integer tensors with the axis
FIRST: (axes, seq) or (axes, batch, seq), as transformers' M-RoPE position_ids (3, batch, seq).
Angles are computed in float64 (float32 on devices without it); results come back in the input's
dtype and device. tests/test_multidim.py checks every function against transformers' Pixtral,
Qwen2-VL, Qwen2.5-VL and Qwen3-VL code.
"""
from __future__ import annotations

import numpy as np
import torch

from . import _checks
from .rope import LAYOUTS, rotate
from .scaling import rope_inv_freq

AXIAL_STYLES = ("pixtral", "qwen2_vl")
MROPE_AXES = ("t", "h", "w")  # axis 0, 1, 2 of M-RoPE positions
SEGMENT_KINDS = {"text": 0, "image": 1, "video": 2}  # transformers' mm_token_type_ids
RESUME_RULES = ("max", "grid")

__all__ = ["AXIAL_STYLES", "MROPE_AXES", "MROPE_PRESETS", "RESUME_RULES", "apply_axial_rope", "apply_mrope",
           "apply_multiaxis_rope", "axial_rope_frequencies", "mrope_axes", "mrope_position_ids", "mrope_token_types",
           "multiaxis_cos_sin", "patch_positions"]


# transformers' default text configs for these models (Qwen2VLTextConfig, Qwen2_5_VLTextConfig,
# Qwen3VLTextConfig and their rotary embeddings' default mrope_section; tests/test_multidim.py reads them)
MROPE_PRESETS = {
    "qwen2_vl": {"head_dim": 128, "mrope_section": (16, 24, 24), "base": 1_000_000.0, "interleaved": False},
    "qwen2_5_vl": {"head_dim": 128, "mrope_section": (16, 24, 24), "base": 1_000_000.0, "interleaved": False},
    "qwen3_vl": {"head_dim": 128, "mrope_section": (24, 20, 20), "base": 500_000.0, "interleaved": True},
}


# ----------------------------------------------------------------------------- patch grids
def patch_positions(height: int, width: int, *, merge_size: int = 1, frames: int = 1, device=None) -> torch.Tensor:
    """(row, col) of every patch of a height x width grid, in the order the vision encoder sees them.

    Returns a long tensor of shape (2, frames * height * width) on `device`: [0] the rows, [1] the
    columns. merge_size=1: row-major, (0,0) (0,1) ... (0,W-1) (1,0) ... (Pixtral). merge_size=m > 1:
    row-major over m x m blocks and row-major inside each block, so the m*m patches that the merger
    concatenates into one LLM token sit next to each other (Qwen2-VL, Qwen2.5-VL, Qwen3-VL; height and
    width must be multiples of m). frames > 1 repeats the grid once per frame: the Qwen vision towers
    give a video's frames the same (row, col), with no time coordinate.
    """
    height, width = _checks.positive_int("height", height), _checks.positive_int("width", width)
    merge_size = _checks.positive_int("merge_size", merge_size)
    frames = _checks.positive_int("frames", frames)
    if height % merge_size or width % merge_size:
        raise ValueError(f"height and width must be multiples of merge_size={merge_size} (the merger joins "
                         f"{merge_size}x{merge_size} blocks), got height={height}, width={width}")
    rows = torch.arange(height, device=device)[:, None].expand(height, width)  # (H, W)
    cols = torch.arange(width, device=device)[None, :].expand(height, width)
    blocks = (height // merge_size, merge_size, width // merge_size, merge_size)
    grid = [a.reshape(blocks).transpose(1, 2).flatten() for a in (rows, cols)]  # block-major (row-major if m=1)
    return torch.stack(grid).repeat(1, frames)  # (2, frames * H * W)


def _dim4(dim) -> int:
    dim = _checks.even_int("dim", dim)
    if dim % 4:
        raise ValueError(f"dim must be a multiple of 4 for 2-D RoPE (dim/4 pairs per axis), got {dim}")
    return dim


def axial_rope_frequencies(dim: int, *, base: float = 10000.0, style: str = "pixtral",
                           device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(freq, axis) of 2-D axial RoPE on head dim `dim` (a multiple of 4): two (dim/2,) tensors.

    axis[i] = 0 (row) for pairs i < dim/4, 1 (column) for the rest, in both styles. freq:
      style="qwen2_vl": freq = [phi, phi], phi_j = base ** (-2j / (dim/2)), j < dim/4 (one set for both axes;
                        transformers' Qwen2VLVisionRotaryEmbedding; Qwen2_5_VLVisionRotaryEmbedding and
                        Qwen3VLVisionRotaryEmbedding compute the same)
      style="pixtral":  freq = [theta_0, theta_2, ..., theta_1, theta_3, ...], theta_j = base ** (-2j/dim),
                        j < dim/2 (rows the even, columns the odd frequencies; PixtralVisionRotaryEmbedding)
    freq is float64 (float32 on devices without it), axis int64, both on `device`.
    """
    dim = _dim4(dim)
    _checks.choice("style", style, AXIAL_STYLES)
    if style == "pixtral":
        theta, _ = rope_inv_freq(dim, base=base, device=device)   # (dim/2,) base ** (-2j/dim)
        freq = torch.cat((theta[0::2], theta[1::2]))               # rows: even j, columns: odd j
    else:
        phi, _ = rope_inv_freq(dim // 2, base=base, device=device)  # (dim/4,) base ** (-2j/(dim/2))
        freq = torch.cat((phi, phi))                                # rows and columns alike
    axis = torch.arange(dim // 2, device=device) >= dim // 4         # False: row, True: column
    return freq, axis.long()


# ----------------------------------------------------------------------------- M-RoPE sections
def _section(mrope_section) -> tuple[int, int, int]:
    if isinstance(mrope_section, torch.Tensor):
        mrope_section = mrope_section.tolist()
    if not isinstance(mrope_section, (list, tuple)) or len(mrope_section) != 3:
        raise TypeError(f"mrope_section must be a list of three ints (t, h, w pairs), got {mrope_section!r}")
    return tuple(_checks.positive_int(f"mrope_section[{i}]", s, allow_zero=True) for i, s in enumerate(mrope_section))


def mrope_axes(mrope_section, *, interleaved: bool = False, device=None) -> torch.Tensor:
    """Which coordinate each RoPE pair reads: a (s_t + s_h + s_w,) long tensor of 0 (t), 1 (h), 2 (w).

    mrope_section = (s_t, s_h, s_w) counts pairs (their sum is dim/2). interleaved=False (Qwen2-VL,
    Qwen2.5-VL): chunks, s_t pairs of t, then s_h of h, then s_w of w. interleaved=True (Qwen3-VL): pair
    i reads h when i % 3 == 1 and i < 3 s_h, w when i % 3 == 2 and i < 3 s_w, t otherwise, so with
    (24, 20, 20): t h w t h w ... t h w t t t t. Each axis still gets s_t, s_h, s_w pairs; a section that
    cannot be interleaved so (3 s_h > dim/2 + 1 or 3 s_w > dim/2) is a ValueError.
    """
    s_t, s_h, s_w = _section(mrope_section)
    _checks.boolean("interleaved", interleaved)
    pairs = s_t + s_h + s_w
    if pairs == 0:
        raise ValueError("mrope_section must have at least one pair, got (0, 0, 0)")
    if not interleaved:
        return torch.repeat_interleave(torch.arange(3, device=device),
                                       torch.tensor([s_t, s_h, s_w], device=device), output_size=pairs)
    i = torch.arange(pairs, device=device)
    axis = torch.zeros(pairs, dtype=torch.long, device=device)
    axis[(i % 3 == 1) & (i < 3 * s_h)] = 1
    axis[(i % 3 == 2) & (i < 3 * s_w)] = 2
    for a, (name, want) in enumerate((("h", s_h), ("w", s_w)), start=1):
        got = len(range(a, min(3 * want, pairs), 3))  # counted without reading the (maybe meta) tensor
        if got != want:
            raise ValueError(f"mrope_section={[s_t, s_h, s_w]} cannot be interleaved: with {pairs} pairs, every "
                             f"third pair from {a} gives {name} only {got} of its s_{name}={want} pairs "
                             f"(it needs 3 * s_h <= {pairs + 1} and 3 * s_w <= {pairs})")
    return axis


# ----------------------------------------------------------------------------- the rotation
def _axis_positions(positions, num_axes: int, name: str = "positions") -> torch.Tensor:
    positions = _checks.int_tensor(name, positions)
    if positions.dim() not in (2, 3) or positions.shape[0] != num_axes:
        raise ValueError(f"{name} must have shape ({num_axes}, seq) or ({num_axes}, batch, seq) (one row per "
                         f"axis), got shape {tuple(positions.shape)}")
    return _checks.position_values(name, positions)


def _check_axis(axis_of_pair, freq: torch.Tensor, num_axes: int) -> torch.Tensor:
    axis_of_pair = _checks.int_tensor("axis_of_pair", axis_of_pair)
    if axis_of_pair.shape != freq.shape:
        raise ValueError(f"axis_of_pair must have inv_freq's shape {tuple(freq.shape)} (one axis per pair), "
                         f"got {tuple(axis_of_pair.shape)}")
    _checks.same_device("inv_freq", freq, axis_of_pair=axis_of_pair)
    if axis_of_pair.device.type != "meta" and axis_of_pair.numel():
        low, high = int(axis_of_pair.min()), int(axis_of_pair.max())
        if low < 0 or high >= num_axes:
            raise ValueError(f"axis_of_pair must hold axes 0 .. {num_axes - 1} (positions has {num_axes} rows), "
                             f"got values from {low} to {high}")
    return axis_of_pair


def _check_freq(inv_freq) -> torch.Tensor:
    if not isinstance(inv_freq, torch.Tensor):
        raise TypeError(f"inv_freq must be a torch.Tensor of frequencies, got {type(inv_freq).__name__}")
    if inv_freq.dim() != 1:
        raise ValueError(f"inv_freq must have shape (pairs,), got {tuple(inv_freq.shape)}")
    return _checks.finite_tensor("inv_freq", inv_freq)


def _angles(positions, inv_freq, axis_of_pair) -> torch.Tensor:
    """positions (A, ...) -> angles (..., P): positions[axis_of_pair[i]] * inv_freq[i], in float64."""
    work = _checks.angle_dtype(positions.device)
    chosen = positions.to(work)[axis_of_pair]              # (P, ...): the coordinate each pair reads
    return chosen.movedim(0, -1) * inv_freq.to(work)       # (..., P)


def multiaxis_cos_sin(positions: torch.Tensor, inv_freq: torch.Tensor, axis_of_pair: torch.Tensor, *,
                      attention_factor: float = 1.0, dtype: torch.dtype = torch.float32):
    """cos and sin of angle_i = positions[axis_of_pair[i]] * inv_freq[i], times attention_factor.

    positions: (A, ...) integers, one row per axis; inv_freq: (P,) floats and axis_of_pair: (P,) ints in
    0 .. A-1, both on positions' device. Returns two (..., P) tensors in `dtype` on that device: the
    half-width tables (transformers' cos/sin are these concatenated with themselves, [c, c]).
    """
    positions = _checks.int_tensor("positions", positions)
    if positions.dim() < 1:
        raise ValueError("positions must have one row per axis, got a 0-d tensor")
    positions = _checks.position_values("positions", positions)
    inv_freq = _check_freq(inv_freq)
    _checks.same_device("positions", positions, inv_freq=inv_freq)
    axis_of_pair = _check_axis(axis_of_pair, inv_freq, positions.shape[0])
    attention_factor = _checks.positive_float("attention_factor", attention_factor)
    dtype = _checks.float_dtype("dtype", dtype) or torch.float32
    angles = _angles(positions, inv_freq, axis_of_pair)
    return (angles.cos() * attention_factor).to(dtype), (angles.sin() * attention_factor).to(dtype)


def apply_multiaxis_rope(x: torch.Tensor, positions: torch.Tensor, *, inv_freq: torch.Tensor,
                         axis_of_pair: torch.Tensor, attention_factor: float = 1.0,
                         layout: str = "half", rotary_dims: tuple | None = None) -> torch.Tensor:
    """RoPE where pair i turns by positions[axis_of_pair[i]] * inv_freq[i]: the form behind 2-D RoPE and M-RoPE.

        y1 = a (x1 cos(angle_i) - x2 sin(angle_i)),   y2 = a (x2 cos(angle_i) + x1 sin(angle_i))

    x: (..., seq, dim) floating, dim even; positions: (A, seq) or (A, batch, seq) integers on x's device,
    one row per axis (batch = x's first dimension, or 1); inv_freq (dim/2,) and axis_of_pair (dim/2,)
    on x's device; a = attention_factor. layout: "half" (pair i = (x[i], x[i + dim/2]), Hugging Face)
    or "interleaved" (x[2i], x[2i+1]). rotary_dims (start, stop): only those dims turn, pairs formed within
    them, the others are copied (rope.rotate's; a checkpoint's partial M-RoPE); then inv_freq and axis_of_pair
    have (stop - start)/2 entries and dim may be odd. Returns a new tensor of x's shape, dtype and device.
    """
    _checks.float_tensor("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., seq, dim), got {tuple(x.shape)}")
    if rotary_dims is None:
        dim = _checks.even_int("x's last dimension (head_dim)", x.shape[-1])
    else:
        start, stop = _checks.pair_slice("rotary_dims", rotary_dims, x.shape[-1])
        dim = stop - start
    _checks.choice("layout", layout, LAYOUTS)
    inv_freq = _check_freq(inv_freq)
    if inv_freq.shape[0] != dim // 2:
        width = "dim/2" if rotary_dims is None else "(stop - start)/2 of rotary_dims"
        raise ValueError(f"inv_freq must have shape ({width},) = ({dim // 2},), got {tuple(inv_freq.shape)}")
    _checks.same_device("x", x, inv_freq=inv_freq)
    positions = _checks.int_tensor("positions", positions)
    if positions.dim() not in (2, 3):
        raise ValueError(f"positions must have shape (axes, seq) or (axes, batch, seq), got {tuple(positions.shape)}")
    positions = _checks.position_values("positions", positions)
    if positions.shape[-1] != x.shape[-2]:
        raise ValueError(f"positions must have seq = x's seq = {x.shape[-2]} as last dimension, "
                         f"got shape {tuple(positions.shape)}")
    _checks.same_device("x", x, positions=positions)
    if positions.dim() == 3 and (x.dim() < 3 or positions.shape[1] not in (1, x.shape[0])):
        raise ValueError(f"positions of shape {tuple(positions.shape)} has a batch dimension that does not fit "
                         f"x of shape {tuple(x.shape)} (expected batch 1 or x's first dimension)")
    axis_of_pair = _check_axis(axis_of_pair, inv_freq, positions.shape[0])
    attention_factor = _checks.positive_float("attention_factor", attention_factor)
    work = _checks.compute_dtype(x.dtype)
    angles = _angles(positions, inv_freq, axis_of_pair)                      # (seq, P) or (batch, seq, P)
    cos, sin = (t.to(work) for t in ((angles.cos() * attention_factor), (angles.sin() * attention_factor)))
    if positions.dim() == 3:                                                 # (batch, 1, ..., seq, P)
        shape = (cos.shape[0], *([1] * (x.dim() - 3)), *cos.shape[1:])
        cos, sin = cos.reshape(shape), sin.reshape(shape)
    return rotate(x, cos, sin, layout, rotary_dims=rotary_dims)


def apply_axial_rope(x: torch.Tensor, positions: torch.Tensor, *, base: float = 10000.0, style: str = "pixtral",
                     layout: str = "half") -> torch.Tensor:
    """2-D axial RoPE for image patches: half of the pairs turn with the row, half with the column.

    x: (..., seq, dim), dim a multiple of 4; positions: (2, seq) or (2, batch, seq) integers on x's device,
    [0] the rows and [1] the columns (e.g. `patch_positions`). style "pixtral" or "qwen2_vl" chooses the
    frequencies (`axial_rope_frequencies`); layout as in posenc_lib.rope (both models: "half"). The score
    of a query patch and a key patch depends on (row_q - row_k, col_q - col_k) only. Returns a new tensor
    of x's shape, dtype and device.
    """
    _checks.float_tensor("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., seq, dim), got {tuple(x.shape)}")
    freq, axis = axial_rope_frequencies(x.shape[-1], base=base, style=style, device=x.device)
    positions = _axis_positions(positions, 2)
    return apply_multiaxis_rope(x, positions, inv_freq=freq, axis_of_pair=axis, layout=layout)


def apply_mrope(x: torch.Tensor, positions: torch.Tensor, *, mrope_section, base: float = 10000.0,
                inv_freq: torch.Tensor | None = None, attention_factor: float = 1.0, interleaved: bool = False,
                layout: str = "half") -> torch.Tensor:
    """M-RoPE (Qwen2-VL, Qwen2.5-VL) or, with interleaved=True, interleaved M-RoPE (Qwen3-VL).

    Pair i turns by positions[a(i)] * theta_i with theta_i = base ** (-2i/dim) (or the given inv_freq,
    e.g. from `rope_inv_freq` with a scaling, and its attention_factor) and a(i) = `mrope_axes(
    mrope_section, interleaved=interleaved)[i]`: 0 (t), 1 (h), 2 (w).
    x: (..., seq, dim); positions: (3, seq) or (3, batch, seq) integers on x's device (rows t, h, w, e.g.
    from `mrope_position_ids`); sum(mrope_section) must be dim/2. Text tokens (t = h = w) get exactly
    plain RoPE at that position. Returns a new tensor of x's shape, dtype and device.
    """
    _checks.float_tensor("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., seq, dim), got {tuple(x.shape)}")
    dim = _checks.even_int("x's last dimension (head_dim)", x.shape[-1])
    axis = mrope_axes(mrope_section, interleaved=interleaved, device=x.device)
    if axis.shape[0] != dim // 2:
        raise ValueError(f"mrope_section must add up to dim/2 = {dim // 2} pairs, got {list(_section(mrope_section))} "
                         f"(sum {axis.shape[0]})")
    if inv_freq is None:
        inv_freq, _ = rope_inv_freq(dim, base=base, device=x.device)
    positions = _axis_positions(positions, 3)
    return apply_multiaxis_rope(x, positions, inv_freq=inv_freq, axis_of_pair=axis,
                                attention_factor=attention_factor, layout=layout)


# ----------------------------------------------------------------------------- M-RoPE position ids
def _segments(segments, spatial_merge_size):
    """Checked segments as (kind, tokens, (t, h', w') or None, seconds per grid or None)."""
    if not isinstance(segments, (list, tuple)) or not segments:
        raise TypeError(f"segments must be a non-empty list like [('text', 3), ('image', (1, 4, 6))], got {segments!r}")
    out = []
    for k, segment in enumerate(segments):
        name = f"segments[{k}]"
        if not isinstance(segment, (list, tuple)) or len(segment) not in (2, 3):
            raise TypeError(f"{name} must be ('text', n), ('image', (t, h, w)) or ('video', (t, h, w)[, seconds]), "
                            f"got {segment!r}")
        kind = _checks.choice(f"{name}[0]", segment[0], SEGMENT_KINDS)
        if kind == "text":
            if len(segment) != 2:
                raise TypeError(f"{name} must be ('text', n), got {segment!r}")
            out.append((kind, _checks.positive_int(f"{name}[1]", segment[1]), None, None))
            continue
        grid = segment[1]
        if not isinstance(grid, (list, tuple)) or len(grid) != 3:
            raise TypeError(f"{name}[1] must be the grid (t, h, w) in vision patches, got {grid!r}")
        t, h, w = (_checks.positive_int(f"{name}[1][{i}]", v) for i, v in enumerate(grid))
        if h % spatial_merge_size or w % spatial_merge_size:
            raise ValueError(f"{name}: h and w must be multiples of spatial_merge_size={spatial_merge_size}, "
                             f"got h={h}, w={w}")
        seconds = None
        if len(segment) == 3:
            if kind != "video":
                raise TypeError(f"{name}: only a video has seconds per grid, got {segment!r}")
            seconds = _checks.positive_float(f"{name}[2]", segment[2])
        grid = (t, h // spatial_merge_size, w // spatial_merge_size)
        out.append((kind, grid[0] * grid[1] * grid[2], grid, seconds))
    return out


def mrope_token_types(segments, *, spatial_merge_size: int = 2, device=None) -> torch.Tensor:
    """(seq,) long: 0 for text tokens, 1 for image tokens, 2 for video tokens (transformers'
    mm_token_type_ids) of the sequence `segments` describes (see `mrope_position_ids`)."""
    merge = _checks.positive_int("spatial_merge_size", spatial_merge_size)
    kinds = [(SEGMENT_KINDS[kind], tokens) for kind, tokens, _, _ in _segments(segments, merge)]
    return torch.cat([torch.full((n,), code, dtype=torch.long, device=device) for code, n in kinds])


def _temporal_steps(frames: int, interval) -> list[int]:
    """trunc(k * interval) for k < frames, in float32 as transformers' get_vision_position_ids computes it."""
    if interval is None:
        return list(range(frames))
    return [int(np.float32(k) * interval) for k in range(frames)]


def mrope_position_ids(segments, *, spatial_merge_size: int = 2, tokens_per_second: float | None = None,
                       resume: str = "max", device=None) -> torch.Tensor:
    """M-RoPE position ids (t, h, w) of a sequence of text, images and videos: a (3, seq) long tensor.

    segments: a list of ('text', n) (n tokens), ('image', (t, h, w)) and ('video', (t, h, w)) or
    ('video', (t, h, w), seconds_per_grid), the grid in vision-encoder patches as transformers'
    image_grid_thw / video_grid_thw (t temporal patches; h, w spatial patches, multiples of
    spatial_merge_size). A vision segment becomes t * h' * w' LLM tokens, h' = h / m, w' = w / m
    (m = spatial_merge_size), in (frame, row, column) order.
    The ids, with s the next free id when the segment starts (s = 0 at the start):
      text           t = h = w = s, s + 1, ..., s + n - 1 (plain 1-D positions); next s += n
      image / video  token (k, r, c): t = s + time(k), h = s + r, w = s + c
                     time(k) = k (Qwen2-VL: tokens_per_second=None), or for a video with tokens_per_second
                     given (Qwen2.5-VL) trunc(k * tokens_per_second * seconds_per_grid) (default 1 s),
                     computed in float32 as transformers does. Images always use time(k) = k.
                     next s: resume="max": 1 + the largest id of the segment (the Qwen2-VL paper, sec. 2.1:
                     each modality starts at the previous one's maximum + 1; Qwen's reference code and
                     transformers up to 5.2); resume="grid": s + max(h', w') (transformers' get_rope_index
                     since 5.3, see transformers issue #45381). The two agree for images and for videos
                     whose time ids stay below max(h', w'); past that, "grid" lets the text after a video
                     reuse ids the video's time axis already took.
    Qwen3-VL gives each video frame its own ('video', (1, h, w)) segment with its timestamp as text in
    between (transformers splits video_grid_thw into frames). Returns the ids on `device`.
    """
    merge = _checks.positive_int("spatial_merge_size", spatial_merge_size)
    _checks.choice("resume", resume, RESUME_RULES)
    if tokens_per_second is not None:
        tokens_per_second = _checks.positive_float("tokens_per_second", tokens_per_second)
    ids, start = [], 0
    for k, (kind, tokens, grid, seconds) in enumerate(_segments(segments, merge)):
        if kind == "text":
            ids.append((torch.arange(tokens, device=device) + start).expand(3, tokens))
            start += tokens
            continue
        t, h, w = grid
        interval = None
        if kind == "video" and tokens_per_second is not None:  # float32 product, as transformers' get_rope_index
            interval = np.float32(tokens_per_second) * np.float32(1.0 if seconds is None else seconds)
        elif seconds is not None:
            raise ValueError(f"segments[{k}] gives seconds per grid but tokens_per_second is None (Qwen2-VL has "
                             f"no time scaling; Qwen2.5-VL's config has tokens_per_second)")
        steps = _temporal_steps(t, interval)
        time = torch.tensor(steps, dtype=torch.long, device=device)
        block = torch.stack(torch.meshgrid(time, torch.arange(h, device=device), torch.arange(w, device=device),
                                           indexing="ij")).reshape(3, -1) + start  # (3, t*h'*w')
        ids.append(block)
        start = start + max(steps[-1], h - 1, w - 1) + 1 if resume == "max" else start + max(h, w)
    return torch.cat(ids, dim=1)
