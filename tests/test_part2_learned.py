"""Notebook 04's experiment (posenc_lib.learned_demo) and the shipped snapshots in data/."""
import json

import numpy as np
import pytest
import torch

from posenc_lib import LearnedEncoding, TinyLM
from posenc_lib import learned_demo as ld


def test_lag_copy_batch_targets():
    gen = torch.Generator().manual_seed(0)
    tokens, targets = ld.lag_copy_batch(4, 10, 7, 3, generator=gen)
    assert tokens.shape == targets.shape == (4, 10) and tokens.dtype == targets.dtype == torch.long
    assert (targets[:, :3] == -100).all()
    assert torch.equal(targets[:, 3:], tokens[:, :-3])
    assert 0 <= int(tokens.min()) and int(tokens.max()) < 7


@pytest.mark.parametrize("kwargs, name", [(dict(lag=10), "lag"), (dict(lag=0), "lag"), (dict(vocab_size=0), "vocab_size")])
def test_lag_copy_batch_rejects_bad_arguments(kwargs, name):
    args = dict(batch_size=2, seq_len=10, vocab_size=5, lag=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        ld.lag_copy_batch(**args)


def test_position_similarity_is_float64_cosine():
    gen = torch.Generator().manual_seed(1)
    table = torch.randn(5, 6, generator=gen)
    sim = ld.position_similarity(table)
    t = table.double()
    expected = torch.tensor([[float(t[i] @ t[j] / (t[i].norm() * t[j].norm())) for j in range(5)] for i in range(5)],
                            dtype=torch.float64)
    torch.testing.assert_close(sim, expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="num_positions, dim"):
        ld.position_similarity(torch.randn(3))
    with pytest.raises(TypeError, match="table"):
        ld.position_similarity(torch.ones(3, 3, dtype=torch.long))


def test_similarity_by_distance_is_mean_diagonal():
    sim = torch.arange(16.0).reshape(4, 4)
    torch.testing.assert_close(ld.similarity_by_distance(sim), torch.tensor([7.5, 6.0, 4.5, 3.0]))


def test_shipped_snapshots_have_documented_shape_and_provenance():
    snap = ld.load_learned_snapshots()
    cfg = ld.SNAPSHOT_CONFIG
    prov = snap["provenance"]
    assert prov["made_by"] == "posenc_lib.learned_demo.make_learned_snapshots()"
    assert prov["config"] == cfg
    assert snap["steps"] == list(range(0, cfg["steps"] + 1, cfg["every"]))
    assert snap["tables"].shape == (len(snap["steps"]), cfg["seq_len"], cfg["d_model"])
    assert snap["tables"].dtype == torch.float32
    assert len(snap["losses"]) == cfg["steps"]
    assert prov["final_loss"] == pytest.approx(snap["losses"][-1], rel=1e-6)
    assert (ld.DATA_DIR / "learned_snapshots.md").exists()


def test_shipped_snapshots_reproduce_with_a_short_run():
    """The first 40 steps of the documented run, re-run now, give the shipped tables for steps 0, 20, 40."""
    snap = ld.load_learned_snapshots()
    run = ld.train_position_demo(**{**ld.SNAPSHOT_CONFIG, "steps": 40})
    assert run["steps"] == [0, 20, 40]
    torch.testing.assert_close(run["tables"], snap["tables"][:3], rtol=0, atol=1e-5)
    np.testing.assert_allclose(run["losses"], snap["losses"][:40], rtol=1e-5)


def test_shipped_snapshots_show_structure_forming():
    """What notebook 04 claims: random at step 0, near positions alike and far ones not by the end, loss low."""
    snap = ld.load_learned_snapshots()
    first = ld.similarity_by_distance(ld.position_similarity(snap["tables"][0]))
    last = ld.similarity_by_distance(ld.position_similarity(snap["tables"][-1]))
    assert first[1:].abs().max() < 0.2  # random init: no structure
    assert last[1] > 0.8 and last[16] < 0  # neighbours alike, distant positions opposed
    assert snap["losses"][-1] < 0.1 < snap["losses"][0]


def test_make_learned_snapshots_round_trip(tmp_path):
    run = ld.make_learned_snapshots(tmp_path, steps=6, every=3)
    loaded = ld.load_learned_snapshots(tmp_path)
    assert loaded["steps"] == run["steps"] == [0, 3, 6]
    torch.testing.assert_close(loaded["tables"], run["tables"], rtol=0, atol=0)
    prov = json.loads((tmp_path / "learned_snapshots.json").read_text())
    assert prov["config"]["steps"] == 6 and prov["config"]["every"] == 3 and prov["threads"] == 1
    assert torch.get_num_threads() >= 1


def test_load_missing_snapshots_says_how_to_make_them(tmp_path):
    with pytest.raises(FileNotFoundError, match="make_learned_snapshots"):
        ld.load_learned_snapshots(tmp_path)


def test_training_restores_thread_count():
    before = torch.get_num_threads()
    ld.train_position_demo(steps=1, every=1)
    assert torch.get_num_threads() == before


def test_per_position_accuracy_nan_where_no_target():
    model = TinyLM(5, encoding="learned", d_model=8, num_heads=2, num_layers=1, max_len=6)
    tokens, targets = ld.lag_copy_batch(3, 6, 5, 2, generator=torch.Generator().manual_seed(0))
    acc = ld.per_position_accuracy(model, tokens, targets)
    assert acc.shape == (6,) and torch.isnan(acc[:2]).all() and ((acc[2:] >= 0) & (acc[2:] <= 1)).all()


def test_max_len_wall_is_a_clear_error():
    model = TinyLM(5, encoding="learned", d_model=8, num_heads=2, num_layers=1, max_len=6)
    with pytest.raises(ValueError, match="max_len=6"):
        model(torch.zeros(1, 7, dtype=torch.long))
    with pytest.raises(ValueError, match="max_len=6"):
        LearnedEncoding(6, 8)(torch.zeros(1, 3, 8), torch.tensor([4, 5, 6]))
    with pytest.raises(IndexError, match="index out of range in self"):  # what the bare table says (notebook 04)
        torch.nn.Embedding(6, 8)(torch.arange(7))
