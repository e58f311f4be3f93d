"""posenc_lib.experiments.training: the one AdamW loop, its schedule, and the experiment's model.

The cached results in data/ were made by this loop; the tests below hold it to them (a short re-run
against the stored training curve; notebook 04's snapshots are checked in test_experiments_learned)."""
from __future__ import annotations

import pytest
import torch

from posenc_lib.experiments import config_from, load_corpus, load_results, training as T
from posenc_lib.experiments.config import ExperimentConfig
from posenc_lib.experiments.corpus import VOCAB_SIZE


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as the cached runs: one thread per worker
    yield
    torch.set_num_threads(before)


def _tiny_model(seed=0):
    return T.seeded_tinylm(seed, 11, encoding="rope", d_model=16, num_heads=2, num_layers=1, max_len=16)


def _batches(n, seed=1):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 11, (n, 4, 9), generator=gen)
    return [(b[:, :-1], b[:, 1:]) for b in ids]


@pytest.mark.parametrize("grad_clip, schedule", [(None, False), (0.5, False), (None, True), (0.05, True)])
def test_fit_is_torch_adamw_step_for_step(grad_clip, schedule):
    """Bit for bit the textbook loop (lr set, batch, forward, zero_grad, backward, clip, step): the cached
    results depend on these operations in this order and on nothing else touching the weights or the RNG."""
    lrs = [1e-2 * (i + 1) / 6 for i in range(6)]
    model, reference = _tiny_model(), _tiny_model()
    batches = iter(_batches(6))
    seen = []
    losses = T.fit(model, lambda: next(batches), steps=6, lr=1e-2, weight_decay=0.1, grad_clip=grad_clip,
                   lr_at=(lambda s: lrs[s]) if schedule else None, on_step=lambda s, loss: seen.append((s, loss)))
    opt = torch.optim.AdamW(reference.parameters(), lr=1e-2, weight_decay=0.1)
    expected = []
    for i, (x, y) in enumerate(_batches(6)):
        if schedule:
            opt.param_groups[0]["lr"] = lrs[i]
        _, loss = reference(x, y)
        opt.zero_grad()
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(reference.parameters(), grad_clip)
        opt.step()
        expected.append(loss.item())
    assert losses == expected and seen == list(enumerate(expected))
    for (name, got), want in zip(model.state_dict().items(), reference.state_dict().values()):
        assert torch.equal(got, want), name
    assert not model.training


def test_fit_of_zero_steps_leaves_the_weights():
    model = _tiny_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert T.fit(model, lambda: pytest.fail("no batch is drawn"), steps=0, lr=1e-3, weight_decay=0.0) == []
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(steps=-1), ValueError, "steps"), (dict(lr=0.0), ValueError, "lr"),
    (dict(weight_decay=-1.0), ValueError, "weight_decay"), (dict(grad_clip=float("inf")), ValueError, "grad_clip"),
])
def test_fit_names_a_bad_setting(kwargs, exc, match):
    settings = {"steps": 1, "lr": 1e-3, "weight_decay": 0.0, **kwargs}
    with pytest.raises(exc, match=match):
        T.fit(_tiny_model(), lambda: _batches(1)[0], **settings)


@pytest.mark.parametrize("total, warmup, min_ratio", [(100, 10, 0.1), (30, 1, 0.0), (50, 0, 0.5)])
def test_warmup_then_cosine_decay(total, warmup, min_ratio):
    lrs = [T.warmup_cosine_lr(s, total, 2.0, warmup, min_ratio) for s in range(total + 5)]
    if warmup:
        assert lrs[0] == pytest.approx(2.0 / warmup) and lrs[warmup - 1] == pytest.approx(2.0)
        assert all(a < b for a, b in zip(lrs[:warmup - 1], lrs[1:warmup]))
    assert lrs[warmup] == pytest.approx(2.0)
    assert all(a >= b for a, b in zip(lrs[warmup:], lrs[warmup + 1:]))
    assert lrs[total] == pytest.approx(2.0 * min_ratio) and lrs[-1] == lrs[total]  # flat after the end


def test_build_model_gives_each_encoding_its_settings_from_the_config():
    cfg = ExperimentConfig(train_len=24, t5_num_buckets=8, t5_max_distance=24, d_model=32, num_heads=2)
    t5 = T.build_model("t5", cfg, 0).encoding
    assert (t5.num_buckets, t5.max_distance, t5.bidirectional) == (8, 24, False)
    assert T.build_model("learned", cfg, 0).encoding.max_len == 24
    model = T.build_model("rope", cfg, 0)
    assert model.vocab_size == VOCAB_SIZE and len(model.blocks) == cfg.num_layers


@pytest.mark.parametrize("data, exc, match", [(torch.arange(10), ValueError, "seq_len"),
                                              (torch.zeros(100), TypeError, "data")])
def test_train_refuses_unusable_data(data, exc, match):
    with pytest.raises(exc, match=match):
        T.train(_tiny_model(), data, seq_len=16, steps=1, batch_size=2, lr=1e-3, seed=0)


def test_a_short_rerun_reproduces_the_cached_training_curve(one_thread):
    """The warm-up steps (whose schedule does not depend on the total) of the cached T5 seed-0 run,
    re-run now: the same curve as stored (rounded there to 4 digits). Clipping, weight decay, the
    batches and T5's settings from the config each move it by more than that."""
    results, corpus = load_results("extrapolation"), load_corpus()
    if results["corpus"]["text_sha256"] != corpus.info["text_sha256"]:
        pytest.skip("this Python's standard library differs from the one the cached results were made with")
    cfg = config_from(results)
    cached = next(r["train_curve"] for r in results["runs"] if r["encoding"] == "t5" and r["seed"] == 0)
    model = T.build_model("t5", cfg, 0)
    curve = T.train(model, corpus.train, seq_len=cfg.train_len, steps=cfg.warmup_steps, batch_size=cfg.batch_size,
                    lr=cfg.lr, seed=0, warmup=cfg.warmup_steps, min_lr_ratio=cfg.min_lr_ratio,
                    weight_decay=cfg.weight_decay, grad_clip=cfg.grad_clip, log_every=cfg.log_every)
    assert len(curve) >= 2 and [s for s, _ in curve] == [s for s, _ in cached[:len(curve)]]
    for (_, got), (_, stored) in zip(curve, cached):
        assert got == pytest.approx(stored, abs=1.01e-4)
