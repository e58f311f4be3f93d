"""Notebook 01: one attention head (or a stack of two) on "我 爱 北京" and on its permutations (the
figures and the small computation behind them).

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
Convention: a permutation `perm` builds the new sentence tokens[perm[0]], tokens[perm[1]], ...
(x_perm = x[perm]). The English figures label the tokens by their pinyin (readable without Chinese);
the Chinese edition's show the characters (plots._style sets up a CJK font).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import torch

from .. import _checks
from ..absolute import SinusoidalEncoding
from ..attention import attention
from ..i18n import get_language, tr
from ._style import tidy

__all__ = ["TOKENS", "PINYIN", "toy_sentence", "sentence_permutations", "permutation_experiment",
           "render_permutation", "render_causal_layers"]

TOKENS = ("我", "爱", "北京")
PINYIN = {"我": "wǒ", "爱": "ài", "北京": "Běijīng"}


def _label(token: str) -> str:
    return token if get_language() == "zh" else PINYIN.get(token, token)


def toy_sentence(dim: int = 8, *, seed: int = 0, num_layers: int = 2, dtype=torch.float64) -> dict:
    """Seeded toy embeddings for "我 爱 北京" (one row per token) and the W_q, W_k, W_v (dim, dim) of
    `num_layers` stacked attention heads: "layers" holds one (w_q, w_k, w_v) per layer, and "w_q", "w_k",
    "w_v" are the first layer's (the same for every num_layers: later layers are drawn after it)."""
    _checks.positive_int("dim", dim)
    _checks.positive_int("num_layers", num_layers)
    gen = torch.Generator().manual_seed(seed)
    embeddings = torch.randn(len(TOKENS), dim, generator=gen, dtype=dtype)
    layers = tuple(tuple(torch.randn(dim, dim, generator=gen, dtype=dtype) / math.sqrt(dim) for _ in range(3))
                   for _ in range(num_layers))
    w_q, w_k, w_v = layers[0]
    return {"tokens": TOKENS, "embeddings": embeddings, "w_q": w_q, "w_k": w_k, "w_v": w_v, "layers": layers}


def sentence_permutations(tokens=TOKENS) -> dict:
    """label -> permutation tuple, for every ordering of the tokens ("爱 北京 我" -> (1, 2, 0))."""
    return {" ".join(tokens[j] for j in perm): perm for perm in itertools.permutations(range(len(tokens)))}


def _attention_stack(x, setup, *, encoding: str, causal: bool, layers: int):
    """`layers` attention heads one after the other (no residual, no FFN: the smallest stack); returns the
    last layer's output and weights."""
    if encoding == "sinusoidal":
        x = SinusoidalEncoding(x.shape[-1])(x)  # adds PE(0), PE(1), ... by position, not by token
    elif encoding != "none":
        raise ValueError(f"encoding must be 'none' or 'sinusoidal', got {encoding!r}")
    for w_q, w_k, w_v in setup["layers"][:layers]:
        x, weights = attention(x @ w_q, x @ w_k, x @ w_v, causal=causal, return_weights=True)
    return x, weights


def permutation_experiment(perm, *, encoding: str = "none", causal: bool = False, layers: int = 1,
                           setup: dict | None = None) -> dict:
    """Run `layers` stacked attention heads (1 or up to the setup's number) on the sentence and on its
    permutation x[perm].

    Returns the outputs and (last layer's) weights of both, `equivariance_error` = max |out_perm - out[perm]|
    (zero when the outputs permute with the inputs), `pooled_error` = max |mean(out_perm) - mean(out)| (zero
    when the mean-pooled readout is invariant) and `token_errors`, |out_perm - out[perm]| per word, in the
    order of the permuted sentence."""
    setup = setup or toy_sentence()
    _checks.boolean("causal", causal)
    layers = _checks.positive_int("layers", layers)
    if layers > len(setup["layers"]):
        raise ValueError(f"layers must be at most {len(setup['layers'])} (the layers in setup), got {layers}")
    perm = tuple(int(p) for p in perm)
    if sorted(perm) != list(range(len(setup["tokens"]))):
        raise ValueError(f"perm must be a permutation of 0..{len(setup['tokens']) - 1}, got {perm}")
    x = setup["embeddings"]
    index = torch.tensor(perm)
    out, weights = _attention_stack(x, setup, encoding=encoding, causal=causal, layers=layers)
    out_perm, weights_perm = _attention_stack(x[index], setup, encoding=encoding, causal=causal, layers=layers)
    return {
        "tokens": setup["tokens"], "tokens_perm": tuple(setup["tokens"][j] for j in perm), "perm": perm,
        "layers": layers, "out": out, "out_perm": out_perm, "weights": weights, "weights_perm": weights_perm,
        "equivariance_error": float((out_perm - out[index]).abs().max()),
        "weights_error": float((weights_perm - weights[index][:, index]).abs().max()),
        "pooled_error": float((out_perm.mean(0) - out.mean(0)).abs().max()),
        "token_errors": (out_perm - out[index]).norm(dim=-1),  # per position of the permuted sentence
    }


