"""Notebook 09: the review. Which encodings' scores notice a shift of the whole sequence, and the
table of what every encoding costs and how it extrapolated (from notebook 07's cached results), which
production variants of RoPE (notebooks 10-11) the shipped model configs use, and a cheat sheet of the
RoPE scalings (one row per rope_type of posenc_lib.scaling, its numbers computed by rope_inv_freq).

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..absolute import LearnedEncoding, SinusoidalEncoding
from ..alibi import ALiBi
from ..attention import NoPE
from ..i18n import Text, tr
from ..model import encoding_label
from ..relative import T5RelativeBias
from ..rope import RotaryEmbedding
from ..scaling import ROPE_SCALINGS, rope_inv_freq
from ._style import ENCODING_COLORS, tidy

__all__ = ["shift_scores", "shift_invariance", "render_shift_invariance", "encoding_table_markdown",
           "variant_table_markdown", "scaling_cheat_sheet", "scaling_cheat_sheet_markdown"]


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
    ax.text(shifts[0], 1e-12, tr(" rounding level", " 舍入误差量级"), fontsize=8, va="bottom")
    zeros = [name for name, values in data["change"].items() if max(values) == 0.0]
    if zeros:
        ax.text(shifts[0], floor * 4,
                tr(" exactly 0 (overlapping): ", " 恰好为 0（曲线重合）：") + ", ".join(map(encoding_label, zeros)),
                fontsize=8, va="bottom")
    ax.set_xscale("log")
    ax.set_xlabel(tr("shift of the whole sequence (positions)", "整个序列平移的位置数"), fontsize=8)
    ax.set_ylabel(tr("max |scores(shift) - scores(0)|", "max |分数(shift) - 分数(0)|"), fontsize=8)
    ax.set_title(tr("same tokens, moved: which scores notice? (exact 0 drawn at 1e-17)",
                 "同样的 token 整体平移：哪些分数会变？（恰为 0 的画在 1e-17）"), fontsize=9, y=1.0)
    ax.legend(fontsize=8, ncol=3, loc="center right")
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
        lines.append(f"| {encoding_label(r['encoding'])} | {r['acts']} | {r['parameters']} | "
                     + " | ".join(measured) + " |")
    return "\n".join(lines)


def variant_table_markdown(variants: dict, where: dict) -> str:
    """A Markdown table with one row per variant (the keys of `where`, in order): where it is taught
    (`where[variant]`) and the models that use it, from `variants` = {model name: its variant names,
    e.g. configs.ModelPositions.variants()}. "-": no model in `variants` uses it."""
    lines = [tr("| variant | notebook | models among the shipped configs |",
                "| 变体 | notebook | 随附配置中用到它的模型 |"), "|---|---|---|"]
    for variant, notebook in where.items():
        users = [name for name, used in variants.items() if variant in used]
        lines.append(f"| {VARIANT_LABELS.get(variant, variant)} | {notebook} | {', '.join(users) if users else '-'} |")
    return "\n".join(lines)


#: the variant names of configs.ModelPositions.variants() as a learner reads them (Chinese: with a gloss)
VARIANT_LABELS = {
    "learned absolute": Text("learned absolute", "learned absolute（可学习位置嵌入）"),
    "base > 10k": Text("base > 10k", "base > 10k（底数大于 10,000）"),
    "partial rotary": Text("partial rotary", "partial rotary（部分旋转）"),
    "llama3": Text("llama3", "llama3（Llama 3.1 的缩放）"), "yarn": Text("yarn", "yarn（YaRN 缩放）"),
    "linear": Text("linear", "linear（线性位置插值 PI）"),
    "longrope": Text("longrope", "longrope（LongRoPE 逐对因子）"),
    "local/global bases": Text("local/global bases", "local/global bases（局部层/全局层各用一个底数）"),
    "sliding-window layers": Text("sliding-window layers", "sliding-window layers（滑动窗口层）"),
    "NoPE layers": Text("NoPE layers", "NoPE layers（不用位置编码的注意力层）"),
    "linear attention layers": Text("linear attention layers", "linear attention layers（线性注意力层，不是 NoPE）"),
    "chunked layers": Text("chunked layers", "chunked layers（分块注意力层）"),
    "decoupled RoPE": Text("decoupled RoPE", "decoupled RoPE（解耦 RoPE）"),
    "M-RoPE": Text("M-RoPE", "M-RoPE（多模态 RoPE）")}


# ------------------------------------------------------------------------------ the RoPE scalings, one row each
#: each rope_type of posenc_lib.scaling: the method's name and what it does to pair i's frequency theta_i
#: (b the base, d the rotary dim, s the factor, L0 original_max_position_embeddings, lambda_i = 2 pi / theta_i)
SCALING_METHODS = {
    "default": (Text("plain RoPE; ABF raises b", "原始 RoPE；ABF：把底数 b 调大"), "b^(-2i/d)"),
    "linear": (Text("position interpolation (PI)", "位置插值（PI）"), "θ_i / s"),
    "ntk": ("NTK-aware", "(b·s^(d/(d-2)))^(-2i/d)"),
    "dynamic": (Text("dynamic NTK", "动态 NTK"),
                Text("NTK-aware with s' = s·L/L0 - (s-1) at the current length L > L0",
                     "当前长度 L > L0 时按 s' = s·L/L0 - (s-1) 做 NTK-aware")),
    "yarn": ("YaRN", Text("θ_i for pairs with ≥ β_fast turns in L0, θ_i / s for ≤ β_slow, a ramp between",
                          "在 L0 内转 ≥ β_fast 圈的对取 θ_i，≤ β_slow 圈的取 θ_i / s，中间为斜坡")),
    "longrope": ("LongRoPE", Text("θ_i / λ_i: short_factor up to L0, long_factor beyond",
                                  "θ_i / λ_i：L0 以内用 short_factor，超过后用 long_factor")),
    "llama3": ("Llama 3.1",
               Text("θ_i if λ_i < L0/high_freq_factor, θ_i / s if λ_i > L0/low_freq_factor, smooth between",
                    "λ_i < L0/high_freq_factor 时取 θ_i，λ_i > L0/low_freq_factor 时取 θ_i / s，中间平滑过渡")),
    "proportional": (Text("p-RoPE (Gemma 4)", "截去慢频率的 RoPE（p-RoPE，Gemma 4）"),
                     Text("θ_i for the fastest p·d/2 pairs (p = partial_rotary_factor), 0 for the others",
                          "最快的 p·d/2 对取 θ_i（p = partial_rotary_factor），其余为 0")),
}


#: where a config states L0 for a rope_type whose library dict calls it original_max_position_embeddings:
#: transformers' dynamic NTK reads max_position_embeddings and ignores original_max_position_embeddings
CONFIG_KEY_OF_L0 = {"dynamic": "max_position_embeddings"}


def scaling_cheat_sheet(models: dict, *, factor: float = 4.0, dim: int = 128, original_max: int = 4096,
                        examples: dict | None = None) -> list:
    """One row per rope_type of `posenc_lib.scaling.ROPE_SCALINGS`: name, formula, the config keys (the
    registry's), the models among `models` ({name: the rope_types its RoPE layers use}) that use it, and
    two numbers computed with `rope_inv_freq` for a head of `dim` dims, factor `factor`, L0 `original_max`
    (dynamic NTK at the length factor * L0): theta'/theta of the first and the last pair, and the attention
    factor on cos and sin. `examples` {rope_type: (scaling dict, dim)} replaces that setting for a type
    (LongRoPE's factors are a model's own, not a formula)."""
    settings = {"default": None, "linear": {"factor": factor}, "ntk": {"factor": factor},
                "dynamic": {"factor": factor, "original_max_position_embeddings": original_max},
                "yarn": {"factor": factor, "original_max_position_embeddings": original_max},
                "llama3": {"factor": factor, "original_max_position_embeddings": original_max,
                           "low_freq_factor": 1.0, "high_freq_factor": 4.0},
                "proportional": {"partial_rotary_factor": 0.25}}  # Gemma 4's fraction; no length factor
    examples = dict(examples or {})
    rows = []
    for rope_type, record in ROPE_SCALINGS.items():
        name, formula = SCALING_METHODS[rope_type]
        keys = ["rope_theta"] if rope_type == "default" else ["rope_type", *record.required, *record.optional]
        if rope_type in CONFIG_KEY_OF_L0:  # transformers' L0 for dynamic NTK is the config's max_position_embeddings
            keys = [CONFIG_KEY_OF_L0[rope_type] if k == "original_max_position_embeddings" else k for k in keys]
        row = {"rope_type": rope_type, "method": str(name), "formula": str(formula), "keys": keys,
               "models": [model for model, types in models.items() if rope_type in types]}
        if rope_type in examples:
            scaling, head = examples[rope_type]
        elif rope_type in settings:
            scaling = None if settings[rope_type] is None else {"rope_type": rope_type, **settings[rope_type]}
            head = dim
        else:
            rows.append({**row, "first": None, "last": None, "attention_factor": None, "setting": None})
            continue
        length = None if scaling is None else int(scaling.get("factor", 1.0) * scaling.get(
            "original_max_position_embeddings", original_max))
        scaled, attention = rope_inv_freq(head, scaling=scaling, seq_len=length)
        plain = rope_inv_freq(head)[0]
        rows.append({**row, "first": float(scaled[0] / plain[0]), "last": float(scaled[-1] / plain[-1]),
                     "attention_factor": float(attention),
                     "setting": (head, None if scaling is None or "factor" not in scaling
                                 else float(scaling["factor"]))})
    return rows


#: what the config-keys column adds for a rope_type (a Text: shown in the language in force)
KEY_NOTES = {"ntk": Text(" (posenc_lib only: transformers has no static NTK type)",
                         "（仅 posenc_lib 有：transformers 没有静态 NTK 类型）"),
             "dynamic": Text(" (L0, at the config's top level; transformers ignores `original_max_position_embeddings` "
                             "for dynamic NTK)",
                             "（即 L0，在配置顶层；对动态 NTK，transformers 不读 `original_max_position_embeddings`）")}


def scaling_cheat_sheet_markdown(rows: list) -> str:
    """A Markdown table of `scaling_cheat_sheet` rows."""
    lines = [tr("| method | `rope_type` | θ′_i | θ′/θ, first → last pair | factor on cos, sin | config keys | models |",
                "| 方法 | `rope_type` | θ′_i | θ′/θ，第一对 → 最后一对 | cos、sin 上的因子 | 配置键 | 模型 |"),
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["first"] is None:
            numbers, attention = "-", "-"
        else:
            head, s = r["setting"]
            at = tr(", at L = s·L0", "，在 L = s·L0 处") if r["rope_type"] in ("dynamic", "longrope") else ""
            factor = "" if s is None else tr(f", s {s:g}", f"，因子 s {s:g}")
            where = tr(f" (d {head}{factor}{at})", f"（头维度 d {head}{factor}{at}）")
            numbers, attention = f"{r['first']:.3g} → {r['last']:.3g}{where}", f"{r['attention_factor']:.4g}"
        keys = ", ".join(f"`{k}`" for k in r["keys"]) + str(KEY_NOTES.get(r["rope_type"], ""))
        lines.append(f"| {r['method']} | `{r['rope_type']}` | {r['formula']} | {numbers} | {attention} | {keys} | "
                     f"{', '.join(r['models']) if r['models'] else '-'} |")
    return "\n".join(lines)
