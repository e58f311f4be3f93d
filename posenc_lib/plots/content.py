"""Figures of notebook 14, section 2 (positions that depend on the content): CoPE's positions p_ij for a text
whose gate opens on full stops, the Forgetting Transformer's decay matrix for gates that forget at one token,
and how PaTH's maps H_t carry a key in the plane. Pure render(ax, ...) functions: each computes with
posenc_lib.content, draws, and returns what it drew."""
from __future__ import annotations

import math

import numpy as np
import torch

from ..attention import ScoreInputs
from ..content import CoPE, ForgettingGate, householder_product
from ..i18n import tr

__all__ = ["COPE_TEXT", "cope_sentence_gates", "render_cope_positions", "FORGET_GATES", "forget_bias",
           "render_forget_decay", "PATH_ANGLES", "path_key_steps", "render_path_key"]

COPE_TEXT = "I ran. We hid. Go on."


def cope_sentence_gates(text: str = COPE_TEXT, threshold: float = 0.5, sharpness: float = 12.0):
    """One CoPE head (head_dim 2) whose gate reads only whether key j is a full stop: k_j = (stop_j, 1),
    q_i = sqrt(2) * sharpness * (1, -threshold), so q_i . k_j / sqrt(2) = sharpness * (stop_j - threshold).
    threshold below 0: every gate open (p counts tokens); between 0 and 1: only full stops (p counts
    sentence ends); above 1: every gate shut. Returns q, k of shape (1, 1, T, 2), float64."""
    stop = torch.tensor([float(c == ".") for c in text], dtype=torch.float64)
    k = torch.stack((stop, torch.ones_like(stop)), -1)[None, None]                       # (1, 1, T, 2)
    q = math.sqrt(2) * sharpness * torch.tensor([1.0, -threshold], dtype=torch.float64)
    return q.expand(len(text), 2)[None, None], k


def render_cope_positions(axes, text: str = COPE_TEXT, threshold: float = 0.5, sharpness: float = 12.0) -> dict:
    """Left: p_ij (queries down, keys across; keys after the query blank) from `CoPE.positions` for the head of
    `cope_sentence_gates`; right: the last query's row, p against the token distance i - j + 1 that a fixed
    relative encoding would use. Returns dict(positions (T, T) with NaN after the query, last_row, distance)."""
    q, k = cope_sentence_gates(text, threshold, sharpness)
    T = len(text)
    p = CoPE(2, npos=T + 1).positions(q, k)[0, 0].numpy()                                # (T, T)
    shown = np.where(np.tri(T, dtype=bool), p, np.nan)
    labels = [c if c != " " else "␣" for c in text]
    left, right = axes
    left.imshow(shown, cmap="viridis", vmin=0, vmax=max(float(np.nanmax(shown)), 1.0))   # dark: near, bright: far
    left.set_xticks(range(T), labels, fontsize=8)
    left.set_yticks(range(T), labels, fontsize=8)
    left.set_xlabel(tr("key j", "键 j"), fontsize=8)
    left.set_ylabel(tr("query i", "查询 i"), fontsize=8)
    left.set_title(tr(f"CoPE positions p_ij (gate threshold {threshold:g})", f"CoPE 位置 p_ij（门阈值 {threshold:g}）"),
                   fontsize=9)
    last, distance = p[-1], np.arange(T, 0, -1, dtype=float)                              # i - j + 1 for i = T-1
    right.plot(range(T), distance, color="#bbbbbb", lw=3,
               label=tr("tokens i - j + 1 (fixed)", "token 数 i - j + 1（固定）"))
    right.plot(range(T), last, color="#1f77b4", marker="o", ms=3, lw=1.4, label="CoPE p_ij")
    right.set_xticks(range(T), labels, fontsize=8)
    right.set_xlabel(tr(f"key j (query: the last token, {text[-1]!r})", f"键 j（查询：最后一个 token {text[-1]!r}）"),
                     fontsize=8)
    right.set_ylabel(tr("position of key j seen from the query", "从查询看键 j 的位置"), fontsize=8)
    right.tick_params(axis="y", labelsize=8)
    right.legend(fontsize=8, frameon=False)
    axes[0].figure.subplots_adjust(wspace=0.35, bottom=0.18)
    return {"positions": shown, "last_row": last, "distance": distance}


FORGET_GATES = tuple(0.02 if t == 7 else 0.9 for t in range(14))  # forget nearly all at token 7


