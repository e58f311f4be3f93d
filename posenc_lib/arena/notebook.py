"""The arena as notebook 07 (section 12) reads it: a preset's cached table, printed compactly and explained in
the reader's language; two presets side by side; one arm of the cache run again into a temporary folder and
compared with its record.

    table = load_table("laptop")                   # data/arena/laptop/table.json (`make arena` writes it)
    print(format_compact(table)); print(describe(table, "laptop"))
    print(format_scales(table, load_table("large", missing_ok=True)))   # one line while there is no large table
    again = rerun_arm("rerope", seed=0)            # the cached arm, made again in a temporary folder
    print(format_rerun(again))
"""
from __future__ import annotations

import contextlib
import json
import math
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import torch

from .. import _checks
from ..experiments.arena_methods import ARENA_METHODS
from ..experiments.paths import data_dir, data_file
from ..i18n import display_width, language, ljust, tr, wrap
from . import cache, run
from .presets import PRESETS, ArenaConfig, arena_config
from .table import _cell, description

TABLE = "table.json"


def make_command(preset: str) -> str:
    """The command that fills data/arena/<preset>/ (the laptop preset's is `make arena`)."""
    if preset == "laptop":
        return "run `make arena` (python -m posenc_lib.arena --preset laptop) in a clone of the repository"
    return f"run `python -m posenc_lib.arena --preset {preset}` in a clone of the repository"


def arena_dir(preset: str = "laptop", directory: Path | str | None = None) -> Path:
    """The cache folder of `preset`: `directory` when given, else data/arena/<preset> (experiments.paths)."""
    _checks.choice("preset", preset, PRESETS)
    return Path(directory) if directory is not None else data_dir(must_exist=False) / "arena" / preset


def load_table(preset: str = "laptop", directory: Path | str | None = None, *, missing_ok: bool = False):
    """The table `python -m posenc_lib.arena --preset <preset>` saved (arena.table.arena_table's dict, from
    <arena_dir>/table.json). A missing file: FileNotFoundError naming it and the command that makes it, or None
    with missing_ok=True."""
    path = arena_dir(preset, directory) / TABLE
    if missing_ok and not path.is_file():
        return None
    path = data_file(TABLE, path.parent, made_by=make_command(preset))
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not an arena table ({err}); {make_command(preset)} to write it again") from None
    if not isinstance(table, dict) or not {"rows", "keys", "multiples", "train_len"} <= set(table):
        raise ValueError(f"{path}: not an arena table (no rows, keys, multiples, train_len); "
                         f"{make_command(preset)} to write it again")
    return table


def load_records(preset: str = "laptop", directory: Path | str | None = None) -> dict:
    """{(method, seed): record} of every run cached in <arena_dir>/runs/ (each checked by cache.read_record), for
    claims.paper_comparison's paired test. No record there: FileNotFoundError naming the folder and the command."""
    folder = arena_dir(preset, directory) / "runs"
    paths = sorted(folder.glob("*.seed*.json")) if folder.is_dir() else []
    if not paths:
        raise FileNotFoundError(f"{folder} holds no run record: {make_command(preset)}")
    records = [cache.read_record(path) for path in paths]
    return {(r["method"], r["seed"]): r for r in records}


# ------------------------------------------------------------------------------------------------ printing
def _check_table(table) -> dict:
    if not isinstance(table, dict) or "rows" not in table or "keys" not in table:
        raise TypeError(f"table must be arena_table's dict (load_table), got {type(table).__name__}")
    return table


def _header(key: str) -> str:
    """A column's short header: L, 2L, ... for the losses, then the baseline and the probe gains."""
    kind, _, length = key.rpartition("_")          # loss_2L -> ("loss", "2L"); probe_gain_L -> ("probe_gain", "L")
    length = "L" if length == "1L" else length
    if kind == "exactly":
        return tr("exactly L", "恰好 L")
    return length if kind == "loss" else tr(f"probe {length}", f"探针 {length}")


