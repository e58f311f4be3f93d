"""The retrieval probe: does a trained model USE a character far back, or only tolerate it?

A flat loss at long windows says the extra positions do no harm; it cannot say the model reads them.
The probe asks for something only the far context can supply:

    window of n = m * L held-out characters (m in config.eval_multiples)
    ... real text ... [ s_1 .. s_k ] ... real text ... [ s_1 .. s_k ]      s: k random lowercase letters
                                                                          (k = config.probe_length: L / 4)
                       first copy   <-- distance D -->  second copy (the window's last k characters)

The second copy's characters 2..k (k - 1 predictions) are scored: a model that finds the first copy
(D characters back: relative position r = -D in the course's key - query convention) can copy them;
nothing else in the window predicts random letters. The CONTROL is the same window with the first copy
replaced by another random string of the same length (same text, same positions, nothing to retrieve);
the retrieval gain is control loss - probe loss (about 0 when nothing is retrieved; up to the control
loss, several nats, for a perfect copier).

Two distances per window: "near", D = k (the copies back to back), and "far", D = n - 2k (the first
copy k + 1 characters after the window's start). Near at every window separates "the window is long"
from "the copy is far"; at n = L both fit in the trained length. The probes (window ends, strings,
control strings) are drawn once from a generator seeded with PROBE_SEED, the same for every model.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from .. import _checks
from ..model import TinyLM
from .config import ExperimentConfig, probe_length
from .evaluation import supports_length

PROBE_SEED = 20_000
LETTERS = torch.arange(ord("a"), ord("z") + 1)  # the random strings' alphabet (26 lowercase ASCII letters)


def probe_cells(cfg: ExperimentConfig) -> list:
    """[(multiple, distance), ...]: per window of m * L (m in cfg.eval_multiples), the near distance
    k and the far distance m * L - 2k (one cell where they coincide; none where m * L < 3k, too short to
    hold the copies and text before them), k = config.probe_length(cfg)."""
    k, cells = probe_length(cfg), []
    for m in sorted(cfg.eval_multiples):
        if m * cfg.train_len >= 3 * k:
            cells += [(m, d) for d in sorted({k, m * cfg.train_len - 2 * k})]
    return cells


def make_probes(valid: torch.Tensor, cfg: ExperimentConfig) -> dict:
    """The fixed probe set: dict(ends (N,) int64: where each window's last target sits in `valid`,
    strings (N, k) and controls (N, k) int64 letter ids), N = cfg.probe_windows, k = probe_length(cfg),
    drawn from torch.Generator().manual_seed(PROBE_SEED) (ends uniform in [8L, len(valid) - 1])."""
    _checks.int_tensor("valid", valid)
    n, k, longest = cfg.probe_windows, probe_length(cfg), cfg.train_len * max(cfg.eval_multiples)
    if valid.numel() <= longest + 1:
        raise ValueError(f"valid must hold more than the longest window + 1 = {longest + 1} ids, got {valid.numel()}")
    gen = torch.Generator().manual_seed(PROBE_SEED)
    ends = torch.randint(longest, valid.numel(), (n,), generator=gen)
    strings = LETTERS[torch.randint(0, len(LETTERS), (n, k), generator=gen)]
    controls = LETTERS[torch.randint(0, len(LETTERS), (n, k), generator=gen)]
    device = valid.device
    return {"ends": ends.to(device), "strings": strings.to(device), "controls": controls.to(device)}


def probe_windows(valid: torch.Tensor, probes: dict, length: int, distance: int, control: bool = False):
    """(N, length + 1) ids: the held-out text ending at probes["ends"], its last k ids overwritten by the
    string (second copy) and the k ids starting `distance` before them by the string again (or, with
    control=True, by the control string). Inputs are [:, :-1], targets [:, 1:]; the scored targets are
    at input positions length + 1 - k .. length - 1 (`scored_positions`)."""
    k = probes["strings"].shape[1]
    length, distance = _checks.positive_int("length", length), _checks.positive_int("distance", distance)
    if distance < k or length + 1 - k - distance < 1:
        raise ValueError(f"distance must be >= probe_len = {k} (copies must not overlap) and leave the first copy "
                         f"inside the window of {length}, got {distance}")
    x = valid[probes["ends"][:, None] + torch.arange(-length, 1, device=valid.device)]  # a new tensor (a copy)
    start = length + 1 - k
    x[:, start:] = probes["strings"]
    x[:, start - distance:start - distance + k] = probes["controls"] if control else probes["strings"]
    return x


def scored_positions(length: int, k: int) -> slice:
    """The input positions whose targets are the second copy's characters 2..k."""
    return slice(length + 1 - k, length)


@torch.no_grad()
def retrieval_probe(model: TinyLM, valid: torch.Tensor, cfg: ExperimentConfig, probes: dict | None = None) -> list:
    """The probe on one model: one dict per cell of `probe_cells(cfg)`, {"multiple", "window",
    "distance", "loss", "control_loss", "gain" (control - probe), "accuracy", "control_accuracy"}
    (loss: mean nats/char over the scored characters of every probe; accuracy: share of them that are the
    model's most likely next character). Values are None where the model cannot take the window (a
    learned table past L). `probes` default: make_probes(valid, cfg)."""
    probes = make_probes(valid, cfg) if probes is None else probes
    k = probes["strings"].shape[1]
    model.eval()
    out = []
    for m, distance in probe_cells(cfg):
        length = m * cfg.train_len
        cell = {"multiple": m, "window": length, "distance": distance}
        if not supports_length(model, length):
            out.append({**cell, **dict.fromkeys(("loss", "control_loss", "gain", "accuracy", "control_accuracy"))})
            continue
        batch = max(1, cfg.eval_tokens // length)
        scored = scored_positions(length, k)
        for name, control in (("", False), ("control_", True)):
            x = probe_windows(valid, probes, length, distance, control)
            nll, hits = 0.0, 0
            for i in range(0, x.shape[0], batch):
                logits, _ = model(x[i:i + batch, :-1])
                logits, targets = logits[:, scored], x[i:i + batch, 1:][:, scored]
                nll += float(F.cross_entropy(logits.transpose(1, 2), targets, reduction="sum"))
                hits += int((logits.argmax(-1) == targets).sum())
            count = x.shape[0] * (k - 1)
            cell[f"{name}loss"], cell[f"{name}accuracy"] = round(nll / count, 5), round(hits / count, 5)
        cell["gain"] = round(cell["control_loss"] - cell["loss"], 5)
        out.append(cell)
    return out
