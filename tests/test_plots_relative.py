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


def test_shaw_and_alibi_heatmaps_have_colorbars_that_leave_the_panels_in_place():
    for render, args in ((plots.render_shaw_clipping, (3,)), (plots.render_alibi, (8, 0))):
        fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
        render(axes, *args)
        extra = [ax for ax in fig.axes if ax not in axes]
        assert len(extra) == 1 and not extra[0].images and len(extra[0].collections) >= 1  # a colorbar
        assert extra[0].get_position().x0 > axes[0].get_position(original=False).x1  # right of the image
    fig = widgets.alibi_widget()
    before = fig.axes[0].get_position().bounds
    fig.controls["num_heads"].value = 12
    assert len(fig.fig.axes) == 3 and fig.axes[0].get_position().bounds == before  # one colorbar, no shrinking


def test_t5_bucket_axis_is_symlog_with_every_exact_bucket_in_the_linear_part():
    fig, axes = plt.subplots(1, 2)
    result = plots.render_t5_buckets(axes, 32, 128, span=384)
    assert all(ax.get_xscale() == "symlog" for ax in axes) and result["linthresh"] == 16
    r, causal = result["relative"], result["causal"]
    exact = (r <= 0) & (r > -16)  # the causal form's 16 exact buckets: one step per distance, all within |r| <= 16
    np.testing.assert_array_equal(causal[exact], -r[exact])


def test_t5_titles_count_the_buckets_actually_used():
    """Hugging Face's bidirectional buckets never reach bucket num_buckets / 2: r > 0 adds n to a distance >= 1."""
    from transformers.models.t5.modeling_t5 import T5Attention

    fig, axes = plt.subplots(1, 2)
    result = plots.render_t5_buckets(axes, 32, 128, span=384)
    r = torch.as_tensor(result["relative"])
    hf = T5Attention._relative_position_bucket(r, bidirectional=True, num_buckets=32, max_distance=128)
    assert 16 not in set(hf.tolist()) and 16 not in set(result["bidirectional"].tolist())
    assert axes[0].get_title().endswith("31 of 32 buckets used")
    assert axes[1].get_title().endswith("32 of 32 buckets used")


def test_t5_learned_bias_draws_each_heads_bucket_value_at_every_offset():
    """Given tables: bias[panel, h, i] = table[bucket(r_i), h] for the causal buckets, r = 0, -1, ..., -span;
    one step line per head on a symlog axis; past -max_distance every offset shows the last bucket's value."""
    tables = torch.randn(2, 32, 4, generator=torch.Generator().manual_seed(0))
    fig, axes = plt.subplots(1, 2)
    result = plots.render_t5_learned_bias(axes, tables.tolist(), max_distance=64, span=512, titles=["a", "b"])
    r = result["relative"]
    np.testing.assert_array_equal(r, -np.arange(513))
    buckets = t5_relative_bucket(torch.as_tensor(r), bidirectional=False, num_buckets=32, max_distance=64)
    np.testing.assert_array_equal(result["buckets"], buckets.numpy())
    expected = tables.double()[:, buckets, :].permute(0, 2, 1).numpy()  # (panels, heads, offsets)
    np.testing.assert_array_equal(result["bias"], expected)
    assert (result["bias"][:, :, r <= -64] == tables.double().numpy()[:, None, 31, :].transpose(0, 2, 1)).all()
    for ax, title in zip(axes, "ab"):
        assert ax.get_xscale() == "symlog" and ax.get_title() == title and len(ax.get_lines()) >= 4
        np.testing.assert_array_equal(ax.get_lines()[1].get_ydata(), result["bias"][0 if title == "a" else 1, 1])
    with pytest.raises(ValueError, match="tables"):
        plots.render_t5_learned_bias(axes, tables[0], max_distance=64, span=512)
    with pytest.raises(ValueError, match="axes"):
        plots.render_t5_learned_bias(axes[:1], tables, max_distance=64, span=512)
    plt.close(fig)


@pytest.mark.parametrize("num_heads", [8, 12])
def test_alibi_reach_is_the_geometric_tail(num_heads):
    """Equal content scores: weight(d) is proportional to exp(-m d), so the weight beyond distance D is
    exp(-m D) (up to the finite length); 99% of it lies within ln(100) / m."""
    data = plots.alibi_reach(num_heads, 4096)
    m = data["slopes"]
    expected = np.ceil(np.log(100) / m) - 1  # smallest D with 1 - exp(-m (D + 1)) >= 0.99
    np.testing.assert_array_equal(data["reach"], expected)
    for h in range(num_heads):
        D = int(data["reach"][h])
        beyond = 1 - data["cumulative"][h, D - 1]
        tail = (np.exp(-m[h] * D) - np.exp(-m[h] * 4096)) / (1 - np.exp(-m[h] * 4096))  # keys at D .. 4095
        assert beyond == pytest.approx(tail, rel=1e-9)
    with pytest.raises(ValueError, match="mass"):
        plots.alibi_reach(4, mass=1.0)


def test_render_alibi_window_draws_every_head():
    fig, ax = plt.subplots()
    data = plots.render_alibi_window(ax, 8, length=1024)
    assert len(data["reach"]) == 8 and ax.get_xscale() == "log"
    assert len(ax.lines) == 2 * 8 + 1  # a curve and a dot per head, the mass line
