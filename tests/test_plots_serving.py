"""Notebook 13's figures (posenc_lib.plots.serving): each draws what it is given and returns it."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from posenc_lib.inference import KVCache, RingBufferCache, context_shift, token_tree
from posenc_lib.plots import serving as plots


def test_context_shift_figure_shows_the_positions_context_shift_gives():
    fig, ax = plt.subplots(figsize=(8, 1.9))
    drawn = plots.render_context_shift(ax, length=10, n_keep=2, n_discard=3)
    cache = KVCache(1)
    k = torch.zeros(1, 1, 10, 4)
    cache.layers[0] = (k, k, torch.arange(10)[None], torch.ones(1, 10, dtype=torch.bool))
    kept = context_shift(cache, 3, n_keep=2).layers[0][2][0].tolist()
    assert [p for p in drawn["after"] if p is not None] == kept
    assert drawn["after"][2:5] == [None, None, None]
    texts = [t.get_text() for t in ax.texts]
    assert texts[:10] == [str(p) for p in range(10)] and texts[10:15] == ["0", "1", "", "", ""]
    with pytest.raises(ValueError, match="n_keep \\+ n_discard <= length"):
        plots.render_context_shift(ax, length=4, n_keep=2, n_discard=3)


def test_ring_buffer_figure_holds_what_the_ring_buffer_holds():
    fig, ax = plt.subplots()
    grid = plots.render_ring_buffer(ax, window=3, tokens=7)["grid"]
    ring = RingBufferCache(1, window=3)
    for t in range(7):
        x = torch.zeros(1, 1, 1, 2)
        ring.update(0, x, x, torch.tensor([t]))
        held = ring.slot_positions()[0].tolist()
        assert grid[t, :len(held)].tolist() == held and (grid[t, len(held):] == -1).all()
    assert grid[0].tolist() == [0, -1, -1] and "W = 3" in ax.get_title()


def test_token_tree_figure_puts_siblings_at_one_position_and_draws_the_mask():
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    drawn = plots.render_token_tree(axes, token_tree(2, 3))
    assert drawn["positions"].tolist() == [0, 1, 1, 2, 2, 2, 2]
    assert drawn["mask"].sum() == 1 + 2 * 2 + 4 * 3                     # each node: itself and its ancestors
    offsets = axes[0].collections[0].get_offsets()
    assert np.array_equal(np.asarray(offsets)[:, 0], drawn["positions"])  # x = position
    assert len(axes[0].lines) == 6                                      # one edge per non-root node


def test_short_prompt_loss_figure_draws_one_line_per_scaling():
    fig, ax = plt.subplots()
    drawn = plots.render_short_prompt_loss(ax, [16, 32, 64], {"none": [2.0, 1.8, 1.7], "yarn": [2.1, 1.9, 1.8]},
                                           trained_length=64)
    assert len(ax.lines) == 3 and drawn["yarn"].tolist() == [2.1, 1.9, 1.8]
