"""One row per encoding for notebook 09's summary table: where it acts, what it costs, what it measured."""
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
