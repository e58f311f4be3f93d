"""Notebook 14 section 2's figures (posenc_lib.plots.content) and its slider (posenc_lib.widgets.content): each
draws what the library computes and returns it."""
import matplotlib.pyplot as plt
import numpy as np
import pytest

from posenc_lib.plots import content as plots
from posenc_lib.widgets import content as widgets


@pytest.mark.parametrize("threshold, counts", [(-0.5, "tokens"), (0.5, "full stops"), (1.5, "nothing")])
def test_cope_figure_counts_what_the_threshold_selects(threshold, counts):
    fig, axes = plt.subplots(1, 2)
    drawn = plots.render_cope_positions(axes, threshold=threshold, sharpness=40.0)
    last = drawn["last_row"]
    text = plots.COPE_TEXT
    stops_from = np.array([text[j:].count(".") for j in range(len(text))], dtype=float)
    want = {"tokens": drawn["distance"], "full stops": stops_from, "nothing": np.zeros(len(text))}[counts]
    np.testing.assert_allclose(last, want, atol=1e-6)
    assert np.isnan(drawn["positions"][0, 1]) and not np.isnan(drawn["positions"][1, 0])


def test_forget_figure_cuts_every_key_before_the_forgetting_token():
    fig, ax = plt.subplots()
    decay = plots.render_forget_decay(ax)["decay"]
    # query 10 sees key 6 through f_7 ... f_10 = 0.02 * 0.9^3, key 7 through 0.9^3: the gate of token 7 hides 6
    np.testing.assert_allclose(decay[10, 6], 0.02 * 0.9 ** 3, rtol=1e-12)
    np.testing.assert_allclose(decay[10, 7], 0.9 ** 3, rtol=1e-12)
    np.testing.assert_allclose(np.diag(decay), 1.0)
    assert decay[6, 3] > 0.5  # queries before token 7 are not affected


def test_path_figure_reflections_keep_the_length_and_smaller_betas_shrink_it():
    fig, ax = plt.subplots()
    drawn = plots.render_path_key(ax)
    reflected, projected = (np.hypot(*drawn[b].T) for b in (2.0, 0.5))
    np.testing.assert_allclose(reflected, reflected[0], rtol=1e-12)
    assert np.all(np.diff(projected) <= 1e-12) and projected[-1] < 0.5 * projected[0]


def test_cope_slider_starts_at_the_static_settings_and_redraws():
    w = widgets.cope_threshold_widget()
    assert w.controls["threshold"].value == 0.5 and w.controls["sharpness"].value == 12.0
    count = w.redraw_count
    w.controls["threshold"].value = -0.5
    assert w.redraw_count == count + 1
