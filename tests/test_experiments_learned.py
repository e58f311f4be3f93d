"""posenc_lib.experiments.learned: notebook 04's lag-copy task and the shipped snapshots in data/."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from posenc_lib import TinyLM, position_similarity, similarity_by_distance
from posenc_lib.experiments import learned as ld
from posenc_lib.experiments.paths import data_dir


@pytest.mark.parametrize("lag", [1, 3, 9])
def test_lag_copy_batch_targets(lag):
    tokens, targets = ld.lag_copy_batch(4, 10, 7, lag, generator=torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (4, 10) and tokens.dtype == targets.dtype == torch.long
    assert (targets[:, :lag] == -100).all()
    assert torch.equal(targets[:, lag:], tokens[:, :-lag])
    assert 0 <= int(tokens.min()) and int(tokens.max()) < 7


@pytest.mark.parametrize("kwargs, exc, name", [(dict(lag=10), ValueError, "lag"), (dict(lag=0), ValueError, "lag"),
                                               (dict(vocab_size=0), ValueError, "vocab_size"),
                                               (dict(seq_len=2.0), TypeError, "seq_len")])
def test_lag_copy_batch_rejects_bad_arguments(kwargs, exc, name):
    args = {"batch_size": 2, "seq_len": 10, "vocab_size": 5, "lag": 1, **kwargs}
    with pytest.raises(exc, match=name):
        ld.lag_copy_batch(**args)


def test_shipped_snapshots_have_documented_shape_and_provenance():
    snap = ld.load_learned_snapshots()
    cfg = ld.SNAPSHOT_CONFIG
    prov = snap["provenance"]
    assert prov["made_by"].endswith(".make_learned_snapshots()") and prov["config"] == cfg
    assert snap["steps"] == list(range(0, cfg["steps"] + 1, cfg["every"]))
    assert snap["tables"].shape == (len(snap["steps"]), cfg["seq_len"], cfg["d_model"])
    assert snap["tables"].dtype == torch.float32
    assert len(snap["losses"]) == cfg["steps"]
    assert prov["final_loss"] == pytest.approx(snap["losses"][-1], rel=1e-6)
    assert (data_dir() / "learned_snapshots.md").exists()


def test_shipped_snapshots_reproduce_with_a_short_run():
    """The first 40 steps of the documented run, re-run now through the experiments' one training loop,
    give the shipped tables for steps 0, 20, 40 and the shipped losses."""
    snap = ld.load_learned_snapshots()
    run = ld.train_position_demo(**{**ld.SNAPSHOT_CONFIG, "steps": 40})
    assert run["steps"] == [0, 20, 40]
    torch.testing.assert_close(run["tables"], snap["tables"][:3], rtol=0, atol=1e-5)
    np.testing.assert_allclose(run["losses"], snap["losses"][:40], rtol=1e-5)


def test_shipped_snapshots_show_structure_forming():
    """What notebook 04 claims: random at step 0, near positions alike and far ones not by the end, loss low."""
    snap = ld.load_learned_snapshots()
    first = similarity_by_distance(position_similarity(snap["tables"][0]))
    last = similarity_by_distance(position_similarity(snap["tables"][-1]))
    assert first[1:].abs().max() < 0.2  # random init: no structure
    assert last[1] > 0.8 and last[16] < 0  # neighbours alike, distant positions opposed
    assert snap["losses"][-1] < 0.1 < snap["losses"][0]


@pytest.mark.parametrize("steps, every, recorded", [(6, 3, [0, 3, 6]), (7, 3, [0, 3, 6, 7]), (0, 5, [0])])
def test_make_learned_snapshots_round_trip(tmp_path, steps, every, recorded):
    threads = torch.get_num_threads()
    run = ld.make_learned_snapshots(tmp_path, steps=steps, every=every)
    assert torch.get_num_threads() == threads  # the one-thread run sets the count back
    loaded = ld.load_learned_snapshots(tmp_path)
    assert loaded["steps"] == run["steps"] == recorded and len(loaded["losses"]) == steps
    torch.testing.assert_close(loaded["tables"], run["tables"], rtol=0, atol=0)
    assert torch.equal(run["tables"][-1], run["model"].encoding.table.weight)  # the last one: the final table
    prov = json.loads((tmp_path / "learned_snapshots.json").read_text())
    assert prov["config"]["steps"] == steps and prov["threads"] == 1
    assert prov["made_by"] == "posenc_lib.experiments.learned.make_learned_snapshots()"


def test_an_encoding_without_a_table_records_no_tables():
    run = ld.train_position_demo("rope", steps=2, every=1)
    assert run["steps"] == [0, 1, 2] and run["tables"].shape == (0, 32, 32) and len(run["losses"]) == 2


def test_load_missing_snapshots_says_how_to_make_them(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"{tmp_path}.*make_learned_snapshots"):
        ld.load_learned_snapshots(tmp_path)


def test_per_position_accuracy_nan_where_no_target():
    model = TinyLM(5, encoding="learned", d_model=8, num_heads=2, num_layers=1, max_len=6)
    tokens, targets = ld.lag_copy_batch(3, 6, 5, 2, generator=torch.Generator().manual_seed(0))
    acc = ld.per_position_accuracy(model, tokens, targets)
    assert acc.shape == (6,) and torch.isnan(acc[:2]).all() and ((acc[2:] >= 0) & (acc[2:] <= 1)).all()
