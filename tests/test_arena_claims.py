"""The papers' direction (issue 40, point 4): every claim names an arena method, a column of the table and a
direction; the verdicts on hand-built tables (agrees, disagrees, not resolved) follow the sign of the difference,
paired per seed or from the two intervals; bad input is refused with the parameter's name; the command writes the
comparison beside the table without changing the table's numbers."""
import json
from dataclasses import replace

import pytest
import torch

from posenc_lib.arena import __main__ as cli
from posenc_lib.arena.claims import CLAIMS, DIRECTIONS, MEASURES, PaperClaim, format_comparison, paper_comparison
from posenc_lib.arena.presets import arena_config
from posenc_lib.arena.table import _columns, arena_table
from posenc_lib.experiments.arena_methods import ARENA_METHODS, build_arena_model
from posenc_lib.printing import mean_ci, t_quantile

MULTIPLES = (1, 2, 4, 8)


# ------------------------------------------------------------------------------------------------- registry
def test_every_claim_names_a_method_a_column_and_a_direction():
    keys = {key for key, _, _ in _columns(list(MULTIPLES))}    # the columns arena_table makes
    assert set(MEASURES) == keys
    for c in CLAIMS:
        assert c.method in ARENA_METHODS and (c.compared_with is None or c.compared_with in ARENA_METHODS)
        assert c.measure in keys and c.reference in keys and c.direction in DIRECTIONS
        assert (c.tolerance is not None) == (c.direction == "flat")
        assert c.claim.strip() and c.likely_cause.strip()
        assert "arXiv" in c.source or "kexue.fm" in c.source or "reddit" in c.source or "github" in c.source


def test_the_issue_methods_each_have_a_claim():
    claimed = {c.method for c in CLAIMS}
    for method in ("xpos", "kerple", "fire", "alibi", "t5", "nope", "randomized_positions", "pose",
                   "rope_nope_hybrid", "partial_rope_1_8", "fox", "path", "rerope", "self_extend", "log_n",
                   "scaling_linear", "scaling_ntk", "scaling_yarn"):
        assert method in claimed, method
    # the partial-RoPE claim is about the training length only (Khan et al.): compared at L, not beyond
    (partial,) = [c for c in CLAIMS if c.method == "partial_rope_1_8"]
    assert partial.measure == "loss_1L" and partial.compared_with == "rope" and partial.direction == "flat"


def _claim(**kw):
    base = dict(method="alibi", compared_with="rope", measure="loss_8L", direction="lower", claim="c.",
                source="s", likely_cause="because")
    return PaperClaim(**{**base, **kw})


@pytest.mark.parametrize("kw, error, match", [
    (dict(method="alibii"), ValueError, r"method must name an arena method.*'alibii'"),
    (dict(compared_with="ropee"), ValueError, r"compared_with must name an arena method.*'ropee'"),
    (dict(compared_with="alibi"), ValueError, "compared_with must be another method"),
    (dict(measure="loss_16L"), ValueError, r"measure must be one of the table's keys.*'loss_16L'"),
    (dict(compared_with=None, measure="loss_1L"), ValueError, "measure and reference are both 'loss_1L'"),
    (dict(direction="down"), ValueError, r"direction must be one of \['lower', 'higher', 'flat'\]"),
    (dict(direction="flat"), ValueError, "tolerance must be a number > 0"),
    (dict(direction="flat", tolerance=-0.1), ValueError, "tolerance must be a number > 0"),
    (dict(direction="flat", tolerance=0.1, measure="probe_gain_8L"), ValueError, "a flat claim compares losses"),
    (dict(tolerance=0.1), ValueError, "tolerance is for flat claims only"),
    (dict(source=" "), TypeError, "source must be a non-empty str"),
])
def test_bad_claims_name_the_field(kw, error, match):
    with pytest.raises(error, match=match):
        _claim(**kw)


# --------------------------------------------------------------------------------------- hand-built tables
def _record(method, seed, loss):
    """A record with the fields arena_table reads; `loss` {multiple: value}."""
    probe = [{"multiple": m, "distance": 8 * m, "gain": 0.01 * m} for m in MULTIPLES]
    return {"method": method, "seed": seed, "kind": ARENA_METHODS[method].kind, "paper": "p", "note": "",
            "protocol": {"train_len": 64, "eval_multiples": list(MULTIPLES), "eval_windows": 4, "probe_windows": 4,
                         "steps": 10, "batch_size": 2},
            "budget": {"steps": 10, "batch_size": 2, "train_len": 64, "trained_model": "rope seed 0"},
            "loss": {str(m): v for m, v in loss.items()}, "sliding_loss": loss[1], "probe": probe,
            "posenc_lib_version": "t", "torch_version": "t", "threads": 1, "world_size": 1, "device": "cpu"}


