"""Add the learned T5 bias tables ("t5_bias") to the cached data/experiments_extrapolation.json.

    .venv/bin/python tools/add_t5_bias.py            # re-train, compare, write only if every loss matches
    .venv/bin/python tools/add_t5_bias.py --dry-run  # re-train and compare, write nothing

The cached run predates the "t5_bias" key that `runner.train_and_evaluate` now records. Instead of
re-running every experiment, this re-trains the cached run's T5 seeds exactly as `make experiments`
does (`runner.train_and_evaluate("t5", seed, cfg)` with the cached config, one torch thread as in each
worker) and checks that each re-trained model's losses at every multiple equal the cached ones
EXACTLY. Only then is the bias table added to those runs; nothing else in the file changes (checked:
the file without the new keys serialises to exactly the bytes it had). Any mismatch: exit 1, nothing
written.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from posenc_lib.experiments import config_from
from posenc_lib.experiments import runner as R
from posenc_lib.experiments.results import EXTRAPOLATION_FILE, data_file

OTHER_FIELDS = ("sliding_loss", "per_position_loss", "train_curve", "probe", "parameters")


def _dump(result: dict) -> str:
    return json.dumps(result, indent=1) + "\n"  # as results.write_results writes it


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="re-train and compare only; write nothing")
    args = parser.parse_args(argv)
    path = data_file(EXTRAPOLATION_FILE)
    text = path.read_text(encoding="utf-8")
    cached = json.loads(text)
    if _dump(cached) != text:
        print(f"{path} does not round-trip byte for byte through json; not touching it", file=sys.stderr)
        return 1
    cfg = config_from(cached)
    t5_runs = [r for r in cached["runs"] if r["encoding"] == "t5"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each worker of `make experiments`: float sums in the same order
    tables, ok = {}, True
    try:
        for run in t5_runs:
            start = time.perf_counter()
            again = R.train_and_evaluate("t5", run["seed"], cfg, progress=lambda n: None)
            same = again["loss"] == run["loss"]
            others = {f: again[f] == run[f] for f in OTHER_FIELDS}
            print(f"t5 seed {run['seed']}: losses {again['loss']} vs cached {run['loss']}: "
                  f"{'EQUAL' if same else 'DIFFERENT'}; also equal: {others} ({time.perf_counter() - start:.0f} s)")
            ok = ok and same
            tables[run["seed"]] = again["t5_bias"]
    finally:
        torch.set_num_threads(threads)
    if not ok:
        print("some re-trained loss differs from the cached one: nothing written", file=sys.stderr)
        return 1
    if args.dry_run:
        return 0
    for run in t5_runs:
        run["t5_bias"] = tables[run["seed"]]
    stripped = json.loads(_dump(cached))
    for run in stripped["runs"]:
        run.pop("t5_bias", None)
    assert _dump(stripped) == text, "only the t5_bias keys may change"
    path.write_text(_dump(cached), encoding="utf-8")
    print(f"added t5_bias ({len(tables)} runs) to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
