"""`make bench` (tools/bench.py) runs: its numbers are measured, not asserted here. On tiny tensors ours and
transformers' RoPE paths are timed and checked to agree, and the verdict lines name the goals."""
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


def test_bench_rope_times_ours_and_transformers_at_every_shape_and_checks_they_agree(bench, capsys):
    sweep = {"a decoding step": ((1, 2, 1, 16), 300), "a batch": ((2, 2, 8, 16), 0)}
    results = bench.bench_rope("cpu", sweep=sweep, rounds=3)
    assert [r["label"] for r in results] == list(sweep) and all(r["agree"] for r in results)
    assert all(set(r["median_s"]) == {"apply_rope", "transformers (one tensor)", "RotaryEmbedding(q, k)",
                                      "transformers (q, k)"} for r in results)
    bench.print_rope(results)
    out = capsys.readouterr().out
    assert out.count("apply_rope ") >= 2 and out.count("RotaryEmbedding ") >= 2 and f"goal >= {bench.HF_GOAL}" in out
    assert "DIFFER" not in out
    assert list(bench.SWEEP) == ["decoding step at 4000", "course training batch", "course evaluation at 8L", "prefill"]


def test_bench_compiled_rope_against_a_clone(bench, capsys):
    result = bench.bench_compiled("cpu", shape=(1, 2, 8, 16), rounds=3)
    assert result["agree"] and len(result["compiled_over_clone"]) == len(result["module_over_clone"]) == 3
    bench.print_compiled(result)
    out = capsys.readouterr().out
    assert "cached tables" in out and "tables made" in out and f"goal <= ~{bench.COMPILED_CLONE_GOAL}" in out


def test_round_robin_interleaves_the_candidates_and_times_each_block(bench):
    """After sizing (blocked_autorange), every round times one block of each candidate in turn: the call log
    alternates between them block by block, and each candidate gets one time per round."""
    log = []
    times = bench._round_robin({"a": lambda: log.append("a"), "b": lambda: log.append("b")}, rounds=4, block_s=1e-5)
    assert [len(t) for t in times.values()] == [4, 4] and all(t > 0 for ts in times.values() for t in ts)
    blocks = [name for i, name in enumerate(log) if i == 0 or log[i - 1] != name]
    assert blocks[-8:] == ["a", "b"] * 4


def test_bench_moves_a_control_to_other_valid_values(bench):
    import ipywidgets as widgets

    slider = widgets.IntSlider(value=5, min=0, max=10, step=5)
    assert bench._other_values(slider) and all(v in (0, 10) for v in bench._other_values(slider))
    dropdown = widgets.Dropdown(options=["a", "b"], value="a")
    assert set(bench._other_values(dropdown)) == {"b"}
    assert bench._other_values(widgets.Dropdown(options=["only"], value="only")) == []
