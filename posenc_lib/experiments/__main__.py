"""The command line: `python -m posenc_lib.experiments` (= `make experiments`); --help lists the flags."""
from __future__ import annotations

import argparse
import platform
from dataclasses import replace
from pathlib import Path

from . import __doc__ as package_doc
from .config import EXPERIMENT_ENCODINGS, ExperimentConfig
from .corpus import CORPUS_ARCHIVE, CORPUS_FILES, write_corpus_archive
from .drope import FREQUENCIES_FILE, QUICK, FrequencyConfig, run_frequencies
from .learned import SNAPSHOT_STEM, make_learned_snapshots
from .paths import data_dir
from .runner import run_all

QUICK_DIR = Path("/tmp/posenc_experiments_quick")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m posenc_lib.experiments", description=package_doc.split("\n")[0])
    parser.add_argument("--steps", type=int, default=ExperimentConfig.steps)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(ExperimentConfig.seeds))
    parser.add_argument("--encodings", nargs="+", default=list(EXPERIMENT_ENCODINGS))
    parser.add_argument("--finetune-steps", type=int, default=ExperimentConfig.finetune_steps)
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2: one per core)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    parser.add_argument("--out", default=None, help=f"output directory (default {data_dir(must_exist=False)}; "
                                                    f"{QUICK_DIR} with --quick)")
    parser.add_argument("--no-extension", action="store_true", help="skip notebook 08's part")
    parser.add_argument("--quick", action="store_true", help="smoke run: 60 steps, 1 seed, 16 eval windows and probes")
    parser.add_argument("--learned-snapshots", action="store_true",
                        help=f"instead: notebook 04's {SNAPSHOT_STEM}.npz/.json (about 5 s)")
    parser.add_argument("--frequencies", action="store_true",
                        help=f"instead: notebook 14's truncation table and DroPE runs, {FREQUENCIES_FILE} (one "
                             f"process, --threads threads; a few minutes on one core; --quick: a smoke run)")
    parser.add_argument("--write-corpus", action="store_true",
                        help=f"instead: this Python's standard-library text as {CORPUS_ARCHIVE}, the corpus every "
                             f"run reads (the shipped one is Python 3.11.7's)")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else (QUICK_DIR if args.quick else data_dir(must_exist=False))
    if args.write_corpus:
        path = write_corpus_archive(out / CORPUS_ARCHIVE)
        print(f"wrote {path}: {len(CORPUS_FILES)} files of Python {platform.python_version()}'s standard library")
        return
    if args.frequencies:
        result = run_frequencies(QUICK if args.quick else FrequencyConfig(), out_dir=out, threads=args.threads)
        print(f"wrote {out / FREQUENCIES_FILE}: {result['provenance']['timing_whole_command']}")
        return
    if args.learned_snapshots:
        run = make_learned_snapshots(out)
        print(f"wrote {out / SNAPSHOT_STEM}.npz/.json: steps {run['steps'][0]}..{run['steps'][-1]}, "
              f"final loss {run['losses'][-1]:.4f}")
        return
    cfg = ExperimentConfig(steps=args.steps, seeds=tuple(args.seeds), encodings=tuple(args.encodings),
                           finetune_steps=args.finetune_steps)
    if args.quick:
        cfg = replace(cfg, steps=60, seeds=(0,), eval_windows=16, finetune_steps=20, warmup_steps=10,
                      finetune_seeds=(0,), probe_windows=16)
    result = run_all(cfg, out_dir=out, workers=args.workers, threads=args.threads, extension=not args.no_extension)
    ext = result["extrapolation"]
    print(f"wrote {out}: {ext['provenance']['timing_whole_command']}")
    for enc, row in ext["summary"].items():
        print(f"{enc:>11}: " + "  ".join(f"{m}L={'  n/a ' if v is None else format(v['mean'], '.3f')}"
                                         for m, v in row.items()))


if __name__ == "__main__":
    main()
