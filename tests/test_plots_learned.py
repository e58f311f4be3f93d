"""Notebook 04's figures (posenc_lib.plots.learned and widgets.learned): the similarity of a position
table's rows, its training snapshots, accuracy by position; the snapshot slider follows its step."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from posenc_lib import sinusoidal_table
from posenc_lib.experiments.learned import load_learned_snapshots, position_similarity
from posenc_lib.plots import learned as plots
from posenc_lib.widgets import learned as widgets


@pytest.fixture(scope="module")
def snapshots():
    return load_learned_snapshots()


def test_sinusoidal_similarity_is_the_cosine_of_the_tables_rows():
    table = sinusoidal_table(12, 8, dtype=torch.float64)
    unit = table / table.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(plots.sinusoidal_similarity(12, 8), unit @ unit.T)


def test_similarity_pair_and_accuracy_draw_what_they_are_given():
    fig, axes = plt.subplots(1, 2)
    learned = position_similarity(torch.randn(8, 8, generator=torch.Generator().manual_seed(0)))
    sinusoidal = plots.sinusoidal_similarity(8, 8)
    out = plots.render_similarity_pair(axes, learned, sinusoidal)
    np.testing.assert_allclose(out["learned"], learned.numpy(), rtol=1e-6)
    np.testing.assert_allclose(axes[1].images[0].get_array(), sinusoidal.numpy())
    fig, ax = plt.subplots()
    accuracy = torch.linspace(0, 1, 10)
    np.testing.assert_allclose(plots.render_position_accuracy(ax, accuracy, trained_len=5), accuracy.numpy())
    assert ax.lines[-1].get_xdata()[0] == 4.5  # the trained length, between positions 4 and 5


def test_render_learned_snapshot_rejects_unrecorded_step(snapshots):
    fig, axes = plt.subplots(1, 2)
    with pytest.raises(ValueError, match="recorded steps"):
        plots.render_learned_snapshot(axes, 7, snapshots=snapshots)


def test_learned_snapshot_widget_follows_step(snapshots):
    fig = widgets.learned_snapshot_widget()
    assert fig.controls["step"].value == snapshots["steps"][-1]
    fig.controls["step"].value = 0
    first = fig.last_result
    assert first["step"] == 0 and fig.axes[0].get_title().startswith("step 0")
    np.testing.assert_allclose(first["similarity"], position_similarity(snapshots["tables"][0]).numpy())
    fig.controls["step"].value = 120
    later = fig.last_result
    assert not np.allclose(first["similarity"], later["similarity"])
    assert later["loss"] == pytest.approx(snapshots["losses"][120])
