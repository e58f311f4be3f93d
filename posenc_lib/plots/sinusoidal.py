"""Notebooks 00, 02 and 03: the sinusoidal table, its wavelengths and dot products, the offset matrix
M_k on the unit circle, and which score maps depend on n - m only.

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
Conventions, as in posenc_lib.absolute:
  * omega_i = base ** (-2i/d) for the pair index i; layout "interleaved" puts sin(pos*omega_i) in
    column 2i and cos in column 2i+1, "half" puts all sines then all cosines.
  * unit-circle figures put sin on the horizontal axis and cos on the vertical one, so a pair (sin, cos)
    moves CLOCKWISE as the position grows; RoPE's rotation of (x1, x2) is counter-clockwise.
"""
from __future__ import annotations

import functools
import math
import time

import numpy as np
import torch

from ..absolute import offset_matrix, sinusoidal_frequencies, sinusoidal_table
from ..i18n import Text, tr
from ..relative import diagonal_spread
from ..rope import apply_rope, rope_matrix
from ._style import tidy, to_numpy

__all__ = ["DTYPES", "render_device_check", "render_table", "render_sinusoidal_heatmap", "render_wavelengths",
           "render_pe_dot", "render_unit_circle", "relative_score_maps", "render_score_maps"]

DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


# --------------------------------------------------------------------------------------- 00: device / dtype check

@functools.lru_cache(maxsize=8)
def _float64_table(num_positions: int, dim: int) -> torch.Tensor:
    """The float64 reference table on the CPU, computed once per shape (read-only: callers must not modify it)."""
    return sinusoidal_table(num_positions, dim, dtype=torch.float64)


def render_device_check(axes, device: str = "cpu", dtype: str = "float32", num_positions: int = 512, dim: int = 16):
    """Left: two columns of the sinusoidal table made on `device` in `dtype`. Right: the error against a
    float64 reference, per position, for (a) the library (angles in float64, result cast to dtype) and
    (b) a naive version that computes the positions and angles in `dtype` itself.
    Returns dict(device, dtype, library_error, naive_error, seconds)."""
    ax_values, ax_error = axes
    torch_dtype = DTYPES[dtype]
    if torch.device(device).type == "mps" and torch_dtype == torch.float64:
        for ax in axes:
            ax.set_axis_off()
        ax_values.set_title(tr("mps has no float64: pick another dtype", "mps 不支持 float64：请换一种 dtype"),
                            fontsize=9)
        return {"device": device, "dtype": dtype, "library_error": float("nan"), "naive_error": float("nan"),
                "seconds": 0.0}
    start = time.perf_counter()
    table = sinusoidal_table(num_positions, dim, device=device, dtype=torch_dtype)
    omega = sinusoidal_frequencies(dim, device=device)
    positions = torch.arange(num_positions, device=device, dtype=torch_dtype)
    naive = (positions[:, None] * omega.to(torch_dtype)).sin()
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    reference = _float64_table(num_positions, dim)
    library_error = (table.cpu().double() - reference).abs().amax(dim=1).numpy()
    naive_error = (naive.cpu().double() - reference[:, 0::2]).abs().amax(dim=1).numpy()
    pos = np.arange(num_positions)
    render_table(ax_values, table, title=tr(f"{num_positions} x {dim} table made on {device} in {dtype}",
                                          f"在 {device} 上以 {dtype} 生成的 {num_positions} x {dim} 表"))
    floor = 1e-18
    ax_error.semilogy(pos, np.maximum(library_error, floor), lw=0.8,
                      label=tr("library: angles in float64", "本库：角度用 float64 算"))
    ax_error.semilogy(pos, np.maximum(naive_error, floor), lw=0.8,
                      label=tr(f"naive: angles in {dtype}", f"朴素：角度用 {dtype} 算"))
    ax_error.set_ylim(1e-17, 10)
    ax_error.set_yticks([1e-16, 1e-8, 1.0], ["1e-16", "1e-8", "1"])  # few labels, no mathtext: faster
    ax_error.minorticks_off()
    ax_error.tick_params(labelsize=8)
    ax_error.locator_params(axis="x", nbins=3)
    ax_error.figure.subplots_adjust(bottom=0.17, wspace=0.3)
    ax_error.set_xlabel(tr("position", "位置"), fontsize=8)
    ax_error.set_title(tr(f"max |error| vs float64: library {library_error.max():.1e}, naive {naive_error.max():.1e}",
                          f"相对 float64 的最大 |误差|：本库 {library_error.max():.1e}，朴素 {naive_error.max():.1e}"),
                       fontsize=9)
    ax_error.legend(fontsize=8, loc="lower right")
    return {"device": device, "dtype": dtype, "library_error": float(library_error.max()),
            "naive_error": float(naive_error.max()), "seconds": seconds}


