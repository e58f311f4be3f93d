"""Readings of the cached results for notebooks 07-09: one row per encoding (09's table), the rankings
by absolute loss and by rise, the early-position effect, how much text a run saw, and the fine-tune's
share of pre-training. Each reads a results dict (default: data/) and computes; nothing is stored here."""
from __future__ import annotations

from ..attention import HOOK_PLACES, where_it_acts
from .config import config_from
from .results import load_results
from .training import build_model


def encoding_summary(results: dict | None = None, extra=("shaw",)) -> list:
    """One row per encoding: where it acts (the hooks its class overrides), its trainable parameters
    inside the experiment's TinyLM, the measured mean loss at L and its rise at every longer multiple
    (None where it has no value there). `extra` encodings (not in the run) get measured=False and
    None losses. Reads `results` (default: data/)."""
    results = load_results("extrapolation") if results is None else results
    cfg = config_from(results)
    rows = []
    for enc in [*results["summary"], *[e for e in extra if e not in results["summary"]]]:
        model = build_model(enc, cfg, 0)
        hooks = where_it_acts(model.encoding)
        row = results["summary"].get(enc)
        base = None if row is None else row["1"]["mean"]
        rise = {str(m): None for m in cfg.eval_multiples if m != 1} if row is None else {
            m: (None if v is None else round(v["mean"] - base, 4)) for m, v in row.items() if m != "1"}
        rows.append({"encoding": enc, "acts": ", ".join(HOOK_PLACES[h] for h in hooks) or "nowhere (no position)",
                     "hooks": hooks, "parameters": sum(p.numel() for p in model.encoding.parameters()),
                     "measured": row is not None, "loss_at_L": base, "rise": rise})
    return rows


def rankings(results: dict | None = None, multiple: int = 8) -> dict:
    """The encodings with a value at multiple*L, best first, ranked two ways: by their mean loss there
    ("by_loss": how good the model is at that length) and by the rise of that loss from L ("by_rise": how
    much the longer window cost it). Returns dict(by_loss, by_rise, loss {enc: mean}, rise {enc: mean rise})."""
    results = load_results("extrapolation") if results is None else results
    key = str(int(multiple))
    loss, rise = {}, {}
    for enc, row in results["summary"].items():
        if row.get(key) is not None:
            loss[enc] = row[key]["mean"]
            rise[enc] = row[key]["mean"] - row["1"]["mean"]
    return {"by_loss": sorted(loss, key=loss.get), "by_rise": sorted(rise, key=rise.get), "loss": loss, "rise": rise}


def early_positions(results: dict | None = None, encoding: str = "alibi", first: int = 8) -> dict:
    """The handicap of the first positions of a window, which have almost no context.

    From the per-position loss of the longest window (mean over windows and seeds), positions 0..L-1
    (the positions, and the amounts of context, that a window of L has): the mean over the first
    `first` positions, over the rest of the first L, and `share_at_L` = (first_mean - rest_mean) * first / L,
    what those positions add to a loss averaged over a window of L. A longer window scores its last L
    characters with >= L characters of context, so it does not pay this. Returns dict(first_mean,
    rest_mean, share_at_L, first, L)."""
    results = load_results("extrapolation") if results is None else results
    L = results["provenance"]["config"]["train_len"]
    curves = [r["per_position_loss"] for r in results["runs"] if r["encoding"] == encoding]
    if not curves:
        raise ValueError(f"encoding {encoding!r} is not in these results; have {list(results['summary'])}")
    if not 0 < int(first) < L:
        raise ValueError(f"first must be in 1..{L - 1}, got {first!r}")
    first = int(first)
    mean = [sum(c[p] for c in curves) / len(curves) for p in range(L)]
    first_mean, rest_mean = sum(mean[:first]) / first, sum(mean[first:]) / (L - first)
    return {"first_mean": first_mean, "rest_mean": rest_mean, "share_at_L": (first_mean - rest_mean) * first / L,
            "first": first, "L": L}


def training_exposure(results: dict | None = None) -> dict:
    """How much text each training run saw: steps * batch * L characters against the training text's
    length. Returns dict(chars_seen, train_chars, passes)."""
    results = load_results("extrapolation") if results is None else results
    cfg = results["provenance"]["config"]
    seen = cfg["steps"] * cfg["batch_size"] * cfg["train_len"]
    train = results["corpus"]["train_chars"]
    return {"chars_seen": seen, "train_chars": train, "passes": seen / train}


def finetune_share(extension: dict | None = None) -> dict:
    """Notebook 08's fine-tune against pre-training, in characters: finetune_steps * the recorded
    fine-tune batch * fine-tune length, over steps * batch_size * train_len. Returns
    dict(finetune_chars, pretrain_chars, share)."""
    extension = load_results("context_extension") if extension is None else extension
    cfg = extension["provenance"]["config"]
    ft = extension["finetuned"][0]
    finetune = cfg["finetune_steps"] * ft["finetune_batch"] * ft["finetune_len"]
    pretrain = cfg["steps"] * cfg["batch_size"] * cfg["train_len"]
    return {"finetune_chars": finetune, "pretrain_chars": pretrain, "share": finetune / pretrain}
