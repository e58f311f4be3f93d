"""Notebook 11's figures (posenc_lib.plots.multidim and widgets.multidim): the numbers each figure draws --
row-major distances, 1-D against 2-D score maps, which pairs and wavelengths M-RoPE gives each axis, the
token grid's ids -- and that the sliders change what they should."""
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from posenc_lib.multidim import MROPE_PRESETS, mrope_position_ids, mrope_token_types
from posenc_lib.plots import multidim as plots
from posenc_lib.widgets import multidim as widgets


def test_flattening_puts_the_patch_below_width_away():
    fig, axes = plt.subplots(1, 2)
    out = plots.render_flattening(axes, 4, 6, 1, 2)
    assert out["index"][2, 2] - out["index"][1, 2] == 6 and out["distance"][2, 2] == 6
    assert out["distance"][1, 3] == 1 and out["distance"][0, 5] == 3   # the end of the row above is "closer"
    assert np.array_equal(out["index"].ravel(), np.arange(24))


def test_axial_score_map_depends_on_the_offset_only_and_1d_does_not():
    a = plots.patch_score_map(9, 9, 2, 3, method="axial")
    b = plots.patch_score_map(12, 12, 5, 4, method="axial")
    np.testing.assert_allclose(a[2:9, 3:9], b[5:12, 4:10], atol=1e-10)            # same (d_row, d_col), same score
    one_d = plots.patch_score_map(9, 9, 4, 4, method="1d")
    # 1-D: the patch below is as far as the patch 9 columns to the right would be, and scores like it
    far = plots.patch_score_map(1, 20, 0, 4, method="1d")
    assert one_d[5, 4] == pytest.approx(far[0, 13], abs=1e-10)
    assert one_d[5, 4] < one_d[4, 5] - 1.0                                         # below < right
    qwen = plots.patch_score_map(7, 7, 3, 3, method="qwen2_vl")
    np.testing.assert_allclose(qwen, qwen.T, atol=1e-10)                            # rows and columns alike
    assert a[2, 3] == pytest.approx(32.0)                                           # distance 0: 2 per pair
    with pytest.raises(ValueError, match="method must be one of"):
        plots.patch_score_map(3, 3, 0, 0, method="2d")


def test_render_patch_scores_draws_both_maps():
    fig, axes = plt.subplots(1, 2)
    out = plots.render_patch_scores(axes, 5, 6, 4, 2)
    np.testing.assert_allclose(out["axial"], plots.patch_score_map(5, 6, 4, 2, method="axial"))
    np.testing.assert_allclose(out["one_d"], plots.patch_score_map(5, 6, 4, 2, method="1d"))
    with pytest.raises(ValueError, match=r"query patch \(row, col\) = \(5, 2\) must lie in the 5 x 6 grid"):
        plots.render_patch_scores(axes, 5, 6, 5, 2)


def test_chunked_sections_starve_width_of_fast_pairs_and_interleaving_does_not():
    qwen2, qwen3 = MROPE_PRESETS["qwen2_vl"], MROPE_PRESETS["qwen3_vl"]
    pairs = qwen2["head_dim"] // 2
    chunks = plots.mrope_section_data(*qwen2["mrope_section"][:2], pairs=pairs, base=qwen2["base"])
    inter = plots.mrope_section_data(*qwen3["mrope_section"][:2], pairs=pairs, base=qwen3["base"], interleaved=True)
    assert chunks["fastest"]["t"] == pytest.approx(2 * math.pi)
    assert chunks["turn"]["w"] == pytest.approx(qwen2["base"] ** (-80 / 128)) and chunks["turn"]["w"] < 2e-4
    assert chunks["turn"]["h"] == pytest.approx(qwen2["base"] ** (-32 / 128))
    assert all(inter["turn"][a] > 0.5 for a in "thw")                                # every axis: a fast pair
    assert all(inter["slowest"][a] > 5e5 for a in "thw")                            # ... and slow ones
    assert chunks["slowest"]["t"] < 200                                             # chunks: t only fast pairs
    assert "cannot be interleaved" in plots.mrope_section_data(16, 24, interleaved=True)["error"]
    assert "no pairs left for w" in plots.mrope_section_data(40, 30)["error"]


def test_render_mrope_positions_draws_the_library_ids():
    segments = [("text", 3), ("image", (1, 4, 6)), ("text", 2), ("video", (2, 4, 4)), ("text", 2)]
    fig, ax = plt.subplots()
    out = plots.render_mrope_positions(ax, segments)
    assert np.array_equal(out["ids"], mrope_position_ids(segments).numpy())
    assert np.array_equal(out["types"], mrope_token_types(segments).numpy())
    assert len(ax.texts) == 4 * out["ids"].shape[1] + len(segments)


def test_patch_widget_follows_its_sliders():
    fig = widgets.patch_scores_widget()
    fig.controls["height"].value = 4
    assert fig.controls["row"].max == 3 and fig.last_result["axial"].shape == (4, 8)
    fig.controls["row"].value = 3
    fig.controls["height"].value = 2                                      # the query row follows the grid
    assert fig.controls["row"].value == 1 and fig.last_result["row"] == 1
    fig.controls["height"].value = 4
    fig.controls["col"].value = 0
    np.testing.assert_allclose(fig.last_result["axial"], plots.patch_score_map(4, 8, 1, 0, method="axial"))


def test_sections_widget_shows_the_split_and_the_interleaving():
    fig = widgets.mrope_sections_widget()
    assert fig.last_result["section"] == (16, 24, 24)
    fig.controls["interleaved"].value = True
    assert "error" in fig.last_result                                    # Qwen2-VL's split cannot be interleaved
    fig.controls["temporal"].value = 24
    fig.controls["height"].value = 20
    assert fig.last_result["section"] == (24, 20, 20) and fig.last_result["axis"][:3].tolist() == [0, 1, 2]
    torch.testing.assert_close(torch.as_tensor(fig.last_result["wavelength"][0]), torch.tensor(2 * math.pi,
                                                                                               dtype=torch.float64))