def forget_bias(gates) -> torch.Tensor:
    """(T, T) bias sum_{l=j+1..i} log f_l of `ForgettingGate.edit_scores` for gates f_t given per token (one head),
    added to zero scores: float64."""
    f = torch.as_tensor(gates, dtype=torch.float64)
    T = f.numel()
    state = {"log_forget": f.log()[None, None, :, None]}                                 # (1, 1, T, 1)
    zeros, pos = torch.zeros(1, 1, T, 1, dtype=torch.float64), torch.arange(T)
    inputs = ScoreInputs(zeros, zeros, pos, pos, torch.zeros(1, T, 1, dtype=torch.float64), state)
    return ForgettingGate(1, 1).double().edit_scores(torch.zeros(1, 1, T, T, dtype=torch.float64), inputs)[0, 0]


def render_forget_decay(ax, gates=FORGET_GATES) -> dict:
    """The factor exp(sum_{l=j+1..i} log f_l) = f_{j+1} ... f_i by which FoX's gate multiplies exp(score_ij)
    (queries down, keys across, keys after the query blank), for the per-token gates f_t given.
    Returns dict(decay (T, T) with NaN after the query, bias)."""
    bias = forget_bias(gates).numpy()
    T = bias.shape[0]
    decay = np.where(np.tri(T, dtype=bool), np.exp(bias), np.nan)
    image = ax.imshow(decay, cmap="magma", vmin=0, vmax=1)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.03).ax.tick_params(labelsize=8)
    low = [t for t, f in enumerate(gates) if f < 0.5]
    ax.set_xticks(range(T), [f"{t}" + ("*" if t in low else "") for t in range(T)], fontsize=8)
    ax.set_yticks(range(T), [str(t) for t in range(T)], fontsize=8)
    ax.set_xlabel(tr("key j (* : a token whose gate f_t < 0.5)", "键 j（*：门 f_t < 0.5 的 token）"), fontsize=8)
    ax.set_ylabel(tr("query i", "查询 i"), fontsize=8)
    ax.set_title(tr("FoX: f_{j+1} ... f_i, the weight left to key j", "FoX：f_{j+1} ... f_i，留给键 j 的权重"),
                 fontsize=9)
    return {"decay": decay, "bias": bias}


PATH_ANGLES = (0.3, 1.2, 2.0, 0.7, 2.6, 1.6)  # the direction of w_t in the plane, one per token


def path_key_steps(angles=PATH_ANGLES, beta: float = 2.0, key=(1.0, 0.3)) -> np.ndarray:
    """Key k after H_1, then H_2 H_1, ... (H_t = I - beta w_t w_t^T, w_t = (cos a_t, sin a_t)), each product
    from `householder_product` (the UT form): (len(angles) + 1, 2), the key itself first."""
    a = torch.as_tensor(angles, dtype=torch.float64)
    w = torch.stack((a.cos(), a.sin()), -1)                                               # (L, 2) unit rows
    b = torch.full((len(a),), float(beta), dtype=torch.float64)
    k = torch.as_tensor(key, dtype=torch.float64)
    steps = [k] + [householder_product(w[:t], b[:t]) @ k for t in range(1, len(a) + 1)]
    return torch.stack(steps).numpy()


def render_path_key(ax, angles=PATH_ANGLES, betas=(2.0, 0.5), key=(1.0, 0.3)) -> dict:
    """One key carried by PaTH's maps token after token, in the plane, for each beta: beta = 2 reflects it
    across the line orthogonal to w_t (its length stays: on the circle), beta = 0.5 halves its component along
    w_t (it shrinks; beta = 1 would erase that component).
    Returns dict(beta -> (L + 1, 2) points)."""
    circle = np.linspace(0, 2 * np.pi, 200)
    radius = float(np.hypot(*key))
    ax.plot(radius * np.cos(circle), radius * np.sin(circle), color="#dddddd", lw=1)
    drawn = {}
    for beta, color in zip(betas, ("#1f77b4", "#d62728", "#2ca02c")):
        points = path_key_steps(angles, beta, key)
        ax.plot(points[:, 0], points[:, 1], color=color, marker="o", ms=4, lw=1.2,
                label=f"beta = {beta:g}")
        for t, (x, y) in enumerate(points):
            ax.annotate(str(t), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8, color=color)
        drawn[beta] = points
    ax.set_aspect("equal")
    ax.set_xlim(-1.3 * radius, 1.3 * radius)
    ax.set_ylim(-1.3 * radius, 1.3 * radius)
    ax.tick_params(labelsize=8)
    ax.set_title(tr("PaTH: a key after the maps of tokens 1..t (t written beside it)",
                    "PaTH：键经过 token 1..t 的变换之后（旁边写的是 t）"), fontsize=9)
    ax.legend(fontsize=8, frameon=False, loc="lower left")
    return drawn
