"""Make stored notebooks safe to open: drop saved widget state and widget-view outputs, and the
per-cell execution timestamps (they change on every run and would hide the real changes in a diff).

A stored widget view whose state is not saved shows "model not found" in JupyterLab; without the
view, the learner sees the static figure above it and re-runs the cell to get live sliders.
Usage: python tests/strip_widget_state.py notebooks/*.ipynb
"""
import json
import sys

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def strip(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    changed = nb.get("metadata", {}).pop("widgets", None) is not None
    for cell in nb["cells"]:
        changed |= cell.get("metadata", {}).pop("execution", None) is not None
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = [o for o in outputs if WIDGET_MIME not in o.get("data", {})]
        if len(kept) != len(outputs):
            cell["outputs"] = kept
            changed = True
    if changed:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)
            f.write("\n")
    return changed


if __name__ == "__main__":
    for p in sys.argv[1:]:
        if strip(p):
            print(f"stripped widget state / timestamps from {p}")
