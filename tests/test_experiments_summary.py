"""posenc_lib.experiments.summary: notebook 09's one row per encoding, read off the classes and the results."""
from __future__ import annotations

import pytest

from posenc_lib.experiments import load_results
from posenc_lib.experiments.summary import encoding_summary


@pytest.fixture(scope="module")
def rows():
    results = load_results("extrapolation")
    return results, {r["encoding"]: r for r in encoding_summary(results)}


def test_where_each_encoding_acts_and_what_it_costs(rows):
    results, by_name = rows
    cfg = results["provenance"]["config"]
    assert list(by_name) == [*results["summary"], "shaw"]
    assert {e: r["hooks"] for e, r in by_name.items()} == {
        "nope": [], "sinusoidal": ["add_to_input"], "learned": ["add_to_input"], "t5": ["score_bias"],
        "rope": ["rotate_qk"], "alibi": ["score_bias"], "shaw": ["score_bias", "value_bias"]}
    assert by_name["nope"]["acts"] == "nowhere (no position)"
    assert by_name["learned"]["parameters"] == cfg["train_len"] * cfg["d_model"]
    assert by_name["t5"]["parameters"] == cfg["t5_num_buckets"] * cfg["num_heads"]
    assert by_name["rope"]["parameters"] == by_name["alibi"]["parameters"] == by_name["sinusoidal"]["parameters"] == 0


def test_measured_rises_and_the_unmeasured_extra(rows):
    results, by_name = rows
    s = results["summary"]["alibi"]
    assert by_name["alibi"]["measured"] and by_name["alibi"]["loss_at_L"] == s["1"]["mean"]
    assert by_name["alibi"]["rise"]["4"] == pytest.approx(s["4"]["mean"] - s["1"]["mean"], abs=1e-4)
    assert by_name["learned"]["rise"]["8"] is None  # no row past L
    shaw = by_name["shaw"]
    assert shaw["measured"] is False and shaw["loss_at_L"] is None and set(shaw["rise"].values()) == {None}
