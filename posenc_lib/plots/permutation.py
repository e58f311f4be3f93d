"""Notebook 01: one attention head on "我 爱 北京" and on its permutations (the figures and the small
computation behind them).

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
Convention: a permutation `perm` builds the new sentence tokens[perm[0]], tokens[perm[1]], ...
(x_perm = x[perm]). Figure fonts have no CJK glyphs, so figures label the tokens by their pinyin.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import torch

from ..absolute import SinusoidalEncoding
from ..attention import attention
from ._style import tidy

__all__ = ["TOKENS", "PINYIN", "toy_sentence", "sentence_permutations", "permutation_experiment",
           "render_permutation"]

TOKENS = ("我", "爱", "北京")
PINYIN = {"我": "wǒ", "爱": "ài", "北京": "Běijīng"}


def _label(token: str) -> str:
    return PINYIN.get(token, token)


def toy_sentence(dim: int = 8, *, seed: int = 0, dtype=torch.float64) -> dict:
    """Seeded toy embeddings for "我 爱 北京" (one row per token) and one head's W_q, W_k, W_v (dim, dim)."""
    gen = torch.Generator().manual_seed(seed)
    embeddings = torch.randn(len(TOKENS), dim, generator=gen, dtype=dtype)
    w_q, w_k, w_v = (torch.randn(dim, dim, generator=gen, dtype=dtype) / math.sqrt(dim) for _ in range(3))
    return {"tokens": TOKENS, "embeddings": embeddings, "w_q": w_q, "w_k": w_k, "w_v": w_v}


def sentence_permutations(tokens=TOKENS) -> dict:
    """label -> permutation tuple, for every ordering of the tokens ("爱 北京 我" -> (1, 2, 0))."""
    return {" ".join(tokens[j] for j in perm): perm for perm in itertools.permutations(range(len(tokens)))}


def _one_head(x, setup, *, encoding: str, causal: bool):
    if encoding == "sinusoidal":
        x = SinusoidalEncoding(x.shape[-1])(x)  # adds PE(0), PE(1), ... by position, not by token
    elif encoding != "none":
        raise ValueError(f"encoding must be 'none' or 'sinusoidal', got {encoding!r}")
    q, k, v = x @ setup["w_q"], x @ setup["w_k"], x @ setup["w_v"]
    return attention(q, k, v, causal=causal, return_weights=True)


def permutation_experiment(perm, *, encoding: str = "none", causal: bool = False, setup: dict | None = None) -> dict:
    """Run one attention head on the sentence and on its permutation x[perm].

    Returns the outputs and weights of both, `equivariance_error` = max |out_perm - out[perm]| (zero when
    the outputs permute with the inputs) and `pooled_error` = max |mean(out_perm) - mean(out)| (zero when
    the mean-pooled readout is invariant)."""
    setup = setup or toy_sentence()
    perm = tuple(int(p) for p in perm)
    if sorted(perm) != list(range(len(setup["tokens"]))):
        raise ValueError(f"perm must be a permutation of 0..{len(setup['tokens']) - 1}, got {perm}")
    x = setup["embeddings"]
    index = torch.tensor(perm)
    out, weights = _one_head(x, setup, encoding=encoding, causal=causal)
    out_perm, weights_perm = _one_head(x[index], setup, encoding=encoding, causal=causal)
    return {
        "tokens": setup["tokens"], "tokens_perm": tuple(setup["tokens"][j] for j in perm), "perm": perm,
        "out": out, "out_perm": out_perm, "weights": weights, "weights_perm": weights_perm,
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
    ax.set_xlabel("key", fontsize=8)
    ax.set_ylabel("query", fontsize=8)
    ax.set_title(title, fontsize=9)
    for (i, j), w in np.ndenumerate(weights.double().numpy()):
        ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=7, color="white" if w > 0.6 else "black")


def render_permutation(axes, perm=(1, 2, 0), encoding: str = "none", causal: bool = False, setup: dict | None = None):
    """Three panels: attention weights for the original sentence, for the permuted one, and how far each
    word's output moved (|out_perm - out[perm]|, zero = equivariant) next to the pooled readout's change."""
    result = permutation_experiment(perm, encoding=encoding, causal=causal, setup=setup)
    ax_a, ax_b, ax_c = axes
    _attention_map(ax_a, result["weights"], result["tokens"], "original order")
    _attention_map(ax_b, result["weights_perm"], result["tokens_perm"], "permuted order")
    moved = result["token_errors"].double().numpy()
    labels = [_label(t) for t in result["tokens_perm"]] + ["mean\npool"]
    values = list(moved) + [result["pooled_error"]]
    colors = ["tab:blue"] * len(moved) + ["tab:orange"]
    ax_c.bar(range(len(values)), values, color=colors)
    ax_c.set_xticks(range(len(values)), labels, fontsize=8)
    ax_c.set_ylim(0, max(0.5, 1.15 * max(values)))
    for j, value in enumerate(values):
        ax_c.text(j, value, f"{value:.0e}" if value < 1e-3 else f"{value:.2f}", ha="center", va="bottom", fontsize=7)
    ax_c.set_ylabel("change of the word's output", fontsize=8)
    tidy(ax_c)
    ax_c.figure.subplots_adjust(bottom=0.17, wspace=0.45)
    equivariant = result["equivariance_error"] < 1e-9
    invariant = result["pooled_error"] < 1e-9
    ax_c.set_title(f"equivariant: {'yes' if equivariant else 'NO'}, pooled invariant: {'yes' if invariant else 'NO'}",
                   fontsize=9)
    return result
