"""Notebook 14, section 3: the flip-flop error rates of every encoding (posenc_lib.experiments.flipflop's cache).

    render_flipflop(axes, results, test)   left: arms x tests, the mean error over seeds in each cell;
                                           right: every seed's error on one test, per arm
"""
from __future__ import annotations

import numpy as np

from ..i18n import Text, get_language, tr
from ..model import encoding_label
from ._style import ENCODING_COLORS, tidy

__all__ = ["TEST_LABELS", "render_flipflop"]

#: what a learner reads for each test of the cache (its name in the results)
TEST_LABELS = {"in_distribution": Text("in distribution", "分布内"), "longer": Text("longer", "更长序列"),
               "sparse": Text("sparse", "稀疏指令"), "dense": Text("dense", "密集指令")}


def _test_label(name: str) -> str:
    return str(TEST_LABELS.get(name, name))


def render_flipflop(axes, results: dict, test: str = "longer") -> dict:
    """Left: a grid arms x tests, each cell the mean error rate (%) over seeds, darker = more errors.
    Right: each seed's error rate (%) on `test`, one row per arm (the grid's rows), the mean as a bar.
    Returns dict(encodings, tests, mean (arms x tests, in %), seeds ({arm: [% per seed]} on `test`))."""
    ax_grid, ax_seeds = axes
    tests = [t[0] for t in results["tests"]]
    if test not in tests:
        raise ValueError(f"test must be one of {tests}, got {test!r}")
    encodings = list(results["summary"])
    mean = np.array([[100 * results["summary"][e][t]["mean"] for t in tests] for e in encodings])
    ax_grid.imshow(mean, cmap="Reds", vmin=0, vmax=max(50.0, float(mean.max())), aspect="auto")
    for i in range(len(encodings)):
        for j in range(len(tests)):
            ax_grid.text(j, i, f"{mean[i, j]:.1f}", ha="center", va="center", fontsize=8,
                         color="white" if mean[i, j] > 30 else "black")
    ax_grid.set_xticks(range(len(tests)), [_test_label(t) for t in tests], fontsize=8)
    ax_grid.set_yticks(range(len(encodings)), [encoding_label(e) for e in encodings], fontsize=8)
    ax_grid.set_title(tr("error on the read bits (%), mean of seeds", "读取位的错误率（%），各种子平均"),
                      fontsize=9)
    seeds = {e: [100 * r["error"][test] for r in results["runs"] if r["method"] == e] for e in encodings}
    rows = np.arange(len(encodings))
    ax_seeds.barh(rows, [np.mean(seeds[e]) for e in encodings],
                  color=[ENCODING_COLORS.get(e, "k") for e in encodings], alpha=0.35)
    for y, e in enumerate(encodings):
        ax_seeds.plot(seeds[e], [y] * len(seeds[e]), "o", color=ENCODING_COLORS.get(e, "k"), ms=4)
    ax_seeds.set_yticks(rows, [])   # the rows of the grid on the left, in the same order
    ax_seeds.invert_yaxis()
    ax_seeds.set_xlabel(tr("error (%)", "错误率（%）"), fontsize=8)
    ax_seeds.set_title(tr(f"each seed on '{_test_label(test)}' (bar = mean; rows as on the left)",
                          f"各种子在“{_test_label(test)}”上的错误率（条 = 平均；行同左图）"), fontsize=9)
    tidy(ax_seeds, axis="x")
    ax_grid.figure.subplots_adjust(left=0.1 if get_language() == "en" else 0.24, right=0.97, wspace=0.1,
                                   bottom=0.14)
    return {"encodings": encodings, "tests": tests, "mean": mean, "seeds": seeds}