def _records(values: dict, seeds=(0, 1, 2)) -> dict:
    """{method: [loss_8L per seed]} -> records (loss at L, 2L, 4L = 2.0 for every method and seed)."""
    return {(m, s): _record(m, s, {1: 2.0, 2: 2.0, 4: 2.0, 8: v[i]}) for m, v in values.items()
            for i, s in enumerate(seeds)}


def _compare(values, claim, *, paired=True):
    records = _records(values)
    table = arena_table(records, list(values), [0, 1, 2])
    (row,) = paper_comparison(table, records if paired else None, claims=(claim,))
    return row


LOWER = _claim()   # alibi's loss at 8L below rope's


@pytest.mark.parametrize("paired", [True, False])
def test_lower_agrees_disagrees_and_overlaps(paired):
    far_apart = {"alibi": [2.0, 2.1, 2.05], "rope": [3.0, 3.1, 3.2]}
    row = _compare(far_apart, LOWER, paired=paired)
    assert row["verdict"] == "agrees" and row["difference"]["high"] < 0 and row["likely_cause"] == ""
    assert row["test"] == ("paired" if paired else "intervals")
    # the same numbers the other way round: the paper's direction is contradicted, the cause is shown
    swapped = {"alibi": far_apart["rope"], "rope": far_apart["alibi"]}
    row = _compare(swapped, LOWER, paired=paired)
    assert row["verdict"] == "disagrees" and row["difference"]["low"] > 0 and row["likely_cause"] == "because"
    row = _compare({"alibi": [2.0, 3.0, 2.5], "rope": [2.4, 2.6, 2.5]}, LOWER, paired=paired)
    assert row["verdict"] == "not resolved" and row["likely_cause"] == "because"
    assert row["why"] == ("the interval of the difference contains the paper's line" if paired else
                          "intervals overlap")


def test_higher_flips_the_verdicts():
    higher = replace(LOWER, direction="higher")
    assert _compare({"alibi": [2.0, 2.1, 2.05], "rope": [3.0, 3.1, 3.2]}, higher)["verdict"] == "disagrees"
    assert _compare({"alibi": [3.0, 3.1, 3.2], "rope": [2.0, 2.1, 2.05]}, higher)["verdict"] == "agrees"


def test_pairing_resolves_what_the_intervals_cannot():
    # rope varies a lot between seeds, alibi follows it 0.1 below: the per-seed differences are all -0.1 +- 0.01
    rope = [2.0, 2.6, 3.2]
    values = {"alibi": [r - 0.1 + e for r, e in zip(rope, (0.0, 0.01, -0.01))], "rope": rope}
    assert _compare(values, LOWER, paired=False)["verdict"] == "not resolved"
    row = _compare(values, LOWER, paired=True)
    assert row["verdict"] == "agrees"
    diffs = [a - b for a, b in zip(values["alibi"], values["rope"])]   # an independent t-interval
    mean = sum(diffs) / 3
    sd = (sum((d - mean) ** 2 for d in diffs) / 2) ** 0.5
    half = t_quantile(0.975, 2) * sd / 3 ** 0.5
    assert row["difference"]["mean"] == pytest.approx(mean)
    assert row["difference"]["low"] == pytest.approx(mean - half) and row["difference"]["high"] == pytest.approx(
        mean + half)


def test_intervals_test_uses_the_cells_bounds():
    values = {"alibi": [2.0, 2.1, 2.05], "rope": [3.0, 3.1, 3.2]}
    row = _compare(values, LOWER, paired=False)
    a, b = mean_ci(values["alibi"]), mean_ci(values["rope"])
    assert row["difference"]["low"] == pytest.approx(a["low"] - b["high"])
    assert row["difference"]["high"] == pytest.approx(a["high"] - b["low"])
    assert row["method_value"]["mean"] == pytest.approx(a["mean"]) and row["other_value"]["mean"] == pytest.approx(
        b["mean"])


