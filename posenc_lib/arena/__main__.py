"""The command line: `python -m posenc_lib.arena` (= `make arena`); --help lists the flags. Under
`torchrun --nproc_per_node=N` the same command trains with DistributedDataParallel (arena.distributed)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..experiments.arena_methods import ARENA_METHODS
from ..experiments.paths import data_dir
from . import __doc__ as package_doc, distributed
from .claims import format_comparison, paper_comparison
from .presets import PRESETS, all_methods, arena_config
from .run import run_arena
from .table import arena_table, format_table

FIGURE = "loss_vs_length.png"


def _overrides(pairs) -> dict:
    """["steps=4", "eval_multiples=[1,2]"] -> {"steps": 4, "eval_multiples": (1, 2)} (values read as JSON)."""
    out = {}
    for pair in pairs or ():
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set takes KEY=VALUE (an ExperimentConfig field), got {pair!r}")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        out[key] = tuple(value) if isinstance(value, list) else value
    return out


def write_outputs(out: Path, table: dict, records: dict | None = None) -> str:
    """table.md, table.json and the figure into `out`; returns the Markdown. Both files end with the papers'
    direction (claims.paper_comparison: table.md's last section, table.json's "comparison"; paired per-seed
    test when `records` are given); the table's own numbers are not changed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plots.arena import render_arena

    comparison = paper_comparison(table, records)
    text = format_table(table) + "\n## Papers' direction\n\n" + format_comparison(comparison)
    (out / "table.md").write_text(text, encoding="utf-8")
    (out / "table.json").write_text(json.dumps({**table, "comparison": comparison}, indent=1) + "\n",
                                    encoding="utf-8")
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 5.6))   # each panel its own scale; RoPE is in both
    render_arena(axes, table)
    fig.savefig(out / FIGURE, dpi=100)
    plt.close(fig)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m posenc_lib.arena", description=package_doc.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=package_doc)
    parser.add_argument("--preset", choices=PRESETS, default="laptop")
    parser.add_argument("--methods", nargs="+", default=None, help="method names (default: all; --list shows them)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="default: the preset's")
    parser.add_argument("--set", nargs="+", default=None, metavar="KEY=VALUE",
                        help="change the preset's protocol (ExperimentConfig fields, e.g. steps=200)")
    parser.add_argument("--corpus", default=None, help="a folder of your own text files (default: 07's corpus)")
    parser.add_argument("--out", default=None, help="the cache folder (default: data/arena/<preset>)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2: one per core; 1 under torchrun)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when there is one)")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--table-only", action="store_true", help="the table and figure of what is cached, no run")
    parser.add_argument("--list", action="store_true", help="list the methods and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name in all_methods():
            m = ARENA_METHODS[name]
            print(f"{name:<22} {m.kind:<9} {m.paper}" + (f"  [{m.note}]" if m.note else ""))
        return
    try:
        arena = arena_config(args.preset, methods=args.methods, seeds=args.seeds, corpus=args.corpus,
                             overrides=_overrides(args.set))
    except (ValueError, TypeError) as err:
        raise SystemExit(f"python -m posenc_lib.arena: {err}") from None
    out = Path(args.out) if args.out else data_dir(must_exist=False) / "arena" / arena.preset
    dist = distributed.setup(args.device)
    start = time.perf_counter()
    failed = True
    try:
        if args.table_only:
            from .cache import cached_records
            from .run import corpus_of
            records = cached_records(out, arena.methods, arena.seeds, protocol=arena.protocol,
                                     corpus_sha256=corpus_of(arena).info["text_sha256"])
        else:
            records = run_arena(arena, out, workers=args.workers, threads=args.threads,
                                show_progress=not args.no_progress)
        failed = False
    except ValueError as err:   # a refused cache file: one line naming it
        raise SystemExit(f"python -m posenc_lib.arena: {err}") from None
    finally:
        distributed.teardown(failed=failed)   # every rank at once
    if dist.rank != 0:
        return
    text = write_outputs(out, arena_table(records, arena.methods, arena.seeds), records)
    print(text)
    print(f"wrote {out}/table.md, table.json, {FIGURE} ({len(records)} runs cached; this command: "
          f"{time.perf_counter() - start:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
