"""Notebook 14, section 1: one generator M = [[decay, -angle], [angle, decay]] on one pair of dims, its scores
over (query position m, key position n) under the same action and under the inverse-transpose action
(posenc_lib.generators). A score that depends on n - m only is constant along every diagonal.

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
"""
from __future__ import annotations

import numpy as np
import torch

from ..generators import generator_scores
from ..i18n import tr
from ..printing import below
from ..relative import diagonal_spread
from ._style import side_colorbar, tidy, two_panels

__all__ = ["pair_generator", "render_generator_scores"]


def pair_generator(decay: float, angle: float) -> torch.Tensor:
    """The (2, 2) float64 generator decay * I + angle * [[0, -1], [1, 0]]: exp(t M) turns the pair
    counter-clockwise by t * angle and scales it by exp(t * decay)."""
    return torch.tensor([[decay, -angle], [angle, decay]], dtype=torch.float64)


def render_generator_scores(axes, decay: float = 0.05, angle: float = 0.3, *, length: int = 24):
    """Left: scores of q = k = (1, 0) under the same action; right: under the inverse-transpose action, for
    M = pair_generator(decay, angle), queries m (rows) and keys n <= m (columns; the future masked).
    Each panel's title gives its diagonal spread (relative.diagonal_spread over the causal part: 0 when the score
    is a function of n - m). Returns dict(same, inverse_transpose: (length, length) numpy with NaN above the
    diagonal, spread_same, spread_inverse_transpose: floats)."""
    M = pair_generator(decay, angle)
    e1 = torch.tensor([[1.0, 0.0]], dtype=torch.float64).expand(length, 2)
    causal = np.tri(length, dtype=bool)
    out = {}
    two_panels(axes)
    titles = {"same": tr("same action: exp(mM)q · exp(nM)k", "同一作用：exp(mM)q · exp(nM)k"),
              "inverse_transpose": tr("inverse transpose: exp(-mMᵀ)q · exp(nM)k",
                                      "逆转置作用：exp(-mMᵀ)q · exp(nM)k")}
    for ax, action in zip(axes, ("same", "inverse_transpose")):
        scores = generator_scores(e1, e1, M, action=action)  # (length, length) float64
        spread = diagonal_spread(scores.tril())  # above the diagonal all zeros: only the causal part counts
        shown = np.where(causal, scores.numpy(), np.nan)
        limit = max(float(np.nanmax(np.abs(shown))), 1e-12)
        image = ax.imshow(shown, cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
        ax.set_xlabel(tr("key position n", "键位置 n"), fontsize=8)
        ax.set_ylabel(tr("query position m", "查询位置 m"), fontsize=8)
        shown_spread = below(spread, 1e-12) if spread < 1e-9 else f"{spread:.2g}"  # float noise as a bound
        ax.set_title(titles[action] + "\n" + tr(f"diagonal spread {shown_spread}", f"对角线极差 {shown_spread}"),
                     fontsize=9)
        tidy(ax)
        side_colorbar(ax, image)
        out[action] = shown
        out[f"spread_{action}"] = spread
    return out
