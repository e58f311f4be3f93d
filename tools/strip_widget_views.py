"""Drop stored ipywidgets views from executed notebooks, the one thing nbclient cannot leave out.

`make refresh` executes the notebooks with nbconvert, whose ExecutePreprocessor (nbclient) already
keeps out the saved widget state (`store_widget_state=False`) and the per-cell execution timestamps
(`record_timing=False`). The kernel still sends every displayed widget as an output of MIME type
application/vnd.jupyter.widget-view+json, and a stored view whose state is not saved shows "model not
found" in JupyterLab; without it, the learner sees the static figure above and re-runs the cell to
get live sliders. This script removes the widget view from those outputs and keeps their text/plain
(the course's figures say there "live figure with sliders: run this cell"), which nbval compares in
strict mode like any other output; an output left with nothing else is removed. It also joins
consecutive stream outputs of one cell (the kernel sometimes flushes one print in two chunks, which
would store the same text in two pieces from run to run). It writes the notebook back as nbformat does.

Usage: python tools/strip_widget_views.py notebooks/*.ipynb
"""
import json
import sys

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def strip(path: str) -> bool:
    """Remove the widget views from the outputs of the notebook at `path` in place; True when there were any."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    changed = False
    for cell in nb["cells"]:
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                changed = True
                if not data:
                    continue
            previous = kept[-1] if kept else None
            if (output.get("output_type") == "stream" and previous is not None
                    and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
                text = "".join(previous["text"]) + "".join(output["text"])
                previous["text"] = text.splitlines(keepends=True)
                changed = True
                continue
            kept.append(output)
        if "outputs" in cell:
            cell["outputs"] = kept
    if changed:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)  # nbformat's own layout, so diffs stay small
            f.write("\n")
    return changed


if __name__ == "__main__":
    for p in sys.argv[1:]:
        if strip(p):
            print(f"stripped widget views (or joined stream chunks) in {p}")
