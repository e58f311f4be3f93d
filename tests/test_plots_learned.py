"""Notebook 04's figures (posenc_lib.plots.learned and widgets.learned): the similarity of a position
table's rows, its training snapshots, accuracy by position; the snapshot slider follows its step."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from posenc_lib import sinusoidal_table
from posenc_lib.absolute import position_similarity
from posenc_lib.experiments.learned import load_learned_snapshots
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


# ---------------------------------------------------------------- notebook 04, sections 4 and 7 (issue 13)
# (render_attention_logits and the helpers of posenc_lib.experiments.learned it is drawn from)
from posenc_lib import TinyLM  # noqa: E402
from posenc_lib.experiments import learned as ld  # noqa: E402


@pytest.mark.parametrize("encoding", ["learned", "sinusoidal", "t5", "rope", "alibi"])
def test_attention_logits_are_what_the_layers_softmax_sees(encoding):
    torch.manual_seed(0)
    model = TinyLM(11, encoding=encoding, d_model=16, num_heads=2, num_layers=2, max_len=12)
    tokens = torch.randint(0, 11, (3, 12))
    model(tokens)
    assert all(block.attn.last_weights is None for block in model.blocks)  # kept only when asked
    for block in model.blocks:
        block.attn.keep_weights = True
    model(tokens)
    mask = torch.ones(12, 12, dtype=torch.bool).tril()
    for layer in (0, 1):
        weights = ld.attention_logits(model, tokens, layer=layer).masked_fill(~mask, float("-inf")).softmax(-1)
        torch.testing.assert_close(weights, model.blocks[layer].attn.last_weights, atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="layer"):
        ld.attention_logits(model, tokens, layer=2)


def test_render_attention_logits_finds_each_rows_largest_logit():
    T = 6
    logits = torch.zeros(2, T, T)
    logits[0, torch.arange(1, T), torch.arange(T - 1)] = 3.0  # head 0: every row's max one step back
    logits[1] = torch.arange(T, dtype=torch.float32)          # head 1: the largest visible key is the query itself
    fig, axes = plt.subplots(1, 2)
    out = plots.render_attention_logits(axes, logits)
    assert out["hits"].tolist() == [T - 1, 0]
    assert out["argmax"][1].tolist() == list(range(T))
    shown = np.ma.filled(axes[0].images[0].get_array().astype(float), np.nan)
    assert np.isnan(shown[0, 1]) and np.nanmax(shown) == 0  # the future blank, each row relative to its max
    with pytest.raises(ValueError, match="one axes per head"):
        plots.render_attention_logits(axes[:1], logits)


def test_extend_by_copying_repeats_the_rows_like_longformer():
    table = torch.randn(5, 3)
    before = table.clone()
    longer = ld.extend_by_copying(table, 12)
    assert longer.shape == (12, 3) and torch.equal(table, before)
    # Longformer's conversion script: fill [k, k + n) with the n trained rows, k = 0, n, 2n, ...
    # (no RoBERTa offset here)
    expected = torch.empty(12, 3)
    k = 0
    while k < 12:
        expected[k:k + 5] = table[:min(5, 12 - k)]
        k += 5
    assert torch.equal(longer, expected)
    with pytest.raises(ValueError, match="new_len"):
        ld.extend_by_copying(table, 0)


@pytest.mark.parametrize("grid,new_grid", [((4, 4), (6, 6)), ((3, 3), (5, 7)), ((4, 4), (4, 4))])
def test_interpolate_grid_is_vits_interpolate_pos_encoding(grid, new_grid):
    """Hugging Face's ViTEmbeddings.interpolate_pos_encoding (patch rows; the [CLS] row is kept apart)."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.vit.modeling_vit import ViTEmbeddings
    if grid[0] != grid[1]:
        pytest.skip("ViT's checkpoints have square grids")
    patch, dim = 2, 8
    config = transformers.ViTConfig(image_size=grid[0] * patch, patch_size=patch, hidden_size=dim)
    emb = ViTEmbeddings(config)
    torch.manual_seed(1)
    with torch.no_grad():
        emb.position_embeddings.normal_()
    table = emb.position_embeddings[0, 1:].detach()                          # (rows*cols, dim) patch positions
    new_rows, new_cols = new_grid
    hf = emb.interpolate_pos_encoding(torch.zeros(1, new_rows * new_cols + 1, dim), new_rows * patch, new_cols * patch)
    ours = ld.interpolate_grid(table, grid, new_grid)
    torch.testing.assert_close(ours, hf[0, 1:].detach(), atol=1e-6, rtol=0)
    if new_grid == grid:
        torch.testing.assert_close(ours, table, atol=1e-6, rtol=0)  # same size: the table itself
    with pytest.raises(ValueError, match="rows\\*cols"):
        ld.interpolate_grid(table, (grid[0] + 1, grid[1]), new_grid)