def _attention_map(ax, weights, tokens, title):
    labels = [_label(t) for t in tokens]
    ax.imshow(weights.double().numpy(), cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlabel(tr("key", "键"), fontsize=8)
    ax.set_ylabel(tr("query", "查询"), fontsize=8)
    ax.set_title(title, fontsize=9)
    for (i, j), w in np.ndenumerate(weights.double().numpy()):
        ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=8, color="white" if w > 0.6 else "black")


def render_permutation(axes, perm=(1, 2, 0), encoding: str = "none", causal: bool = False, layers: int = 1,
                       setup: dict | None = None):
    """Three panels: attention weights for the original sentence, for the permuted one (of the last layer
    when `layers` > 1), and how far each word's output moved (|out_perm - out[perm]|, zero = equivariant)
    next to the pooled readout's change."""
    result = permutation_experiment(perm, encoding=encoding, causal=causal, layers=layers, setup=setup)
    ax_a, ax_b, ax_c = axes
    which = tr(f", layer {layers}", f"，第 {layers} 层") if layers > 1 else ""
    _attention_map(ax_a, result["weights"], result["tokens"], tr(f"original order{which}", f"原始语序{which}"))
    _attention_map(ax_b, result["weights_perm"], result["tokens_perm"],
                   tr(f"permuted order{which}", f"打乱后的语序{which}"))
    moved = result["token_errors"].double().numpy()
    labels = [_label(t) for t in result["tokens_perm"]] + [tr("mean\npool", "均值\n池化")]
    values = list(moved) + [result["pooled_error"]]
    colors = ["tab:blue"] * len(moved) + ["tab:orange"]
    ax_c.bar(range(len(values)), values, color=colors)
    ax_c.set_xticks(range(len(values)), labels, fontsize=8)
    ax_c.set_ylim(0, max(0.5, 1.15 * max(values)))
    for j, value in enumerate(values):
        ax_c.text(j, value, f"{value:.0e}" if value < 1e-3 else f"{value:.2f}", ha="center", va="bottom", fontsize=8)
    ax_c.set_ylabel(tr("change of the word's output", "该词输出的变化"), fontsize=8)
    tidy(ax_c)
    ax_c.figure.subplots_adjust(bottom=0.17, wspace=0.45)
    equivariant = result["equivariance_error"] < 1e-9
    invariant = result["pooled_error"] < 1e-9
    yes, no = tr("yes", "是"), tr("NO", "否")
    ax_c.set_title(tr(f"equivariant: {yes if equivariant else no}, pooled invariant: {yes if invariant else no}",
                      f"置换等变：{yes if equivariant else no}，池化后不变：{yes if invariant else no}"), fontsize=9)
    return result


def render_causal_layers(ax, perm=(1, 0, 2), *, encoding: str = "none", setup: dict | None = None):
    """Under a causal mask: how far each word's output moves (|out_perm - out[perm]|) when the sentence is
    reordered by `perm`, after one attention head and after two stacked ones, side by side per word.
    Returns {"one_layer": token_errors, "two_layers": token_errors} in the permuted sentence's order."""
    one = permutation_experiment(perm, encoding=encoding, causal=True, layers=1, setup=setup)
    two = permutation_experiment(perm, encoding=encoding, causal=True, layers=2, setup=setup)
    width = 0.38
    for shift, result, color, label in ((-width / 2, one, "tab:blue", tr("1 causal layer", "1 层因果注意力")),
                                        (width / 2, two, "tab:red", tr("2 causal layers", "2 层因果注意力"))):
        values = result["token_errors"].double().numpy()
        ax.bar(np.arange(len(values)) + shift, values, width, color=color, label=label)
        for j, value in enumerate(values):
            ax.text(j + shift, value, f"{value:.0e}" if value < 1e-3 else f"{value:.2f}", ha="center", va="bottom",
                    fontsize=8)
    labels = [tr(f"{_label(t)}\n(pos {i})", f"{_label(t)}\n（位置 {i}）") for i, t in enumerate(one["tokens_perm"])]
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    top = float(max(one["token_errors"].max(), two["token_errors"].max()))
    ax.set_ylim(0, max(0.5, 1.2 * top))
    ax.set_ylabel(tr("change of the word's output", "该词输出的变化"), fontsize=8)
    sentence = " ".join(_label(t) for t in one["tokens_perm"])
    name = tr("no encoding", "无位置编码") if encoding == "none" else encoding
    ax.set_title(tr(f"causal mask, {name}: '{sentence}' vs the original", f"因果掩码，{name}：“{sentence}”对比原句"),
                 fontsize=9)
    ax.legend(fontsize=8, loc="upper right", frameon=False)
    tidy(ax)
    ax.figure.subplots_adjust(bottom=0.2)
    return {"one_layer": one["token_errors"], "two_layers": two["token_errors"]}
