"""posenc_lib.experiments.probe: the retrieval probe writes the string where it says, scores exactly the
second copy's predictable characters, detects a model that copies, and is the same fixed set every time."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch import nn

from posenc_lib.attention import NoPE
from posenc_lib.experiments import build_model, load_corpus, probe as P
from posenc_lib.experiments.config import ExperimentConfig


@pytest.fixture(scope="module")
def valid():
    return load_corpus().valid


def _cfg(**kw):
    return replace(ExperimentConfig(), **{"train_len": 24, "eval_multiples": (1, 2), "probe_len": 6,
                                          "probe_windows": 5, "eval_tokens": 60, **kw})


def test_cells_are_near_and_far_per_window():
    assert P.probe_cells(ExperimentConfig()) == [(1, 16), (1, 32), (2, 16), (2, 96), (4, 16), (4, 224), (8, 16),
                                                 (8, 480)]
    assert P.probe_cells(_cfg(train_len=18)) == [(1, 6), (2, 6), (2, 24)]  # at L = 3k near and far coincide


def test_the_probe_set_is_fixed_and_drawn_from_letters(valid):
    cfg = _cfg()
    a, b = P.make_probes(valid, cfg), P.make_probes(valid, cfg)
    assert all(torch.equal(a[key], b[key]) for key in a)
    assert a["strings"].shape == a["controls"].shape == (5, 6) and a["ends"].shape == (5,)
    assert int(a["ends"].min()) >= 48 and int(a["ends"].max()) < valid.numel()
    letters = set(range(ord("a"), ord("z") + 1))
    assert set(a["strings"].flatten().tolist()) <= letters and set(a["controls"].flatten().tolist()) <= letters
    assert not torch.equal(a["strings"], a["controls"])


@pytest.mark.parametrize("control", [False, True])
def test_windows_hold_the_text_and_the_two_copies(valid, control):
    cfg = _cfg()
    probes = P.make_probes(valid, cfg)
    before = valid.clone()
    x = P.probe_windows(valid, probes, 24, 10, control)
    assert torch.equal(valid, before)  # the text is not written to
    assert x.shape == (5, 25)
    start = 25 - 6
    for i, e in enumerate(probes["ends"].tolist()):
        text = valid[e - 24:e + 1]
        assert torch.equal(x[i, start:], probes["strings"][i])                       # the second copy at the end
        first = x[i, start - 10:start - 10 + 6]
        assert torch.equal(first, probes["controls"][i] if control else probes["strings"][i])
        keep = torch.ones(25, dtype=torch.bool)
        keep[start:], keep[start - 10:start - 4] = False, False
        assert torch.equal(x[i, keep], text[keep])                                    # real text elsewhere
    sl = P.scored_positions(24, 6)
    assert (sl.start, sl.stop) == (19, 24)
    assert torch.equal(x[:, 1:][:, sl], probes["strings"][:, 1:])                     # characters 2..k


@pytest.mark.parametrize("distance", [5, 19])
def test_windows_refuse_overlapping_or_outside_copies(valid, distance):
    probes = P.make_probes(valid, _cfg())
    with pytest.raises(ValueError, match="distance"):
        P.probe_windows(valid, probes, 24, distance)


class _Copier(nn.Module):
    """Predicts, at position t, the character at t + 1 - distance: a perfect retriever for one distance."""

    def __init__(self, distance):
        super().__init__()
        self.distance, self.encoding = distance, NoPE()

    def forward(self, idx):
        source = torch.roll(idx, self.distance - 1, dims=1)  # source[:, t] = idx[:, t + 1 - distance]
        return 20.0 * nn.functional.one_hot(source, 129).float(), None


def test_a_copier_gains_and_a_text_model_does_not_crash(valid):
    cfg = _cfg(eval_multiples=(1,))
    far = 24 - 12
    cells = {c["distance"]: c for c in P.retrieval_probe(_Copier(far), valid, cfg)}
    hit = cells[far]
    assert hit["accuracy"] == 1.0 and hit["loss"] < 1e-6                      # it copies every scored character
    assert hit["control_accuracy"] < 0.5 and hit["control_loss"] > 5.0        # nothing to copy in the control
    assert hit["gain"] == pytest.approx(hit["control_loss"] - hit["loss"], abs=1e-5)
    assert cells[6]["accuracy"] < 0.5                                          # the wrong distance: no hit
    model = build_model("rope", cfg, 0)
    out = P.retrieval_probe(model, valid, cfg)
    assert [(c["multiple"], c["distance"]) for c in out] == P.probe_cells(cfg)
    assert all(c["loss"] > 0 and 0 <= c["accuracy"] <= 1 for c in out)


def test_the_probe_scores_match_an_independent_computation(valid):
    cfg = _cfg()
    model = build_model("alibi", cfg, 1).eval()
    probes = P.make_probes(valid, cfg)
    cell = next(c for c in P.retrieval_probe(model, valid, cfg, probes) if (c["multiple"], c["distance"]) == (2, 36))
    for control, key in ((False, "loss"), (True, "control_loss")):
        x = P.probe_windows(valid, probes, 48, 36, control)
        with torch.no_grad():
            logp = torch.log_softmax(model(x[:, :-1])[0].double(), -1)  # the whole batch at once
        nll = -logp[:, 43:48].gather(-1, x[:, 44:49, None])[..., 0]
        assert cell[key] == pytest.approx(float(nll.mean()), abs=1e-4)


def test_a_learned_table_has_no_probe_past_its_length(valid):
    cfg = _cfg()
    out = P.retrieval_probe(build_model("learned", cfg, 0), valid, cfg)
    assert all(c["loss"] is not None for c in out if c["multiple"] == 1)
    assert all(c["loss"] is None and c["gain"] is None for c in out if c["multiple"] == 2)