def test_flat_claim_against_its_own_loss_at_L():
    flat = _claim(compared_with=None, direction="flat", tolerance=0.05)   # alibi's 8L within 0.05 of its L
    row = _compare({"alibi": [2.01, 2.02, 2.0]}, flat)
    assert row["verdict"] == "agrees" and row["reference"] == "loss_1L" and row["difference"]["high"] < 0.05
    assert _compare({"alibi": [2.5, 2.6, 2.55]}, flat)["verdict"] == "disagrees"      # rises by ~0.55
    assert _compare({"alibi": [2.0, 2.1, 2.05]}, flat)["verdict"] == "not resolved"   # straddles +0.05


def test_one_seed_and_missing_methods():
    records = _records({"alibi": [2.0], "rope": [3.0]}, seeds=(0,))
    table = arena_table(records, ["alibi", "rope"], [0])
    (row,) = paper_comparison(table, records, claims=(LOWER,))
    assert row["verdict"] == "not resolved" and "one seed" in row["why"]
    (row,) = paper_comparison(table, None, claims=(LOWER,))
    assert row["verdict"] == "not resolved" and "one seed" in row["why"]
    only_rope = arena_table(records, ["rope"], [0])
    assert paper_comparison(only_rope, records, claims=(LOWER,)) == []   # a claim whose method is not in the table


@pytest.mark.parametrize("table, records, error, match", [
    ([], None, TypeError, "table must be arena_table's dict"),
    ({"rows": []}, None, ValueError, r"it has no \['keys', 'multiples'\]"),
    ({"rows": [1], "keys": [], "multiples": [1]}, None, ValueError, "must hold dicts with 'method' and 'cells'"),
    ({"rows": [], "keys": [], "multiples": [1]}, [], TypeError, "records must be a dict"),
])
def test_bad_input(table, records, error, match):
    with pytest.raises(error, match=match):
        paper_comparison(table, records)
    with pytest.raises(TypeError, match="rows must be paper_comparison's list"):
        format_comparison({"rows": []})


def test_format_lists_verdicts_and_the_causes_of_the_others():
    records = _records({"alibi": [3.0, 3.1, 3.2], "rope": [2.0, 2.1, 2.05]})
    table = arena_table(records, ["alibi", "rope"], [0, 1, 2])
    text = format_comparison(paper_comparison(table, records, claims=(LOWER,)))
    assert "| alibi | rope | loss_8L | d < 0 |" in text and "disagrees" in text and "Likely cause: because" in text
    assert "0 agrees, 1 disagrees, 0 not resolved" in text
    assert format_comparison([]).startswith("No claim")


def test_command_writes_the_comparison_beside_an_unchanged_table(tmp_path):
    records = _records({"alibi": [2.0, 2.1, 2.05], "rope": [3.0, 3.1, 3.2]})
    table = arena_table(records, ["alibi", "rope"], [0, 1, 2])
    before = json.loads(json.dumps(table))
    cli.write_outputs(tmp_path, table, records)
    assert table == before                                          # the caller's dict is not changed
    written = json.loads((tmp_path / "table.json").read_text())
    assert {k: v for k, v in written.items() if k != "comparison"} == before
    assert written["comparison"] == json.loads(json.dumps(paper_comparison(table, records)))
    text = (tmp_path / "table.md").read_text()
    assert "## Papers' direction" in text and "| alibi | itself at loss_1L | loss_2L |" in text   # CLAIMS


def test_fires_likely_cause_holds_for_the_arenas_model():
    """FIRE's stated likely cause: TinyLM starts its threshold at L, and past L a near distance reaches the MLP as a
    smaller number (distance 1 at position 511: half its value at position 63, at the initial c)."""
    cfg = arena_config("laptop").protocol
    model, _ = build_arena_model("fire", cfg, 0)
    fire = model.encoding
    assert float(fire.init_L) * float(fire.L_multiplier) == cfg.train_len
    positions = torch.arange(8 * cfg.train_len)
    normalized = fire.normalized_distance(positions, positions)[0]           # (T, T): query i, key j
    ratio = normalized[8 * cfg.train_len - 1, 8 * cfg.train_len - 2] / normalized[cfg.train_len - 1, cfg.train_len - 2]
    assert 0.45 < float(ratio) < 0.55
    cause = next(c.likely_cause for c in CLAIMS if c.method == "fire")
    assert "training length L" in cause and "half its value" in cause
