"""`make bench` (tools/bench.py) runs: its numbers are measured, not asserted here. On a tiny tensor every
RoPE candidate is timed and checked for bit-identity with the eager form, and the verdict lines name the goals."""
import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "tools" / "bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("posenc_bench", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("shape", [(2, 2, 64, 16), (3, 40, 8)])
def test_bench_rope_times_every_candidate_and_checks_identity(bench, shape, capsys):
    result = bench.bench_rope("cpu", shape=shape, rounds=3)
    assert set(result["median_s"]) == {"apply_rope", "rope.rotate", "eager", "clone"}
    assert result["identical"] == {"apply_rope": True, "rope.rotate": True}
    bench.print_rope(result)
    out = capsys.readouterr().out
    assert out.count("identical to eager: yes") == 2
    assert out.count(f"goal >= {bench.EAGER_GOAL}") == 2 and out.count(f"goal >= {bench.COPY_GOAL}") == 2


def test_bench_moves_a_control_to_other_valid_values(bench):
    import ipywidgets as widgets

    slider = widgets.IntSlider(value=5, min=0, max=10, step=5)
    assert bench._other_values(slider) and all(v in (0, 10) for v in bench._other_values(slider))
    dropdown = widgets.Dropdown(options=["a", "b"], value="a")
    assert set(bench._other_values(dropdown)) == {"b"}
    assert bench._other_values(widgets.Dropdown(options=["only"], value="only")) == []
