"""Notebook 01's figure (posenc_lib.plots.permutation and widgets.permutation): one attention head on a
sentence and its permutations, checked against torch's own attention; the widget follows its controls."""
import pytest
import torch
import torch.nn.functional as F

from posenc_lib.plots import permutation as plots
from posenc_lib.widgets import permutation as widgets

ALL_ORDERS = list(plots.sentence_permutations().values())


def test_sentence_permutations_label_the_new_order():
    orders = plots.sentence_permutations()
    assert len(orders) == 6 and orders["爱 北京 我"] == (1, 2, 0) and orders["我 爱 北京"] == (0, 1, 2)


@pytest.mark.parametrize("causal", [False, True])
def test_one_head_agrees_with_torch_scaled_dot_product_attention(causal):
    setup = plots.toy_sentence()
    result = plots.permutation_experiment((0, 1, 2), causal=causal, setup=setup)
    x = setup["embeddings"]
    expected = F.scaled_dot_product_attention(x @ setup["w_q"], x @ setup["w_k"], x @ setup["w_v"], is_causal=causal)
    torch.testing.assert_close(result["out"], expected)


@pytest.mark.parametrize("perm", ALL_ORDERS)
def test_nope_attention_is_equivariant_and_pooling_invariant(perm):
    result = plots.permutation_experiment(perm)
    assert result["equivariance_error"] < 1e-12
    assert result["weights_error"] < 1e-12
    assert result["pooled_error"] < 1e-12


@pytest.mark.parametrize("encoding, causal", [("sinusoidal", False), ("none", True), ("sinusoidal", True)])
@pytest.mark.parametrize("perm", [p for p in ALL_ORDERS if p != (0, 1, 2)])
def test_an_encoding_or_a_causal_mask_breaks_the_symmetry(perm, encoding, causal):
    assert plots.permutation_experiment(perm, encoding=encoding, causal=causal)["equivariance_error"] > 1e-2


def test_causal_last_token_sees_a_set():
    # swapping the first two words leaves the last word's output unchanged: it attends to the same set
    result = plots.permutation_experiment((1, 0, 2), causal=True)
    assert float(result["token_errors"][-1]) < 1e-12
    assert float(result["token_errors"][0]) > 1e-2


@pytest.mark.parametrize("seed", range(5))
def test_two_causal_layers_see_the_order_inside_the_prefix(seed):
    # one causal head: the last word's output ignores the order of the words before it; a second
    # stacked head reads the first layer's outputs, which do depend on it (notebook 01, section 7)
    setup = plots.toy_sentence(seed=seed)
    one = plots.permutation_experiment((1, 0, 2), causal=True, layers=1, setup=setup)
    two = plots.permutation_experiment((1, 0, 2), causal=True, layers=2, setup=setup)
    assert float(one["token_errors"][-1]) < 1e-12
    assert float(two["token_errors"][-1]) > 1e-3


@pytest.mark.parametrize("perm", ALL_ORDERS)
def test_two_stacked_heads_without_mask_stay_equivariant(perm):
    result = plots.permutation_experiment(perm, layers=2)
    assert result["equivariance_error"] < 1e-12 and result["pooled_error"] < 1e-12


def test_toy_sentence_first_layer_does_not_depend_on_the_number_of_layers():
    one, three = plots.toy_sentence(num_layers=1), plots.toy_sentence(num_layers=3)
    assert len(one["layers"]) == 1 and len(three["layers"]) == 3
    assert torch.equal(one["embeddings"], three["embeddings"])
    for a, b in zip(one["layers"][0], three["layers"][0]):
        assert torch.equal(a, b)
    assert torch.equal(three["w_q"], three["layers"][0][0])


@pytest.mark.parametrize("kwargs, match", [({"perm": (0, 0, 1)}, "perm"),
                                           ({"perm": (0, 1, 2), "encoding": "rope"}, "encoding"),
                                           ({"perm": (0, 1, 2), "layers": 0}, "layers"),
                                           ({"perm": (0, 1, 2), "layers": 3}, "layers")])
def test_permutation_experiment_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plots.permutation_experiment(**kwargs)


@pytest.mark.parametrize("kwargs, match", [({"layers": 1.5}, "layers"), ({"layers": True}, "layers"),
                                           ({"causal": "yes"}, "causal")])
def test_permutation_experiment_bad_types(kwargs, match):
    with pytest.raises(TypeError, match=match):
        plots.permutation_experiment((0, 1, 2), **kwargs)


def test_render_causal_layers_draws_both_depths():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    bars = plots.render_causal_layers(ax, (1, 0, 2))
    assert float(bars["one_layer"][2]) < 1e-12 and bool((bars["two_layers"] > 1e-2).all())
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx(bars["one_layer"].tolist() + bars["two_layers"].tolist())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["1 causal layer", "2 causal layers"]
    assert all(ord(ch) < 0x2E80 for ch in ax.get_title())  # pinyin only: the figure font has no CJK glyphs
    plt.close(fig)


def test_render_permutation_labels_the_permuted_order_in_pinyin():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3)
    result = plots.render_permutation(axes, (1, 2, 0))
    assert [t.get_text() for t in axes[1].get_xticklabels()] == [plots.PINYIN[t] for t in result["tokens_perm"]]
    assert axes[2].get_title().startswith("equivariant: yes")
    plt.close(fig)


def test_permutation_explorer_follows_its_controls():
    fig = widgets.permutation_explorer()  # starts as 01's static copy above it: sinusoidal, no mask
    assert fig.last_result["equivariance_error"] > 1e-2 and fig.last_result["tokens_perm"] == ("爱", "北京", "我")
    fig.controls["encoding"].value = "none"
    assert fig.last_result["equivariance_error"] < 1e-12
    fig.controls["causal"].value = True
    assert fig.last_result["equivariance_error"] > 1e-2
    fig.controls["causal"].value = False
    fig.controls["encoding"].value = "sinusoidal"
    assert fig.last_result["equivariance_error"] > 1e-2
    fig.controls["perm"].value = (0, 1, 2)
    assert fig.last_result["equivariance_error"] == 0.0
    fig.controls["encoding"].value = "none"
    fig.controls["causal"].value = True
    fig.controls["perm"].value = (1, 0, 2)
    assert float(fig.last_result["token_errors"][-1]) < 1e-12 and fig.last_result["layers"] == 1
    fig.controls["layers"].value = 2
    assert float(fig.last_result["token_errors"][-1]) > 1e-2 and fig.last_result["layers"] == 2