# ------------------------------------------------------------------------------------------ 02: the table

def render_table(ax, table, *, title: str = "", position: int | None = None, colorbar: bool = False):
    """A (positions, dims) table as a heatmap, blue -1 ... red +1; a line marks `position` if given.

    colorbar=True adds a thin colour scale (-1, 0, +1) just right of the axes. It lives in an inset of
    `ax` (it takes no room from the axes, and follows them when the figure is re-laid out); a stale one
    from an earlier render on the same axes is removed first, so a slider redraw does not stack them."""
    data = to_numpy(table)
    for child in list(ax.child_axes):  # an earlier render's colour scale (reset_axes keeps inset axes)
        child.remove()
    image = ax.imshow(data, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    if colorbar:
        scale = ax.figure.colorbar(image, cax=ax.inset_axes([1.02, 0.0, 0.03, 1.0]), ticks=[-1, 0, 1])
        scale.ax.tick_params(labelsize=8, length=2, pad=1)
    ax.set_xlabel(tr("dimension", "维度"), fontsize=8)
    ax.set_ylabel(tr("position", "位置"), fontsize=8)
    tidy(ax)
    if position is not None:
        ax.axhline(position, color="black", lw=0.8)
    ax.set_title(title, fontsize=9)
    return data


def render_sinusoidal_heatmap(axes, d_model: int = 128, base: float = 10000.0, length: int = 100, position: int = 20,
                              layout: str = "interleaved"):
    """Left: the (length, d_model) sinusoidal table. Right: the row of one position, sin and cos columns
    marked. Returns dict(table, vector, position)."""
    ax_table, ax_vec = axes
    table = sinusoidal_table(length, d_model, base=base, layout=layout, dtype=torch.float64)
    position = min(int(position), length - 1)
    render_table(ax_table, table, position=position, colorbar=True,
                 title=tr(f"PE table: {length} positions x {d_model} dims, base {base:g}, {layout}",
                          f"PE 表：{length} 个位置 x {d_model} 维，底数 {base:g}，{layout}"))
    vector = table[position].numpy()
    dims = np.arange(d_model)
    if layout == "interleaved":
        sin_dims, cos_dims = dims[0::2], dims[1::2]
    else:
        sin_dims, cos_dims = dims[: d_model // 2], dims[d_model // 2:]
    marker = "." if d_model > 64 else "o"
    ax_vec.plot(sin_dims, vector[sin_dims], marker, ms=3, label=tr("sin columns", "sin 列"))
    ax_vec.plot(cos_dims, vector[cos_dims], marker, ms=3, label=tr("cos columns", "cos 列"))
    ax_vec.set_ylim(-1.1, 1.1)
    ax_vec.set_xlabel(tr("dimension", "维度"), fontsize=8)
    tidy(ax_vec)
    ax_vec.set_title(f"PE(position={position})", fontsize=9)
    ax_vec.legend(fontsize=8, loc="lower right")
    ax_vec.figure.subplots_adjust(bottom=0.16, wspace=0.32)  # room for the table's colour scale
    return {"table": table, "vector": table[position], "position": position}


def render_wavelengths(ax, d_model: int = 128, base: float = 10000.0):
    """Wavelength 2*pi/omega_i of each pair i on a log axis, between the bounds 2*pi and 2*pi*base."""
    omega = sinusoidal_frequencies(d_model, base=base, dtype=torch.float64)
    wavelengths = (2 * math.pi / omega).numpy()
    ax.semilogy(np.arange(len(wavelengths)), wavelengths, ".-", ms=3)
    ax.axhline(2 * math.pi, color="gray", ls="--", lw=0.8)
    ax.axhline(2 * math.pi * base, color="gray", ls=":", lw=0.8)
    ax.set_ylim(2 * math.pi / 2, 2 * math.pi * base * 6)
    last = len(wavelengths) - 1
    ax.text(last, 2 * math.pi / 1.15, "2π", fontsize=8, ha="right", va="top")
    ax.text(0, 2 * math.pi * base * 1.15, "2π·base", fontsize=8, va="bottom")
    ax.locator_params(axis="x", nbins=6)
    ax.tick_params(labelsize=8)
    ax.set_xlabel(tr("pair index i (dims 2i, 2i+1)", "频率对序号 i（第 2i、2i+1 维）"), fontsize=8)
    ax.set_ylabel(tr("wavelength (tokens)", "波长（token 数）"), fontsize=8)
    ax.set_title(tr(f"wavelengths, d_model={d_model}, base={base:g}: a straight line = geometric",
                 f"波长，d_model={d_model}，base={base:g}：一条直线 = 等比数列"), fontsize=9)
    return wavelengths


def render_pe_dot(ax, d_model: int = 128, base: float = 10000.0, position: int = 50, length: int = 200):
    """PE(position) . PE(q) for every q in [0, length), with the closed form sum_i cos((q - position) omega_i)
    for all offsets; the curve is symmetric around q = position. Returns dict(dots, closed_form, offsets)."""
    table = sinusoidal_table(length, d_model, base=base, dtype=torch.float64)
    position = min(int(position), length - 1)
    dots = (table @ table[position]).numpy()
    offsets = np.arange(-length + 1, length)
    omega = sinusoidal_frequencies(d_model, base=base, dtype=torch.float64).numpy()
    closed = np.cos(offsets[:, None] * omega[None, :]).sum(axis=1)
    ax.plot(offsets + position, closed, color="lightgray", lw=2,
            label=tr("Σ cos(k·ω_i), any k", "Σ cos(k·ω_i)，任意 k"))
    ax.plot(np.arange(length), dots, lw=1, label=f"PE({position})·PE(q)")
    ax.axvline(position, color="black", lw=0.6)
    ax.set_xlim(-0.5, length - 0.5)
    ax.set_xlabel("q", fontsize=8)
    ax.set_ylabel(tr("dot product", "点积"), fontsize=8)
    tidy(ax, 6)
    ax.set_title(tr(f"PE({position})·PE(q): depends on |q - {position}| only (max d/2 = {d_model // 2})",
                 f"PE({position})·PE(q)：只取决于 |q - {position}|（最大值 d/2 = {d_model // 2}）"), fontsize=9)
    ax.legend(fontsize=8, loc="lower left")
    ax.figure.subplots_adjust(bottom=0.16)
    return {"dots": dots, "closed_form": closed, "offsets": offsets, "position": position}


# ----------------------------------------------------------------------------------------- 03: linearity proof

def _numbered_positions(omega: float, trail: int, min_gap: float = 0.45) -> list[int]:
    """Positions 0, s, 2s, ... <= trail to number on the circle: at least `min_gap` radians apart and all
    within the first turn (so no two labels land on one spot)."""
    step = max(1, math.ceil(min_gap / omega))
    return [p for p in range(0, trail + 1, step) if p * omega < 2 * math.pi - min_gap / 2]


def render_unit_circle(ax, k: int = 5, i: int = 1, position: int = 3, dim: int = 16, base: float = 10000.0,
                       trail: int = 40, show_rope: bool = True):
    """Pair i of PE(pos) as a point (sin, cos) on the unit circle, for pos = 0 .. trail, the positions
    numbered along the first turn (so the direction reads on a still image: they run clockwise from the
    top); PE(position) moved by the offset matrix M_k (lands on PE(position + k), clockwise) and, if
    `show_rope`, by RoPE's rotation R_k (lands on PE(position - k): the opposite way).
    Returns dict(point, offset, rope, beta, omega, numbered); "rope" is computed even when not drawn."""
    omega = sinusoidal_frequencies(dim, base=base, dtype=torch.float64)[i].item()
    beta = k * omega
    pair = slice(2 * i, 2 * i + 2)
    angle = position * omega
    start = torch.tensor([math.sin(angle), math.cos(angle)], dtype=torch.float64)
    m_block = offset_matrix(k, dim, base=base)[pair, pair]
    r_block = rope_matrix(k, dim, base=base, layout="interleaved")[pair, pair]
    moved, rotated = m_block @ start, r_block @ start
    circle = np.linspace(0, 2 * math.pi, 200)
    ax.plot(np.sin(circle), np.cos(circle), color="lightgray", lw=1)
    trail_pos = np.arange(trail + 1)
    ax.plot(np.sin(trail_pos * omega), np.cos(trail_pos * omega), ".", color="silver", ms=3)
    numbered = _numbered_positions(omega, trail)
    for p in numbered:  # the position's number just outside its dot
        ax.text(1.14 * math.sin(p * omega), 1.14 * math.cos(p * omega), str(p), fontsize=8, color="dimgray",
                ha="center", va="center")
    ax.plot(*start.numpy(), "o", color="black", ms=5, label=f"PE({position})")
    ax.annotate("", xy=tuple(moved.numpy()), xytext=tuple(start.numpy()),
                arrowprops={"arrowstyle": "->", "color": "tab:blue", "lw": 1.5})
    ax.plot(*moved.numpy(), "o", color="tab:blue", ms=5, label=f"M_k·PE({position}) = PE({position + k})")
    if show_rope:
        ax.annotate("", xy=tuple(rotated.numpy()), xytext=tuple(start.numpy()),
                    arrowprops={"arrowstyle": "->", "color": "tab:red", "lw": 1.2, "ls": "--"})
        ax.plot(*rotated.numpy(), "s", color="tab:red", ms=4, label=f"R_k·PE({position}) = PE({position - k})")
    ax.set_aspect("equal")
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-1.3, 1.3)
    ax.set_xlabel(tr(f"sin(pos·ω_{i})  (dim {2 * i})", f"sin(pos·ω_{i})（第 {2 * i} 维）"), fontsize=8)
    ax.set_ylabel(tr(f"cos(pos·ω_{i})  (dim {2 * i + 1})", f"cos(pos·ω_{i})（第 {2 * i + 1} 维）"), fontsize=8)
    ax.set_xticks([-1, 0, 1])
    ax.set_yticks([-1, 0, 1])
    ax.tick_params(labelsize=8)
    ax.set_title(tr(f"pair i={i}: ω={omega:.3g}, k={k}, kω={beta:.3g} rad; grey: positions 0..{trail}",
                 f"频率对 i={i}：ω={omega:.3g}，k={k}，kω={beta:.3g} rad；灰点：位置 0..{trail}"), fontsize=9)
    ax.legend(fontsize=8, loc="center", framealpha=0.8)
    return {"point": start, "offset": moved, "rope": rotated, "beta": beta, "omega": omega, "numbered": numbered}


def relative_score_maps(dim: int = 16, length: int = 32, *, base: float = 10000.0, seed: int = 0) -> dict:
    """Score maps (query m, key n) for the same content vector x at every position:

    "PE·PE (W = I)"        p_m · p_n                          a function of n - m
    "PE, random W"          (x + p_m) W_q W_k^T (x + p_n)^T    is not: cross terms and p_m W p_n
    "PE·PE, random W"       p_m W_q W_k^T p_n^T                 the position-position term alone: is not either
    "RoPE, random W"        (R_m W_q^T x) · (R_n W_k^T x)       a function of n - m for every W
    Returns name -> (length, length) float64 tensor."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(dim, generator=gen, dtype=torch.float64)
    w_q = torch.randn(dim, dim, generator=gen, dtype=torch.float64) / math.sqrt(dim)
    w_k = torch.randn(dim, dim, generator=gen, dtype=torch.float64) / math.sqrt(dim)
    p = sinusoidal_table(length, dim, base=base, dtype=torch.float64)
    w = w_q @ w_k.T
    h = x + p  # (length, dim)
    positions = torch.arange(length)
    q_rot = apply_rope((x @ w_q).expand(length, dim), positions, base=base, layout="interleaved")
    k_rot = apply_rope((x @ w_k).expand(length, dim), positions, base=base, layout="interleaved")
    return {"PE·PE (W = I)": p @ p.T, "PE, random W": h @ w @ h.T, "PE·PE, random W": p @ w @ p.T,
            "RoPE, random W": q_rot @ k_rot.T}


# relative_score_maps' names as a figure shows them (the keys stay as they are)
_SCORE_MAP_NAMES = {"PE, random W": Text("PE, random W", "PE，随机 W"),
                    "PE·PE, random W": Text("PE·PE, random W", "PE·PE，随机 W"),
                    "RoPE, random W": Text("RoPE, random W", "RoPE，随机 W")}


def render_score_maps(axes, maps: dict):
    """One heatmap per score map (query m down, key n across), titled with its diagonal spread."""
    spreads = {}
    for ax, (name, scores) in zip(np.ravel(axes), maps.items()):
        spreads[name] = diagonal_spread(scores)
        limit = float(scores.abs().max())
        ax.imshow(scores.numpy(), cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
        shown = _SCORE_MAP_NAMES.get(name, name)
        ax.set_title(tr(f"{shown}\nspread along diagonals {spreads[name]:.1e}",
                        f"{shown}\n对角线极差 {spreads[name]:.1e}"),
                     fontsize=8)
        ax.set_xlabel(tr("key n", "键 n"), fontsize=8)
        ax.set_ylabel(tr("query m", "查询 m"), fontsize=8)
        ax.tick_params(labelsize=8)
    return spreads
