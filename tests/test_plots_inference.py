"""Notebook 12's figures (posenc_lib.plots.inference): each draws what it is given and returns it."""
import matplotlib.pyplot as plt
import numpy as np
import torch

from posenc_lib.inference import position_ids_from_mask
from posenc_lib.plots import inference as plots


def test_position_ids_figure_writes_each_real_position_and_marks_the_pads():
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    fig, ax = plt.subplots()
    drawn = plots.render_position_ids(ax, mask, position_ids_from_mask(mask), "left")
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["pad", "pad", "0", "1", "0", "1", "2", "3"]
    assert drawn["position_ids"].tolist() == [[0, 0, 0, 1], [0, 1, 2, 3]]


def test_streaming_figure_colours_sinks_window_and_evicted():
    kept = [[0], [0, 1], [0, 1, 2], [0, 2, 3]]                      # 1 sink, window 2
    fig, ax = plt.subplots()
    grid = plots.render_streaming_cache(ax, kept, num_sinks=1)["grid"]
    assert grid[3].tolist() == [2.0, 0.0, 1.0, 1.0] and grid[0].tolist() == [2.0, 0.0, 0.0, 0.0]


def test_drift_figure_floors_exact_zeros_for_the_log_scale():
    fig, ax = plt.subplots()
    drawn = plots.render_cache_drift(ax, range(1, 4), {"a": [0.0, 1e-3, 2e-3]}, switch=2)
    np.testing.assert_array_equal(drawn["a"], [1e-9, 1e-3, 2e-3])
    assert len(ax.lines) == 2  # the curve and the L0 line


def test_query_scores_figure_draws_one_line_per_way():
    fig, ax = plt.subplots()
    drawn = plots.render_query_scores(ax, range(3), {"one pass": [1, 2, 3], "cache": [1, 2, 3], "wrong": [0, 0, 1]}, 3)
    assert len(ax.lines) == 3 and drawn["wrong"].tolist() == [0, 0, 1]
    assert "m = 3" in ax.get_xlabel()
