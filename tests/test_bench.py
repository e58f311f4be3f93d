"""`make bench` itself (its numbers are not tested: speed is measured, not asserted): on a tiny tensor it
times every candidate, checks bit-identity, and prints a verdict line per candidate."""
import pytest

from posenc_lib import bench


def test_bench_rope_reports_every_candidate_and_identity(capsys):
    result = bench.bench_rope("cpu", shape=(2, 2, 64, 16), rounds=3)
    assert set(result["median_s"]) == {"apply_rope", "rope.rotate", "eager", "clone"}
    assert all(t > 0 for t in result["median_s"].values())
    assert result["identical"] == {"apply_rope": True, "rope.rotate": True}
    for name in ("apply_rope", "rope.rotate"):
        expected = result["median_s"]["eager"] / result["median_s"][name]
        assert result["eager_ratio"][name] == pytest.approx(expected)
        low, mid, high = result["round_quartiles"][name]["clone"]
        assert 0 < low <= mid <= high
    bench.print_rope(result)
    out = capsys.readouterr().out
    assert out.count("identical to eager: yes") == 2 and "per-round ratios" in out


def test_bench_moves_a_control_to_other_valid_values():
    import ipywidgets as widgets

    slider = widgets.IntSlider(value=5, min=0, max=10, step=5)
    assert bench._other_values(slider) and all(v in (0, 10) for v in bench._other_values(slider))
    dropdown = widgets.Dropdown(options=["a", "b"], value="a")
    assert set(bench._other_values(dropdown)) == {"b"}
    assert bench._other_values(widgets.Dropdown(options=["only"], value="only")) == []
