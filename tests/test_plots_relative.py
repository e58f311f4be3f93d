"""Notebook 05's figures (posenc_lib.plots.relative and widgets.relative): Shaw's clipping, T5's buckets
and ALiBi's biases match the library; each slider figure follows its controls."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from posenc_lib import alibi_slopes, t5_relative_bucket
from posenc_lib.plots import relative as plots
from posenc_lib.widgets import relative as widgets


def test_shaw_widget_follows_clipping():
    fig = widgets.shaw_clipping_widget()
    for k in (0, 2, 5):
        fig.controls["max_relative_position"].value = k
        result = fig.last_result
        assert result["distinct"] == 2 * k + 1
        assert result["clipped"].max() == k and result["clipped"].min() == -k
        i, j = 3, 12  # key far after the query: clipped to +k; the sign is key - query
        assert result["clipped"][i, j] == min(j - i, k) and result["clipped"][j, i] == -min(j - i, k)


def test_t5_widget_matches_library_and_follows_sliders():
    fig = widgets.t5_buckets_widget()
    fig.controls["num_buckets"].value = 16
    result = fig.last_result
    r = torch.as_tensor(result["relative"])
    np.testing.assert_array_equal(result["bidirectional"], t5_relative_bucket(r, num_buckets=16).numpy())
    np.testing.assert_array_equal(result["causal"], t5_relative_bucket(r, bidirectional=False, num_buckets=16).numpy())
    assert result["bidirectional"].max() == 15 and (result["causal"][result["relative"] > 0] == 0).all()
    fig.controls["max_distance"].value = 64
    assert not np.array_equal(result["causal"], fig.last_result["causal"])


def test_alibi_widget_head_slider_follows_heads():
    fig = widgets.alibi_widget()
    fig.controls["num_heads"].value = 12
    assert fig.controls["head"].max == 11
    np.testing.assert_allclose(fig.last_result["slopes"], alibi_slopes(12, dtype=torch.float64).numpy())
    fig.controls["head"].value = 11
    assert fig.last_result["bias"][5, 0] == pytest.approx(-5 * fig.last_result["slopes"][11])
    count = fig.redraw_count
    fig.controls["num_heads"].value = 3  # head 11 no longer exists: clamped, never an error
    assert fig.controls["head"].value <= 2 and fig.redraw_count > count
    assert len(fig.last_result["slopes"]) == 3


def test_render_alibi_refuses_a_head_that_does_not_exist():
    with pytest.raises(ValueError, match="head"):
        plots.render_alibi(plt.subplots(1, 2)[1], 4, 4)
