"""Notebook 14's section-1 figure (posenc_lib.plots.generators): the scores it draws are generator_scores', and
its diagonal spreads say which action is relative (conftest holds its text to the readable size)."""
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from posenc_lib.generators import generator_scores
from posenc_lib.plots import generators as plots


def test_the_figure_draws_generator_scores_on_the_causal_part():
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    drawn = plots.render_generator_scores(axes, 0.05, 0.3, length=10)
    e1 = torch.tensor([[1.0, 0.0]], dtype=torch.float64).expand(10, 2)
    M = plots.pair_generator(0.05, 0.3)
    for action in ("same", "inverse_transpose"):
        want = generator_scores(e1, e1, M, action=action).numpy()
        causal = np.tri(10, dtype=bool)
        assert np.allclose(drawn[action][causal], want[causal]) and np.isnan(drawn[action][~causal]).all()
    # inverse transpose: exp(decay (n - m)) cos(angle (n - m)) along each diagonal
    assert math.isclose(drawn["inverse_transpose"][7, 3], math.exp(-0.05 * 4) * math.cos(0.3 * 4), rel_tol=1e-12)


def test_only_the_inverse_transpose_action_is_relative_with_a_decay():
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    drawn = plots.render_generator_scores(axes, 0.05, 0.3)
    assert drawn["spread_inverse_transpose"] < 1e-12 and drawn["spread_same"] > 1.0
    assert axes[1].get_title().endswith("diagonal spread < 1e-12") and axes[0].get_title().endswith("spread 9")
    drawn = plots.render_generator_scores(axes, 0.0, 0.3)  # a pure rotation: both relative
    assert drawn["spread_same"] < 1e-12 and drawn["spread_inverse_transpose"] < 1e-12