def _aligned(rows: list, left: int) -> list:
    """Rows of cells as lines of columns two spaces apart: the first `left` columns to the left, the others to
    the right, by display width (a Chinese character takes two columns)."""
    widths = [max(display_width(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(ljust(c, w) if i < left else " " * (w - display_width(c)) + c
                      for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows]


def _kind(kind: str) -> str:
    return tr("training", "训练") if kind == "training" else tr("inference", "推理")


def format_compact(table: dict) -> str:
    """The table as plain text in two blocks of at most 100 columns, one row per method in each: the losses
    (L ... the longest window, exactly L), then the method's kind and its probe gains. A cell: the mean ± the
    half-width of its 95% interval over seeds at 3 decimals (the mean alone for one seed; n/a where the method
    has no value)."""
    table = _check_table(table)
    losses = [k for k in table["keys"] if not k.startswith("probe_")]
    probes = [k for k in table["keys"] if k.startswith("probe_")]
    seeds = "/".join(map(str, sorted({len(row["seeds"]) for row in table["rows"]})))

    def block(keys, kind):
        head = [tr("method", "方法")] + [tr("kind", "类型")] * kind + [_header(k) for k in keys]
        rows = [[row["method"]] + [_kind(row["kind"])] * kind + [_cell(row["cells"][k], "±") for k in keys]
                for row in table["rows"]]
        return _aligned([head] + rows, left=1 + kind)
    return "\n".join(
        [tr(f"loss (nats/char, lower is better): mean ± half-width of its 95% interval over {seeds} seed(s); "
            f"L = {table['train_len']}",
            f"损失（nats/字符，越低越好）：{seeds} 个种子的均值 ± 其 95% 置信区间的半宽；L = {table['train_len']}")]
        + block(losses, 0) + ["", tr("probe gain (nats/char, higher is better; 0 = nothing retrieved)",
                                     "探针增益（nats/字符，越高越好；0 = 什么也没取回）")] + block(probes, 1))


def describe(table: dict, preset: str = "laptop", width: int = 100) -> str:
    """What the numbers of `table` mean and the budget each method got (arena.table.description), in the
    library's language, in lines of at most `width` columns (i18n.wrap). The preset's protocol must be the one
    the table was made with (its English description is compared with the stored one): a table made with other
    sizes (`--set`) raises ValueError."""
    table = _check_table(table)
    protocol = asdict(arena_config(preset).protocol)
    with language("en"):   # table.json is written in English
        made_with_preset = description(protocol) == table.get("description")
    if not made_with_preset:
        raise ValueError(f"table: not made with the {preset!r} preset's protocol (its description differs); "
                         f"print table['description'] instead")
    return wrap(description(protocol), width)


VERDICT_TEXT = {"agrees": ("agrees", "一致"), "disagrees": ("disagrees", "相反"),
                "not resolved": ("not resolved", "未定")}   # claims.VERDICTS in either language


def format_claims(rows: list) -> str:
    """claims.paper_comparison's rows as a plain-text table: per claim the method, what it is compared with, the
    column, the paper's side of d (the method's value minus the other's), d's mean and 95% interval, the verdict;
    then the count of each verdict."""
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "verdict" in r for r in rows):
        raise TypeError("rows must be claims.paper_comparison's list of dicts")

    def num(x):
        return "n/a" if x is None else f"{x:+.3f}"
    body = []
    for r in rows:
        d = r.get("difference")
        interval = "n/a" if d is None else num(d["mean"]) + ("" if d["low"] is None else
                                                             f" [{num(d['low'])}, {num(d['high'])}]")
        side = (f"d < {r['tolerance']:+.3f}" if r["direction"] == "flat" else
                {"lower": "d < 0", "higher": "d > 0"}[r["direction"]])
        against = r["compared_with"] or tr(f"itself at {r['reference']}", f"自身的 {r['reference']}")
        body.append([r["method"], against, r["measure"], side, interval, tr(*VERDICT_TEXT[r["verdict"]])])
    head = [tr("method", "方法"), tr("against", "对照"), tr("column", "列"), tr("paper", "论文"),
            tr("d (95% interval)", "d（95% 区间）"), tr("verdict", "结论")]
    counts = ", ".join(f"{sum(r['verdict'] == v for r in rows)} {tr(*VERDICT_TEXT[v])}" for v in VERDICT_TEXT)
    return "\n".join(_aligned([head] + body, left=len(head)) + [counts])


# ------------------------------------------------------------------------------------------------ two scales
def _loss(row: dict, m: int):
    cell = row["cells"].get(f"loss_{m}L")
    return None if cell is None else cell["mean"]


def rises(table: dict, multiple: int | None = None) -> dict:
    """{method: its mean loss at multiple * L minus its mean loss at L} (default: the longest window), None where
    the method has no value (a learned table past L)."""
    table = _check_table(table)
    top = max(table["multiples"]) if multiple is None else multiple
    if top not in table["multiples"]:
        raise ValueError(f"multiple must be one of the table's {table['multiples']}, got {multiple!r}")
    out = {}
    for row in table["rows"]:
        at_L, at_top = _loss(row, 1), _loss(row, top)
        out[row["method"]] = None if at_L is None or at_top is None else at_top - at_L
    return out


def scale_rows(small: dict, large: dict, reference: str = "rope") -> list:
    """Per method in both tables (in `small`'s order): each table's loss at L and at its longest window (means
    over seeds), the rise between them, and whether the method sits on the same side of `reference`'s rise in
    both: "agree" (both lower or both higher), "differ", None when a rise is missing (or for the reference)."""
    small, large = _check_table(small), _check_table(large)
    tops = (max(small["multiples"]), max(large["multiples"]))
    by_name = [{row["method"]: row for row in t["rows"]} for t in (small, large)]
    if any(reference not in names for names in by_name):
        raise ValueError(f"reference: {reference!r} must be a method of both tables")

    rise = [rises(small), rises(large)]
    ref_rise = [r[reference] for r in rise]
    out = []
    for name in (r["method"] for r in small["rows"]):
        if name not in by_name[1]:
            continue
        rows = [names[name] for names in by_name]
        both = [r[name] for r in rise]
        sides = [None if r is None or ref is None else math.copysign(1, r - ref) for r, ref in zip(both, ref_rise)]
        verdict = None if name == reference or None in sides else ("agree" if sides[0] == sides[1] else "differ")
        out.append({"method": name, "kind": rows[0]["kind"], "loss_L": [_loss(r, 1) for r in rows],
                    "loss_top": [_loss(r, top) for r, top in zip(rows, tops)], "rise": both, "vs_reference": verdict})
    return out


def no_large_table() -> str:
    """The one line shown while data/arena/large/table.json does not exist."""
    return tr("No large-preset table exists yet (data/arena/large/table.json): no GPU machine has run it.",
              "大预设的表还不存在（data/arena/large/table.json）：还没有 GPU 机器运行过它。")


def format_scales(small: dict, large: dict | None, names=("laptop", "large"), reference: str = "rope") -> str:
    """Two presets' tables side by side (scale_rows), with a last line on where they agree; one line
    (no_large_table) when `large` is None."""
    if large is None:
        return no_large_table()
    rows = scale_rows(small, large, reference)
    tops = (max(small["multiples"]), max(large["multiples"]))

    def num(x):
        return "n/a" if x is None else f"{x:.3f}"

    def made(t):
        return "/".join(sorted({p["device"] for p in t.get("provenance", [])})) or "?"
    lines = [f"{name}: L = {t['train_len']}, {made(t)}" for name, t in zip(names, (small, large))]
    head = [tr("method", "方法")]
    for n, top in zip(names, tops):
        head += [f"{n} L", f"{n} {top}L", tr(f"{n} rise", f"{n} 上升")]
    head.append(tr(f"rise vs {reference}", f"上升相对 {reference}"))
    body = []
    for r in rows:
        cells = [r["method"]]
        for i in range(2):
            cells += [num(r["loss_L"][i]), num(r["loss_top"][i]), num(r["rise"][i])]
        verdict = {"agree": tr("same side", "同侧"), "differ": tr("differs", "不同"), None: "-"}[r["vs_reference"]]
        body.append(cells + [verdict])
    lines += _aligned([head] + body, left=1)
    judged = [r for r in rows if r["vs_reference"] is not None]
    differ = [r["method"] for r in judged if r["vs_reference"] == "differ"]
    lines.append(tr(f"rise from L to the longest window, compared with {reference}'s (means): the same side at both "
                    f"scales for {len(judged) - len(differ)} of {len(judged)} methods; differs for: "
                    f"{', '.join(differ) or 'none'}",
                    f"从 L 到最长窗口的上升，与 {reference} 的相比（均值）：{len(judged)} 种方法中有 "
                    f"{len(judged) - len(differ)} 种在两个规模下位于同一侧；不同的：{', '.join(differ) or '无'}"))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ one arm again
def rerun_arm(method: str, seed: int = 0, preset: str = "laptop", directory: Path | str | None = None,
              out_dir: Path | str | None = None) -> dict:
    """Run arm (`method`, `seed`) of the cache in <arena_dir(preset, directory)> again, with the protocol, torch
    threads and (for an inference method) the trained weights its cached record names, into `out_dir` (default:
    a temporary folder, removed afterwards). Returns {"method", "seed", "cached": the cached record, "rerun": the
    new one}: the same code as `python -m posenc_lib.arena`, so on the same torch and thread count the numbers
    are the same."""
    if method not in ARENA_METHODS:
        raise ValueError(f"method: unknown {method!r}; the arena's methods are {sorted(ARENA_METHODS)}")
    folder = arena_dir(preset, directory)
    path = cache.record_path(folder, method, seed)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: {make_command(preset)}")
    cached = cache.read_record(path)
    arena = ArenaConfig(preset, cache.record_protocol(cached), (method,))
    spec = ARENA_METHODS[method]
    threads = torch.get_num_threads()
    with contextlib.ExitStack() as stack:
        out = Path(out_dir) if out_dir is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        torch.set_num_threads(cached["threads"])
        stack.callback(torch.set_num_threads, threads)
        if spec.kind == "inference":
            state = cache.state_path(folder, spec.base, seed)
            if not state.is_file():
                raise FileNotFoundError(f"{state} is missing: the trained {spec.base} model {method} changes; "
                                        f"{make_command(preset)}")
            cache.state_path(out, spec.base, seed).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(state, cache.state_path(out, spec.base, seed))
            run.inference_job(method, seed, arena, str(out), progress=lambda n: None)
        else:
            run.train_job(method, seed, arena, str(out), progress=lambda n: None)
        rerun = cache.read_record(cache.record_path(out, method, seed))
    return {"method": method, "seed": seed, "cached": cached, "rerun": rerun}


def compared(result: dict) -> list:
    """[(what, cached, rerun)] of rerun_arm's result: the loss at each window, the exactly-L baseline, every
    probe cell's gain and, for a training method, the last logged training loss."""
    cached, rerun = result["cached"], result["rerun"]
    rows = [(f"loss {m}L" if m != "1" else "loss L", cached["loss"][m], rerun["loss"][m]) for m in cached["loss"]]
    rows.append(("exactly L", cached["sliding_loss"], rerun["sliding_loss"]))
    for old, new in zip(cached["probe"], rerun["probe"], strict=True):
        if (old["multiple"], old["distance"]) != (new["multiple"], new["distance"]):
            raise ValueError("result: the two records' probe cells differ (another protocol?)")
        rows.append((f"probe {old['multiple']}L d={old['distance']}", old["gain"], new["gain"]))
    if "train_curve" in cached:
        rows.append(("train loss, last step", cached["train_curve"][-1][1], rerun["train_curve"][-1][1]))
    return rows


def largest_difference(result: dict) -> float:
    """The largest |cached - rerun| over `compared(result)` (0.0 when every number is the same; inf when one of a
    pair is missing)."""
    gaps = [math.inf if (a is None) != (b is None) else 0.0 if a is None else abs(a - b)
            for _, a, b in compared(result)]
    return max(gaps)


def format_rerun(result: dict) -> str:
    """rerun_arm's result as text: each compared number, cached and rerun, at the records' precision."""
    rows = compared(result)
    width = max(len(what) for what, _, _ in rows)

    def num(x):
        return "n/a" if x is None else f"{x:.5f}"
    head = f"{result['method']}, {tr('seed', '种子')} {result['seed']}"
    lines = [head, f"{'':<{width}}  {tr('cached', '缓存'):>8}  {tr('rerun', '重跑'):>8}"]
    lines += [f"{what:<{width}}  {num(a):>8}  {num(b):>8}" for what, a, b in rows]
    return "\n".join(lines)
