"""Notebook 12's figures (posenc_lib.plots.inference): each draws what it is given and returns it."""
import matplotlib.pyplot as plt
import numpy as np
import torch

from posenc_lib.inference import SinkWindowCache, position_ids_from_mask
from posenc_lib.plots import inference as plots
from posenc_lib.widgets import inference as widgets


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


def test_padding_figure_counts_each_row_from_its_first_real_token():
    fig, axes = plt.subplots(1, 2)
    drawn = plots.render_padding(axes, pads_1=2, pads_2=0, pads_3=6)
    mask, ids = drawn["left"]
    assert mask.tolist()[0] == [False, False, True, True, True, True, True]
    assert ids.tolist() == [[0, 0, 0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 0, 0]]
    assert drawn["right"][1].tolist()[0] == [0, 1, 2, 3, 4, 0, 0]          # right padding: pads at the end
    assert drawn["next"] == [5, 7, 1]
    assert [t.get_text() for t in axes[0].texts][:3] == ["pad", "pad", "0"]


def test_padding_figure_refuses_a_row_of_pads_only():
    fig, axes = plt.subplots(1, 2)
    try:
        plots.render_padding(axes, pads_1=7)
    except ValueError as error:
        assert "pad counts" in str(error)
    else:
        raise AssertionError("a row of 7 pads in 7 slots has no real token")


def test_sink_window_rule_is_the_library_caches():
    kept = plots.sink_window_kept(num_sinks=2, window=3, tokens=8)
    assert kept[0] == [0] and kept[4] == [0, 1, 2, 3, 4]                  # nothing evicted up to 2 + 3
    assert kept[5] == [0, 1, 3, 4, 5] and kept[-1] == [0, 1, 5, 6, 7]     # then sinks + the last 3
    cache = SinkWindowCache(num_layers=1, num_sinks=2, window=3)
    for t in range(8):
        cache.update(0, torch.randn(1, 1, 1, 4), torch.randn(1, 1, 1, 4), torch.tensor([[t]]))
    assert cache.text_positions()[0].tolist() == kept[-1]


def test_sink_window_figure_draws_the_steps_it_is_given():
    fig, ax = plt.subplots()
    drawn = plots.render_sink_window(ax, num_sinks=4, window=8, tokens=32)
    assert drawn["kept_per_step"][-1] == [0, 1, 2, 3] + list(range(24, 32))
    assert drawn["positions"] == list(range(12)) and drawn["grid"].shape == (32, 32)
    assert drawn["grid"][31].tolist()[:5] == [2.0, 2.0, 2.0, 2.0, 0.0]   # sinks red, then evicted
    assert "12 kept" in ax.get_title()
    no_sinks = plots.render_sink_window(ax, num_sinks=0, window=3, tokens=5)
    assert no_sinks["kept_per_step"][-1] == [2, 3, 4] and (no_sinks["grid"] < 2).all()


def test_widgets_start_at_the_notebooks_static_settings():
    # notebook 12 draws render_padding(axes, pads_1=0, pads_2=3, pads_3=5) and
    # render_sink_window(ax, num_sinks=4, window=8, tokens=32)
    assert widgets.padding_widget().values == {"pads_1": 0, "pads_2": 3, "pads_3": 5}
    assert widgets.sink_window_widget().values == {"num_sinks": 4, "window": 8, "tokens": 32}
