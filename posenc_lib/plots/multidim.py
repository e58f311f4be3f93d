"""Notebook 11: positions in two and three dimensions. Row-major flattening of an image's patches, 1-D
RoPE against 2-D axial RoPE on a patch grid, which RoPE pairs M-RoPE gives to time, height and width,
and the M-RoPE position ids of a mixed text-image-video sequence.

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
Conventions, as in posenc_lib.multidim: a patch at (row, col) of a grid `width` patches wide has the
row-major index row * width + col; positions are (axes, seq) with the axis first; pair i of 2-D RoPE
turns by row * freq_i (first half of the pairs) or col * freq_i (second half); M-RoPE's axes are
t (0), h (1), w (2); wavelength_i = 2 pi / theta_i tokens (or patches) per turn.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.colors import ListedColormap

from ..i18n import Text, tr
from ..multidim import apply_axial_rope, mrope_axes, mrope_position_ids, mrope_token_types, patch_positions
from ..rope import apply_rope
from ..scaling import rope_inv_freq
from ._style import two_panels

__all__ = ["AXIS_COLORS", "patch_score_map", "render_flattening", "render_patch_scores", "mrope_section_data",
           "render_mrope_sections", "render_mrope_positions"]

AXIS_COLORS = {"t": "#1f77b4", "h": "#ff7f0e", "w": "#2ca02c"}
_MODALITY_TINTS = ListedColormap(["#f2f2f2", "#fde0c5", "#d4ecd4"])  # text, image, video
_MODALITY_NAMES = {"text": Text("text", "文本"), "image": Text("image", "图像"), "video": Text("video", "视频")}


def _grid_ticks(ax, height: int, width: int) -> None:
    ax.set_xticks(range(width))
    ax.set_yticks(range(height))
    ax.tick_params(labelsize=8, length=0)
    ax.set_xlabel(tr("column", "列"), fontsize=8)
    ax.set_ylabel(tr("row", "行"), fontsize=8)


def _box(ax, row, col, color, lw=2.0):
    ax.plot([col - 0.5, col + 0.5, col + 0.5, col - 0.5, col - 0.5],
            [row - 0.5, row - 0.5, row + 0.5, row + 0.5, row - 0.5], color=color, lw=lw)


def render_flattening(axes, height: int = 4, width: int = 6, row: int = 1, col: int = 2):
    """What row-major flattening does to neighbours. Left: each patch labelled with its 1-D index
    row * width + col, the query patch (row, col) in red, its right neighbour and the patch below it
    outlined. Right: |index - query index|, the distance a 1-D encoding sees.
    Returns dict(index (H, W), distance (H, W)) as numpy."""
    index = (torch.arange(height)[:, None] * width + torch.arange(width)[None, :]).numpy()
    distance = np.abs(index - index[row, col])
    ax_index, ax_distance = axes
    ax_index.imshow(np.zeros_like(index), cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
    for r in range(height):
        for c in range(width):
            ax_index.text(c, r, str(index[r, c]), ha="center", va="center", fontsize=8)
    _box(ax_index, row, col, "C3")
    if col + 1 < width:
        _box(ax_index, row, col + 1, "C0", lw=1.5)
    if row + 1 < height:
        _box(ax_index, row + 1, col, "C2", lw=1.5)
    ax_index.set_title(tr(f"1-D index = row x {width} + col", f"一维索引 = 行 x {width} + 列"), fontsize=9)
    _grid_ticks(ax_index, height, width)
    ax_distance.imshow(distance, cmap="viridis_r", interpolation="nearest")
    for r, c, color in ((row, col, "C3"), (row, col + 1, "C0"), (row + 1, col, "C2")):
        if r < height and c < width:
            _box(ax_distance, r, c, color, lw=1.5)
            ax_distance.text(c, r, str(distance[r, c]), ha="center", va="center", fontsize=8, color="w")
    ax_distance.set_title(tr(f"|1-D distance| from the red patch: right 1, below {width}",
                          f"到红色 patch 的 |一维距离|：右邻 1，下邻 {width}"), fontsize=9)
    _grid_ticks(ax_distance, height, width)
    two_panels(axes)
    return {"index": index, "distance": distance}


def patch_score_map(height: int, width: int, row: int, col: int, *, dim: int = 32, base: float = 100.0,
                    method: str = "axial") -> np.ndarray:
    """Score of a content-free query (all ones, dim dims) at patch (row, col) against the same key at every
    patch of a height x width grid: an (H, W) float64 numpy array. With q = k = 1 each pair contributes
    2 cos(angle difference), so the map shows the position part of the score alone.
    method: "1d" (apply_rope on the row-major index row * width + col), "axial" (apply_axial_rope,
    Pixtral's frequencies) or "qwen2_vl" (apply_axial_rope, Qwen2-VL's)."""
    positions = patch_positions(height, width)                                   # (2, H*W), row-major
    ones = torch.ones(height * width, dim, dtype=torch.float64)
    if method == "1d":
        rotated = apply_rope(ones, positions[0] * width + positions[1], base=base)
    elif method in ("axial", "qwen2_vl"):
        style = "pixtral" if method == "axial" else "qwen2_vl"
        rotated = apply_axial_rope(ones, positions, base=base, style=style)
    else:
        raise ValueError(f"method must be one of ['1d', 'axial', 'qwen2_vl'], got {method!r}")
    query = rotated[row * width + col]
    return (rotated @ query).reshape(height, width).numpy()


def render_patch_scores(axes, height: int = 8, width: int = 8, row: int = 3, col: int = 4, *, dim: int = 32,
                        base: float = 100.0):
    """Left: 1-D RoPE on the row-major index; right: 2-D axial RoPE (Pixtral's frequencies); each the
    score of a content-free query at patch (row, col) against every key patch (`patch_score_map`).
    Returns dict(one_d, axial (H, W) numpy, row, col)."""
    if not (0 <= row < height and 0 <= col < width):
        raise ValueError(f"the query patch (row, col) = ({row}, {col}) must lie in the {height} x {width} grid")
    maps = {"one_d": patch_score_map(height, width, row, col, dim=dim, base=base, method="1d"),
            "axial": patch_score_map(height, width, row, col, dim=dim, base=base, method="axial")}
    top = float(dim)  # score at distance 0: dim/2 pairs x 2
    for ax, (name, title) in zip(axes, (("one_d", tr("1-D RoPE on row x W + col", "一维 RoPE，位置 = 行 x W + 列")),
                                         ("axial", tr("2-D axial RoPE", "二维轴向 RoPE")))):
        ax.imshow(maps[name], cmap="RdBu_r", vmin=-top, vmax=top, interpolation="nearest")
        ax.plot([col], [row], marker="x", color="k", ms=7, mew=2)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(0, width, max(1, width // 5)))
        ax.set_yticks(range(0, height, max(1, height // 5)))
        ax.tick_params(labelsize=8)
        ax.set_xlabel(tr("key column", "键所在列"), fontsize=8)
    axes[0].set_ylabel(tr("key row", "键所在行"), fontsize=8)
    two_panels(axes)
    return {**maps, "row": row, "col": col}


def mrope_section_data(temporal: int = 16, height: int = 24, *, pairs: int = 64, base: float = 1_000_000.0,
                       interleaved: bool = False) -> dict:
    """Which axis each of `pairs` RoPE pairs reads for the section (temporal, height, pairs - temporal - height)
    and its wavelength 2 pi / theta_i (theta_i = base ** (-i/pairs), i.e. head_dim = 2 * pairs).
    Returns dict(section, axis (pairs,) int numpy, wavelength (pairs,) numpy, fastest / slowest: axis name ->
    shortest / longest wavelength of its pairs, turn: axis name -> radians its fastest pair turns per step),
    or dict(section, error) when the section is impossible (negative width, or not interleavable)."""
    section = (temporal, height, pairs - temporal - height)
    if section[2] < 0:
        return {"section": section, "error": tr(f"t + h = {temporal + height} pairs > {pairs}: no pairs left for w",
                                                f"t + h = {temporal + height} 对 > {pairs}：w 已分不到频率对")}
    try:
        axis = mrope_axes(list(section), interleaved=interleaved).numpy()
    except ValueError as error:
        return {"section": section, "error": str(error)}
    theta, _ = rope_inv_freq(2 * pairs, base=base)
    wavelength = (2 * math.pi / theta).numpy()
    out = {"section": section, "axis": axis, "wavelength": wavelength, "fastest": {}, "slowest": {}, "turn": {}}
    for a, name in enumerate(AXIS_COLORS):
        mine = wavelength[axis == a]
        if mine.size:
            out["fastest"][name], out["slowest"][name] = float(mine.min()), float(mine.max())
            out["turn"][name] = float(2 * math.pi / mine.min())
    return out


def render_mrope_sections(ax, temporal: int = 16, height: int = 24, interleaved: bool = False, *, pairs: int = 64,
                          base: float = 1_000_000.0):
    """Wavelength (log scale) of every RoPE pair, coloured by the axis it reads under M-RoPE with the section
    (temporal, height, rest) in chunks (Qwen2-VL) or interleaved (Qwen3-VL). An impossible section is
    drawn as its error message. Returns mrope_section_data(...)."""
    data = mrope_section_data(temporal, height, pairs=pairs, base=base, interleaved=interleaved)
    ax.set_yscale("log")
    ax.set_xlim(-1, pairs)
    ax.set_ylim(1, 2 * math.pi * base * 3)
    ax.set_xlabel(tr("pair i", "频率对 i"), fontsize=8)
    ax.set_ylabel(tr("wavelength 2 pi / theta_i", "波长 2 pi / theta_i"), fontsize=8)
    kind = (tr("interleaved (Qwen3-VL)", "交错（Qwen3-VL）") if interleaved
            else tr("chunks (Qwen2-VL)", "分块（Qwen2-VL）"))
    if "error" in data:
        ax.text(pairs / 2, 2 * math.pi * 30, "\n".join(_wrap(data["error"], 60)), ha="center", va="center",
                fontsize=8, color="C3")
        ax.set_title(tr(f"section {list(data['section'])}, {kind}: impossible",
                        f"分段 {list(data['section'])}，{kind}：不可行"), fontsize=9)
        ax.tick_params(labelsize=8)
        return data
    i = np.arange(pairs)
    for a, (name, color) in enumerate(AXIS_COLORS.items()):
        mine = data["axis"] == a
        label = (tr(f"{name}: {int(mine.sum())} pairs, shortest {data['fastest'][name]:.3g}",
                    f"{name}：{int(mine.sum())} 对，最短 {data['fastest'][name]:.3g}") if mine.any()
                 else tr(f"{name}: no pairs", f"{name}：没有频率对"))
        ax.plot(i[mine], data["wavelength"][mine], "o", ms=3, color=color, label=label)  # cheaper than scatter
    ax.axhline(2 * math.pi * 32, color="0.6", lw=0.8, ls="--")  # above it: < 1 radian across 32 patches
    ax.set_title(tr(f"section {list(data['section'])}, {kind}", f"分段 {list(data['section'])}，{kind}"), fontsize=9)
    ax.legend(fontsize=8, loc="upper left", markerscale=1.5, handletextpad=0.2)
    ax.tick_params(labelsize=8)
    ax.minorticks_off()
    return data


def _wrap(text: str, width: int) -> list:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line] if line else lines


def render_mrope_positions(ax, segments, *, spatial_merge_size: int = 2, tokens_per_second=None, resume: str = "max"):
    """The token grid: one column per token of `segments` (see posenc_lib.multidim.mrope_position_ids), four
    rows: the token's index in the sequence, then its M-RoPE ids t, h, w, each cell labelled with its id and
    tinted by modality (grey text, orange image, green video). Returns dict(ids (3, seq), types (seq,)) numpy."""
    ids = mrope_position_ids(segments, spatial_merge_size=spatial_merge_size, tokens_per_second=tokens_per_second,
                             resume=resume).numpy()
    kinds = mrope_token_types(segments, spatial_merge_size=spatial_merge_size).numpy()
    seq = ids.shape[1]
    table = np.vstack((np.arange(seq), ids))                                   # (4, seq)
    ax.imshow(np.broadcast_to(kinds, (4, seq)), cmap=_MODALITY_TINTS, vmin=-0.5, vmax=2.5, aspect="auto",
              interpolation="nearest")
    every = -(-seq // 32)  # past 32 tokens, label every `every`-th column: 8-pt numbers need the room
    for r in range(4):
        for c in range(0, seq, every):
            ax.text(c, r, str(table[r, c]), ha="center", va="center", fontsize=8)
    ax.axhline(0.5, color="k", lw=0.8)
    ax.set_yticks(range(4))
    ax.set_yticklabels([tr("token index", "token 序号"), "t", "h", "w"], fontsize=8)
    ax.set_xticks([])
    start = 0
    for segment in segments:                                                   # name each segment above it
        n = _segment_tokens(segment, spatial_merge_size)
        ax.text(start + (n - 1) / 2, -0.75, str(_MODALITY_NAMES.get(segment[0], segment[0])), ha="center", va="bottom",
                fontsize=8)
        if start:
            ax.axvline(start - 0.5, color="0.4", lw=0.8)
        start += n
    ax.set_xlim(-0.5, seq - 0.5)
    ax.set_ylim(3.5, -1.0)
    ax.set_title(tr(f"M-RoPE position ids: {seq} tokens, ids 0 .. {int(ids.max())}",
                 f"M-RoPE 位置 id：{seq} 个 token，id 从 0 到 {int(ids.max())}"), fontsize=9, pad=12)
    return {"ids": ids, "types": kinds}


def _segment_tokens(segment, merge: int) -> int:
    if segment[0] == "text":
        return int(segment[1])
    t, h, w = segment[1]
    return int(t * (h // merge) * (w // merge))
