"""`make bench` (python tools/bench.py): the speed numbers of DESIGN section 3, measured, not timed in tests.

1. RoPE on a (4, 16, 2048, 128) float32 tensor, CPU with 2 threads (and CUDA when present):
   `apply_rope` as a user calls it (positions in, angles and cos/sin computed inside), and the core
   `rope.rotate` with cos/sin precomputed, against
     - the eager rotate-half form `x * cos + rotate_half(x) * sin` with cos/sin precomputed, and
     - `x.clone()` (one read and one write of the tensor: the memory-bound floor).
   The candidates are timed round-robin in one run (one call of each per round), so a busy machine
   slows them alike; the medians give the ratios (the verdict). Goals: eager / ours >= 2.5 and clone / ours
   >= 0.6. The quartiles of the ratio within each round are printed too: their spread shows how much
   the machine's speed moved during the run.
   The results must be identical (torch.equal) to the eager form.
2. Every interactive figure in posenc_lib.widgets.BUILDERS: its first control (the first one that
   has another valid value here) is moved to other valid values a few times, and the median redraw
   time (fig.last_redraw_seconds) is compared with the 100 ms goal.

Options: --rounds N (default 15), --no-widgets, --no-rope, --threads N (default 2).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch

from posenc_lib import rope

EAGER_GOAL, COPY_GOAL, REDRAW_GOAL_MS = 2.5, 0.6, 100.0


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _eager_rotate_half(x, cos_full, sin_full):
    return x * cos_full + rope.rotate_half(x) * sin_full


def bench_rope(device="cpu", *, shape=(4, 16, 2048, 128), rounds: int = 15, seed: int = 0) -> dict:
    """Median seconds of each candidate and the ratios; raises if a result differs from the eager form."""
    device = torch.device(device)
    generator = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape, generator=generator).to(device)
    seq, dim = shape[-2], shape[-1]
    positions = torch.arange(seq, device=device)
    inv_freq, _ = rope.rope_inv_freq(dim, device=device)
    cos, sin = rope.rope_cos_sin(positions, inv_freq)  # (seq, dim/2) float32, the tables apply_rope uses
    cos_full, sin_full = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)  # (seq, dim)

    candidates = {
        "apply_rope": lambda: rope.apply_rope(x, positions),
        "rope.rotate": lambda: rope.rotate(x, cos, sin),
        "eager": lambda: _eager_rotate_half(x, cos_full, sin_full),
        "clone": lambda: x.clone(),
    }
    with torch.no_grad():
        reference = candidates["eager"]()
        identical = {name: bool(torch.equal(candidates[name](), reference)) for name in ("apply_rope", "rope.rotate")}
        del reference
        times = {name: [] for name in candidates}
        for _ in range(2):  # warm-up: allocator, caches
            for run in candidates.values():
                run()
        _sync(device)
        for _ in range(rounds):
            for name, run in candidates.items():
                _sync(device)
                start = time.perf_counter()
                run()
                _sync(device)
                times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(values) for name, values in times.items()}

    def paired(baseline, name):  # the ratio within each round, then its quartiles: how much the machine moved
        return statistics.quantiles([b / t for b, t in zip(times[baseline], times[name])], n=4)

    return {
        "device": str(device), "shape": tuple(shape), "rounds": rounds, "median_s": median, "identical": identical,
        "eager_ratio": {name: median["eager"] / median[name] for name in ("apply_rope", "rope.rotate")},
        "copy_ratio": {name: median["clone"] / median[name] for name in ("apply_rope", "rope.rotate")},
        "round_quartiles": {name: {"eager": paired("eager", name), "clone": paired("clone", name)}
                            for name in ("apply_rope", "rope.rotate")},
    }


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "below goal"


def print_rope(result: dict) -> bool:
    m = result["median_s"]
    print(f"\nRoPE on {result['device']}, x {result['shape']} float32, median of {result['rounds']} round-robin rounds")
    for name in ("apply_rope", "rope.rotate", "eager", "clone"):
        print(f"  {name:12s} {1e3 * m[name]:9.2f} ms")
    ok = True
    for name in ("apply_rope", "rope.rotate"):
        eager, copy, same = result["eager_ratio"][name], result["copy_ratio"][name], result["identical"][name]
        ok &= eager >= EAGER_GOAL and copy >= COPY_GOAL and same
        print(f"  {name:12s} eager/ours = {eager:5.2f} (goal >= {EAGER_GOAL}: {_verdict(eager >= EAGER_GOAL)})   "
              f"clone/ours = {copy:4.2f} (goal >= {COPY_GOAL}: {_verdict(copy >= COPY_GOAL)})   "
              f"identical to eager: {'yes' if same else 'NO'}")
    for name, q in result["round_quartiles"].items():
        print(f"  {name:12s} per-round ratios, quartiles: eager/ours {q['eager'][0]:.2f} {q['eager'][1]:.2f} "
              f"{q['eager'][2]:.2f}   clone/ours {q['clone'][0]:.2f} {q['clone'][1]:.2f} {q['clone'][2]:.2f}")
    return ok


def _other_values(control) -> list:
    """A few valid values of an ipywidgets control different from its current one."""
    current = control.value
    if isinstance(current, bool):
        return [not current, current]
    options = getattr(control, "_options_values", None)
    if options is None and hasattr(control, "options"):
        options = [o[1] if isinstance(o, tuple) and len(o) == 2 else o for o in control.options]
    if options is not None:
        values = [v for v in options if v != current]
    elif all(hasattr(control, a) for a in ("min", "max")) and not isinstance(current, (tuple, list)):
        lo, hi = control.min, control.max
        if type(control).__name__.endswith("LogSlider"):  # min/max are exponents
            lo, hi = control.base ** lo, control.base ** hi
        candidates = [lo, hi, lo + (hi - lo) / 2]
        if isinstance(current, int):
            step = getattr(control, "step", 1) or 1
            candidates = [int(lo + round((c - lo) / step) * step) for c in candidates]
        values = [v for v in candidates if v != current]
    else:
        values = []
    return (values * 5)[:5] if values else []


def bench_widgets(changes: int = 5) -> list[dict]:
    """For each builder: build it, move its first control `changes` times, median redraw seconds."""
    from posenc_lib.widgets import BUILDERS

    results = []
    for name, builder in BUILDERS.items():
        try:
            fig = builder()
            # the first control with another valid value (e.g. a device picker on a CPU-only machine has none)
            movable = [(n, c, _other_values(c)[:changes]) for n, c in fig.controls.items()]
            movable = [m for m in movable if m[2]]
            if not movable:
                results.append({"name": name, "error": "no control has another valid value here"})
                continue
            control_name, control, values = movable[0]
            seconds = []
            for value in values:
                before = fig.redraw_count
                control.value = value
                if fig.redraw_count > before:
                    seconds.append(fig.last_redraw_seconds)
            if not seconds:
                results.append({"name": name, "error": f"moving {control_name!r} did not redraw"})
                continue
            results.append({"name": name, "control": control_name, "redraws": len(seconds),
                            "median_ms": 1e3 * statistics.median(seconds)})
        except Exception as error:  # a builder that cannot run here (e.g. missing data) is reported, not fatal
            results.append({"name": name, "error": f"{type(error).__name__}: {error}"})
    return results


def print_widgets(results: list[dict]) -> bool:
    print(f"\nSlider redraws (first control of each figure; goal <= {REDRAW_GOAL_MS:.0f} ms in the kernel)")
    if not results:
        print("  no interactive figures registered yet (posenc_lib.widgets.BUILDERS is empty)")
        return True
    ok = True
    for r in results:
        if "error" in r:
            ok = False
            print(f"  {r['name']:26s} not measured: {r['error']}")
        else:
            good = r["median_ms"] <= REDRAW_GOAL_MS
            ok &= good
            print(f"  {r['name']:26s} {r['median_ms']:7.1f} ms  ({r['redraws']} redraws of {r['control']!r})  "
                  f"{_verdict(good)}")
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/bench.py", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-rope", action="store_true")
    parser.add_argument("--no-widgets", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"posenc bench: torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
          f"{os.cpu_count()} CPUs, load average {load:.1f}, {platform.processor() or platform.machine()}")
    print("(timings on a shared machine are noisy; the ratios compare candidates measured in the same rounds)")
    ok = True
    if not args.no_rope:
        ok &= print_rope(bench_rope("cpu", rounds=args.rounds))
        if torch.cuda.is_available():
            ok &= print_rope(bench_rope("cuda", rounds=args.rounds))
        else:
            print("\n(no CUDA device: GPU numbers skipped)")
    if not args.no_widgets:
        import matplotlib

        matplotlib.use("Agg")
        ok &= print_widgets(bench_widgets())
    print(f"\noverall: {'all goals met' if ok else 'some goals not met (see above)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
