"""Notebook 09's figures (posenc_lib.plots.review): which encodings' scores notice a shift of the whole
sequence, and the table of every encoding from notebook 07's cached results."""
import math

import matplotlib.pyplot as plt
import pytest

from posenc_lib import experiments as E
from posenc_lib.plots import review as P


@pytest.fixture(scope="module")
def results():
    return E.load_results("extrapolation")


def test_shift_invariance_separates_absolute_from_relative():
    data = P.shift_invariance(shifts=(0, 3, 50), dim=8, length=10)
    change = {name: max(values) for name, values in data["change"].items()}
    assert change["t5"] == change["alibi"] == change["nope"] == 0.0
    assert change["rope"] < 1e-12
    assert change["sinusoidal"] > 0.1 and change["learned"] > 0.1
    assert all(values[0] == 0.0 for values in data["change"].values())  # shift 0 against itself
    fig, ax = plt.subplots()
    assert P.render_shift_invariance(ax, data) is data
    assert any("exactly 0" in t.get_text() for t in ax.texts)


def test_encoding_table_markdown_has_a_row_per_encoding(results):
    rows = E.encoding_summary(results)
    table = P.encoding_table_markdown(rows).splitlines()
    assert len(table) == 2 + len(rows)
    learned = next(line for line in table if line.startswith("| learned"))
    assert learned.count("n/a") == 3 and "| 4096 |" in learned
    assert "not in the experiment" in next(line for line in table if line.startswith("| shaw"))
    rope = next(r for r in rows if r["encoding"] == "rope")
    assert f"{rope['rise']['8']:+.3f}" in next(line for line in table if line.startswith("| rope"))


def test_variant_table_lists_users_per_variant_in_order():
    table = P.variant_table_markdown({"A": ["x", "y"], "B": ["y"], "C": []}, {"y": "10", "x": "04", "z": "11"})
    lines = table.splitlines()
    assert lines[2:] == ["| y | 10 | A, B |", "| x | 04 | A |", "| z | 11 | - |"]


def test_scaling_cheat_sheet_one_row_per_rope_type_with_computed_numbers():
    from posenc_lib.scaling import ROPE_SCALINGS
    models = {"A": {"default"}, "B": {"yarn", "default"}, "C": {"llama3"}}
    rows = {r["rope_type"]: r for r in P.scaling_cheat_sheet(models, factor=4.0, dim=128, original_max=4096)}
    assert list(rows) == list(ROPE_SCALINGS)
    assert (rows["default"]["first"], rows["default"]["last"], rows["default"]["attention_factor"]) == (1.0, 1.0, 1.0)
    assert rows["linear"]["first"] == pytest.approx(0.25) and rows["linear"]["last"] == pytest.approx(0.25)
    assert rows["ntk"]["first"] == pytest.approx(1.0) and rows["ntk"]["last"] == pytest.approx(0.25)
    assert rows["dynamic"]["last"] == pytest.approx(1 / 13)          # at L = 4 L0: s' = 4 * 4 - 3 = 13
    assert rows["yarn"]["attention_factor"] == pytest.approx(0.1 * math.log(4) + 1)
    assert rows["yarn"]["first"] == 1.0 and rows["yarn"]["last"] == pytest.approx(0.25)
    assert rows["longrope"]["first"] is None                         # no formula: needs a model's own factors
    assert (rows["proportional"]["first"], rows["proportional"]["last"]) == (1.0, 0.0)   # p-RoPE stops the slow pairs
    assert rows["yarn"]["keys"][:3] == ["rope_type", "factor", "original_max_position_embeddings"]
    # dynamic NTK: transformers takes L0 from max_position_embeddings (it ignores original_max_position_embeddings)
    assert "original_max_position_embeddings" not in rows["dynamic"]["keys"]
    assert "max_position_embeddings" in rows["dynamic"]["keys"]
    assert rows["yarn"]["models"] == ["B"] and rows["default"]["models"] == ["A", "B"]
    table = P.scaling_cheat_sheet_markdown(list(rows.values()))
    assert table.count("\n") == len(ROPE_SCALINGS) + 1 and "posenc_lib only" in table
    from posenc_lib.i18n import language
    with language("zh"):
        assert "位置插值" in P.scaling_cheat_sheet_markdown(P.scaling_cheat_sheet(models))
        assert "（多模态 RoPE）" in P.variant_table_markdown({"Q": ["M-RoPE"]}, {"M-RoPE": "11"})
