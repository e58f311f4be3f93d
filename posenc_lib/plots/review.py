"""Notebook 09: the review. Which encodings' scores notice a shift of the whole sequence, and the
table of what every encoding costs and how it extrapolated (from notebook 07's cached results), and
which production variants of RoPE (notebooks 10-11) the shipped model configs use.

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..absolute import LearnedEncoding, SinusoidalEncoding
from ..alibi import ALiBi
from ..attention import NoPE
from ..i18n import tr
from ..relative import T5RelativeBias
from ..rope import RotaryEmbedding
from ._style import ENCODING_COLORS, encoding_label, tidy

__all__ = ["shift_scores", "shift_invariance", "render_shift_invariance", "encoding_table_markdown",
           "variant_table_markdown"]


def shift_scores(encoding, x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor, shift: int) -> torch.Tensor:
    """Attention scores (T, T) (before the softmax, no 1/sqrt(d)) of the tokens x (T, d) placed at
    positions shift .. shift+T-1, going through every hook of `encoding` (one head): input added,
    q/k rotated, score bias added."""
    T = x.shape[0]
    positions = torch.arange(T, device=x.device) + int(shift)
    h = encoding.add_to_input(x[None], positions)[0]
    q, k = (h @ wq)[None, None], (h @ wk)[None, None]
    q, k = encoding.rotate_qk(q, k, positions, positions)
    scores = q @ k.transpose(-1, -2)
    bias = encoding.score_bias(q, positions, positions)
    return (scores if bias is None else scores + bias)[0, 0]


def shift_invariance(shifts=(0, 1, 5, 20, 60, 200), dim: int = 16, length: int = 24, seed: int = 0) -> dict:
    """max |S(shift) - S(0)| for the same tokens moved by `shift` positions, per encoding (float64).

    Relative encodings (RoPE, T5, ALiBi) give rounding-level or exactly zero changes; absolute ones
    (sinusoidal, learned) change the scores. Returns dict(shifts, change: {name: [...]})."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(length, dim, generator=gen, dtype=torch.float64)
    wq, wk = (torch.randn(dim, dim, generator=gen, dtype=torch.float64) / math.sqrt(dim) for _ in range(2))
    torch.manual_seed(seed)
    encodings = {"nope": NoPE(), "sinusoidal": SinusoidalEncoding(dim),
                 "learned": LearnedEncoding(max(shifts) + length, dim, init_std=1.0),
                 "t5": T5RelativeBias(1, bidirectional=False), "rope": RotaryEmbedding(dim), "alibi": ALiBi(1)}
    change = {}
    with torch.no_grad():
        for name, enc in encodings.items():
            base = shift_scores(enc, x, wq, wk, 0)
            change[name] = [float((shift_scores(enc, x, wq, wk, s) - base).abs().max()) for s in shifts]
    return {"shifts": list(shifts), "change": change}


def render_shift_invariance(ax, data: dict, floor: float = 1e-17):
    """How much the scores change when the whole sequence moves by `shift`, from `shift_invariance()`
    (log axis; exact zeros drawn at `floor`). Returns the data drawn."""
    shifts = np.array(data["shifts"][1:])
    for name, values in data["change"].items():
        v = np.maximum(np.array(values[1:]), floor)
        ax.semilogy(shifts, v, "o-", ms=3, lw=1.2, color=ENCODING_COLORS.get(name, "k"), label=encoding_label(name))
    ax.axhline(1e-12, color="k", lw=0.6, ls=":")
    ax.text(shifts[0], 1e-12, tr(" rounding level", " 舍入误差量级"), fontsize=7, va="bottom")
    zeros = [name for name, values in data["change"].items() if max(values) == 0.0]
    if zeros:
        ax.text(shifts[0], floor * 4, tr(" exactly 0 (overlapping): ", " 恰好为 0（曲线重合）：") + ", ".join(map(encoding_label, zeros)),
                fontsize=7, va="bottom")
    ax.set_xscale("log")
    ax.set_xlabel(tr("shift of the whole sequence (positions)", "整个序列平移的位置数"), fontsize=8)
    ax.set_ylabel(tr("max |scores(shift) - scores(0)|", "max |分数(shift) - 分数(0)|"), fontsize=8)
    ax.set_title(tr("same tokens, moved: which scores notice? (exact 0 drawn at 1e-17)",
                 "同样的 token 整体平移：哪些分数会变？（恰为 0 的画在 1e-17）"), fontsize=9, y=1.0)
    ax.legend(fontsize=7, ncol=3, loc="center right")
    tidy(ax, 5, axis="y", minor_ticks=False)
    return data


def encoding_table_markdown(rows: list) -> str:
    """A Markdown table of `experiments.encoding_summary` rows (rises in nats/char; n/a = no value)."""
    multiples = list(rows[0]["rise"])
    head = (tr("| encoding | where it acts | parameters in TinyLM | loss at L | ",
               "| 编码 | 作用位置 | TinyLM 中的参数量 | L 处的损失 | ")
            + " | ".join(tr(f"rise at {m}L", f"{m}L 处的上升") for m in multiples) + " |")
    lines = [head, "|" + "---|" * (4 + len(multiples))]
    for r in rows:
        if not r["measured"]:
            measured = [tr("not in the experiment", "未参与实验")] + [""] * len(multiples)
        else:
            measured = [f"{r['loss_at_L']:.3f}"] + [tr("n/a", "无") if r["rise"][m] is None else f"{r['rise'][m]:+.3f}"
                                                    for m in multiples]
        lines.append(f"| {r['encoding']} | {r['acts']} | {r['parameters']} | " + " | ".join(measured) + " |")
    return "\n".join(lines)


def variant_table_markdown(variants: dict, where: dict) -> str:
    """A Markdown table with one row per variant (the keys of `where`, in order): where it is taught
    (`where[variant]`) and the models that use it, from `variants` = {model name: its variant names,
    e.g. configs.ModelPositions.variants()}. "-": no model in `variants` uses it."""
    lines = [tr("| variant | notebook | models among the shipped configs |", "| 变体 | notebook | 随附配置中用到它的模型 |"),
             "|---|---|---|"]
    for variant, notebook in where.items():
        users = [name for name, used in variants.items() if variant in used]
        lines.append(f"| {variant} | {notebook} | {', '.join(users) if users else '-'} |")
    return "\n".join(lines)
