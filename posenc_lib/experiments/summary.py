"""Readings of the cached results for notebooks 07-09: one row per encoding (09's table), the rankings
by absolute loss and by rise, the early-position effect, the loss against the sliding-window baseline,
the retrieval probe, how much text a run saw, the fine-tune's share of pre-training and the fine-tune
arms against each other. Each reads a results dict (default: data/) and computes; nothing is stored here."""
from __future__ import annotations

from ..attention import HOOK_PLACES, where_it_acts
from ..i18n import tr
from ..printing import seed_stats
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
        acts = (tr(", ", "、").join(str(HOOK_PLACES[h]) for h in hooks)
                or tr("nowhere (no position)", "无（不含位置信息）"))
        rows.append({"encoding": enc, "acts": acts,
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


def _spread(values: list) -> dict | None:
    """runner.seed_stats of per-seed numbers, unrounded, with the values themselves; None if any is None."""
    stats = seed_stats(values, decimals=None)
    return None if stats is None else {**stats, "values": values}


def context_effect(results: dict | None = None, encoding: str = "alibi") -> dict:
    """The loss at each multiple against the sliding-window baseline, seed by seed (paired: the same
    characters, the same model). The baseline predicts every scored character from exactly L
    preceding characters; at multiple m the scored characters have (m-1)L+1 .. mL (m = 1: 1 .. L).
    So difference["1"] > 0 is the early-position handicap of a window of L, measured directly, and
    difference[m] < 0 for m > 1 means the longer context (and the new positions) helped.
    Returns dict(sliding (mean over seeds), difference {m: {"mean", "min", "max", "values"} of
    loss[m] - sliding_loss over seeds, None where the encoding has no value}). Reads `results`
    (default: data/)."""
    results = load_results("extrapolation") if results is None else results
    runs = [r for r in results["runs"] if r["encoding"] == encoding]
    if not runs:
        raise ValueError(f"encoding {encoding!r} is not in these results; have {list(results['summary'])}")
    if any("sliding_loss" not in r for r in runs):
        raise ValueError("these results have no sliding-window baseline (sliding_loss): re-run `make experiments`")
    sliding = [r["sliding_loss"] for r in runs]
    diff = {m: _spread([None if r["loss"][m] is None else r["loss"][m] - r["sliding_loss"] for r in runs])
            for m in runs[0]["loss"]}
    return {"sliding": sum(sliding) / len(sliding), "difference": diff}


def probe_gains(results: dict, group: str, *, key: str = "probe_summary") -> dict:
    """The retrieval probe of one encoding (results = the extrapolation results) or one fine-tune arm
    (results = the context-extension results, key="finetuned_probe_summary"): {(multiple, distance):
    cell}, each cell {"multiple", "window", "distance", and mean/std/min/max over seeds of loss,
    control_loss, gain, accuracy, control_accuracy} (None where the model has no value)."""
    table = results.get(key)
    if not table:
        raise ValueError(f"these results have no {key!r}: re-run `make experiments`")
    if group not in table:
        raise ValueError(f"group must be one of {list(table)}, got {group!r}")
    return {(c["multiple"], c["distance"]): c for c in table[group]}


def finetune_leads(extension: dict | None = None, over: str = "none") -> dict:
    """How much each fine-tune arm beats the arm `over` (default: plain RoPE fine-tuned), seed by seed
    (paired: the same pre-trained model, the same fine-tune batches): method -> multiple ->
    {"mean", "min", "max", "values"} of loss[over] - loss[method] (> 0: the method is better).
    Reads `extension` (default: data/)."""
    extension = load_results("context_extension") if extension is None else extension
    fts = extension["finetuned"]
    arms = list(dict.fromkeys(f["method"] for f in fts))
    if over not in arms:
        raise ValueError(f"over must be one of the fine-tune arms {arms}, got {over!r}")
    base = {f["seed"]: f["loss"] for f in fts if f["method"] == over}
    out = {}
    for method in arms:
        mine = {f["seed"]: f["loss"] for f in fts if f["method"] == method}
        out[method] = {m: _spread([base[s][m] - mine[s][m] for s in sorted(mine)]) for m in mine[min(mine)]}
    return out
