"""The arena's one table: per method, each measurement's mean over seeds and its 95% confidence interval
(Student's t, printing.mean_ci), the budget it got, and what each number means.

    columns  loss at L, 2L, 4L, 8L (nats per character on the same last L characters; lower is better);
             exactly-L (the same characters, each predicted from exactly L before it: the sliding baseline);
             probe gain at L and at the longest window (control loss - probe loss on the second copy of a random
             string, the first copy at the far distance; higher = the model retrieves it; 0 = it does not)
    cell     mean +- half-width of the 95% t-interval over the method's seeds (n = 1: the mean alone)
"""
from __future__ import annotations

from ..i18n import tr
from ..printing import mean_ci

LEVEL = 0.95


def _columns(multiples) -> list:
    """[(key, header, reads the record)] of the table's columns."""
    top = max(multiples)

    def probe_far(m):
        def read(record):
            cells = [c for c in record["probe"] if c["multiple"] == m]
            return max(cells, key=lambda c: c["distance"])["gain"] if cells else None
        return read

    cols = [(f"loss_{m}L", f"{m}L" if m > 1 else "L", lambda r, m=m: r["loss"][str(m)]) for m in multiples]
    cols.append(("exactly_L", "exactly L", lambda r: r["sliding_loss"]))
    cols.append(("probe_gain_L", "probe gain L", probe_far(1)))
    if top > 1:
        cols.append((f"probe_gain_{top}L", f"probe gain {top}L", probe_far(top)))
    return cols


def description(protocol: dict) -> str:
    """What the table's numbers are, with the protocol's sizes (a record's stored protocol), in the library's
    language (i18n.tr: English unless a notebook sets Chinese; table.json is written in English)."""
    L, top, W, P = protocol["train_len"], max(protocol["eval_multiples"]), protocol["eval_windows"], \
        protocol["probe_windows"]
    steps, batch = protocol["steps"], protocol["batch_size"]
    return tr(
        f"Loss: mean cross-entropy in nats per character (lower is better) on the last L = {L} characters of "
        f"{W} held-out windows of m * L characters that end at the same places for every "
        f"m. exactly L: the same characters, each predicted from exactly L characters (sliding windows). Probe "
        f"gain: control loss - probe loss (nats per character) on the second copy of a random string whose first "
        f"copy sits at the far distance of a window of L and of {top}L ({P} probes; "
        f"0 = nothing retrieved, higher is better). Each cell: the mean over seeds +- the half-width of its "
        f"{LEVEL:.0%} confidence interval (Student's t, n - 1 degrees of freedom); n/a: the method has no value "
        f"there (a learned table past L). Budget: training methods all get the same {steps} steps of "
        f"{batch} x {L} characters, seeds, batches and schedule (none is tuned); inference "
        f"methods get no training: they change the trained RoPE model of the same seed.",
        f"损失：在 {W} 个留出的、长为 m * L 个字符的窗口（对每个 m，窗口的结尾位置都相同）中，"
        f"最后 L = {L} 个字符上的平均交叉熵，单位是 nats/字符（越低越好）。恰好 L：同样这些字符，"
        f"每个都只由它前面恰好 L 个字符来预测（滑动窗口）。探针增益：一个随机字符串的"
        f"第二份拷贝上的对照损失减去探针损失（nats/字符），它的第一份拷贝放在长为 L 和 {top}L "
        f"的窗口中最远的距离处（{P} 个探针；0 = 什么也没取回，越高越好）。每一格："
        f"各种子的均值 +- 其 {LEVEL:.0%} 置信区间的半宽（Student t 分布，自由度 n - 1）；"
        f"n/a：该方法在那里没有值（超过 L 的可学习位置表）。预算：所有训练类方法都得到"
        f"同样的 {steps} 步（每步 {batch} x {L} 个字符）、同样的种子、批次和学习率调度"
        f"（没有哪个被调参）；推理类方法不做任何训练：它们改动的是同一种子训练好的 RoPE 模型。")


def arena_table(records: dict, methods, seeds) -> dict:
    """The table of `records` ({(method, seed): record}, cache.cached_records) for `methods` x `seeds`: {"columns":
    [header...], "keys": [key...], "multiples", "train_len", "description", "rows": [{"method", "kind", "paper",
    "note", "budget", "seeds", "cells": {key: mean_ci or None}}], "provenance": the versions that made them}."""
    chosen = [records[m, s] for m in methods for s in seeds if (m, s) in records]
    if not chosen:
        raise ValueError("records: no record of these methods and seeds (run the arena first)")
    protocol = chosen[0]["protocol"]
    multiples = sorted(protocol["eval_multiples"])
    cols = _columns(multiples)
    rows = []
    for m in methods:
        runs = [records[m, s] for s in seeds if (m, s) in records]
        if not runs:
            continue
        first = runs[0]
        budget = (f"{first['budget']['steps']} steps x {first['budget']['batch_size']} x {first['budget']['train_len']}"
                  if first["kind"] == "training" else f"0 steps ({first['budget']['trained_model'].split()[0]}'s)")
        rows.append({"method": m, "kind": first["kind"], "paper": first["paper"], "note": first["note"],
                     "budget": budget, "seeds": [r["seed"] for r in runs],
                     "cells": {key: mean_ci([read(r) for r in runs], LEVEL) for key, _, read in cols}})
    made = sorted({(r["posenc_lib_version"], r["torch_version"], r["threads"], r["world_size"], r["device"])
                   for r in chosen})
    return {"columns": [h for _, h, _ in cols], "keys": [k for k, _, _ in cols], "multiples": multiples,
            "train_len": protocol["train_len"], "description": description(protocol), "rows": rows,
            "provenance": [dict(zip(("posenc_lib_version", "torch_version", "threads", "world_size", "device"), p))
                           for p in made]}


def _cell(stats: dict | None, sep: str = " ± ") -> str:
    """One cell (a mean_ci dict): "mean ± half-width" at 3 decimals, the mean alone for one seed, n/a for None."""
    if stats is None:
        return "n/a"
    if stats["half_width"] is None:
        return f"{stats['mean']:.3f}"
    return f"{stats['mean']:.3f}{sep}{stats['half_width']:.3f}"


def format_table(table: dict) -> str:
    """The table as Markdown: one row per method, then what the numbers mean and what made them."""
    head = ["method", "kind", "seeds", "budget"] + table["columns"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table["rows"]:
        cells = [_cell(row["cells"][k]) for k in table["keys"]]
        lines.append("| " + " | ".join([row["method"], row["kind"], str(len(row["seeds"])), row["budget"]] + cells)
                     + " |")
    made = "; ".join(f"posenc {p['posenc_lib_version']}, torch {p['torch_version']}, {p['threads']} thread(s), "
                     f"{p['world_size']} process(es) on {p['device']}" for p in table["provenance"])
    return "\n".join(lines) + f"\n\n{table['description']}\n\nMade with: {made}.\n"
