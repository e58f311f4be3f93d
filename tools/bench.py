"""`make bench` (python tools/bench.py): the course's speed numbers, measured, not timed in tests.

1. RoPE against transformers' own path, at the shapes the course and its users run (SWEEP):
   one decoding step at position 4000, the course's training batch, its evaluation at 8L, a prefill.
     - `apply_rope(x, positions)` against transformers' LlamaRotaryEmbedding (cos/sin from the
       positions) followed by the eager formula `x * cos + rotate_half(x) * sin`, on one tensor;
     - `RotaryEmbedding(q, k, positions)` against LlamaRotaryEmbedding + `apply_rotary_pos_emb(q, k)`.
   Both sides make cos/sin from the positions at every call (transformers keeps only its frequencies, and
   so does RotaryEmbedding). Goal: transformers' time / ours >= 0.9 at EVERY shape, for both.
   Then, at the prefill shape, `torch.compile(fullgraph=True)` of the rotation of q and k with cached
   cos/sin tables (`rope_cos_sin` once, `rotate` in the graph) against cloning q and k (one read and one
   write: the memory-bound floor); goal: within ~1.2x of the clone. The compiled RotaryEmbedding forward,
   which makes its tables in the graph, is timed beside it. Compile is the route to fused speed.
   Timing: torch.utils.benchmark.Timer. Each candidate's block of calls (about 1 ms: a decoding step's
   ~50 us call is repeated ~20 times) is sized once with blocked_autorange; then the candidates of a shape
   are timed round-robin, one block each per round, so a busy machine slows them alike. The ratio is
   taken within each round and its median reported, with the quartiles, whose spread shows how much the
   machine moved. Results must agree with transformers'.
2. Every interactive figure in posenc_lib.widgets.BUILDERS: its first control (the first one that
   has another valid value here) is moved to other valid values a few times, and the median redraw
   time (fig.last_redraw_seconds) is compared with the 100 ms goal.

Options: --rounds N (default 30), --no-widgets, --no-rope, --no-compile, --threads N (default 2).
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import statistics

import torch
from torch.utils.benchmark import Timer

from posenc_lib import RotaryEmbedding, apply_rope, rope_cos_sin, rope_inv_freq
from posenc_lib.rope import rotate

HF_GOAL, COMPILED_CLONE_GOAL, REDRAW_GOAL_MS = 0.9, 1.2, 100.0
# name -> ((batch, heads, seq, head_dim), first position)
SWEEP = {
    "decoding step at 4000": ((1, 32, 1, 128), 4000),
    "course training batch": ((32, 4, 64, 16), 0),
    "course evaluation at 8L": ((8, 4, 512, 16), 0),
    "prefill": ((1, 32, 4096, 128), 0),
}


def _hf(head_dim: int, device):
    """transformers' Llama rotary module and its apply function (imported here: a test dependency)."""
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as hf
    config = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    return hf.LlamaRotaryEmbedding(config).to(device), hf


def _round_robin(candidates: dict, rounds: int, block_s: float = 1e-3) -> dict:
    """Seconds per call of every candidate, one block of calls of each per round (torch.utils.benchmark's
    Timer, which also waits for a GPU). A block repeats a call shorter than block_s until it lasts about
    block_s, so one preempted call or the timer's granularity does not decide a round."""
    timers = {name: Timer("run()", globals={"run": run}, num_threads=torch.get_num_threads(), description=name)
              for name, run in candidates.items()}
    calls = {name: min(1000, max(1, math.ceil(block_s / timer.blocked_autorange(min_run_time=5 * block_s).median)))
             for name, timer in timers.items()}  # (blocked_autorange also warms each candidate up)
    times = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, timer in timers.items():
            times[name].append(timer.timeit(calls[name]).median)
    return times


def _ratio(times: dict, baseline: str, name: str) -> list:
    """baseline's time / name's time within each round: the quartiles of that ratio (the median in the middle)."""
    ratios = [b / t for b, t in zip(times[baseline], times[name])]
    return statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3


def _inputs(shape, device, seed: int):
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return [torch.randn(shape, generator=generator).to(device) for _ in range(2)]


def _rope_candidates(q, k, positions, position_ids, rope, hf_rotary, hf) -> dict:
    """The four calls bench_rope times at one shape: ours and transformers', on one tensor and on q and k."""

    def hf_one():
        cos, sin = hf_rotary(q, position_ids)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return q * cos + hf.rotate_half(q) * sin

    def hf_two():
        cos, sin = hf_rotary(q, position_ids)
        return hf.apply_rotary_pos_emb(q, k, cos, sin)

    return {"apply_rope": lambda: apply_rope(q, positions), "transformers (one tensor)": hf_one,
            "RotaryEmbedding(q, k)": lambda: rope(q, k, positions), "transformers (q, k)": hf_two}


def bench_rope(device="cpu", *, sweep: dict | None = None, rounds: int = 30, seed: int = 0) -> list[dict]:
    """For each shape: median seconds of ours and transformers' path, and the per-round ratios."""
    device = torch.device(device)
    results = []
    for label, (shape, first) in (sweep or SWEEP).items():
        q, k = _inputs(shape, device, seed)
        positions = torch.arange(first, first + shape[-2], device=device)
        position_ids = positions[None].expand(shape[0], -1)
        rope = RotaryEmbedding(shape[-1])
        candidates = _rope_candidates(q, k, positions, position_ids, rope, *_hf(shape[-1], device))
        hf_one, hf_two = candidates["transformers (one tensor)"], candidates["transformers (q, k)"]
        with torch.no_grad():
            # transformers rounds the angles m * theta to float32: up to ~1e-3 apart near position 4000
            agree = (torch.allclose(candidates["apply_rope"](), hf_one(), atol=1e-2)
                     and all(torch.allclose(a, b, atol=1e-2) for a, b in zip(rope(q, k, positions), hf_two())))
            times = _round_robin(candidates, rounds)
        results.append({"label": label, "shape": shape, "first": first, "device": str(device), "rounds": rounds,
                        "agree": agree, "median_s": {n: statistics.median(t) for n, t in times.items()},
                        "apply_rope": _ratio(times, "transformers (one tensor)", "apply_rope"),
                        "RotaryEmbedding": _ratio(times, "transformers (q, k)", "RotaryEmbedding(q, k)")})
    return results


def bench_compiled(device="cpu", *, shape=(1, 32, 4096, 128), rounds: int = 30, seed: int = 0) -> dict:
    """torch.compile(fullgraph=True) of rotating q and k by cached cos/sin tables, and of a RotaryEmbedding
    forward (its tables made in the graph), against cloning q and k, at one shape."""
    device = torch.device(device)
    q, k = _inputs(shape, device, seed)
    positions = torch.arange(shape[-2], device=device)
    cos, sin = rope_cos_sin(positions, rope_inv_freq(shape[-1], device=device)[0])  # (seq, head_dim/2), made once
    rope = RotaryEmbedding(shape[-1])
    torch._dynamo.reset()
    rotation = torch.compile(lambda a, b, c, s: (rotate(a, c, s), rotate(b, c, s)), fullgraph=True)
    module = torch.compile(lambda a, b, p: rope(a, b, p), fullgraph=True)
    candidates = {"compiled rotation, cached tables": lambda: rotation(q, k, cos, sin),
                  "compiled RotaryEmbedding(q, k)": lambda: module(q, k, positions),
                  "q.clone(), k.clone()": lambda: (q.clone(), k.clone())}
    with torch.no_grad():
        eager = rope(q, k, positions)
        agree = all(torch.allclose(a, b, atol=1e-5) for a, b in (*zip(rotation(q, k, cos, sin), eager),
                                                                  *zip(module(q, k, positions), eager)))
        times = _round_robin(candidates, rounds)
    clone = "q.clone(), k.clone()"
    return {"device": str(device), "shape": shape, "rounds": rounds, "agree": agree,
            "median_s": {n: statistics.median(t) for n, t in times.items()},
            "compiled_over_clone": _ratio(times, "compiled rotation, cached tables", clone),  # compiled / clone
            "module_over_clone": _ratio(times, "compiled RotaryEmbedding(q, k)", clone)}


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "below goal"


def print_rope(results: list[dict]) -> bool:
    ok = True
    first = results[0]
    print(f"\nRoPE on {first['device']} against transformers' path, float32, {first['rounds']} round-robin rounds "
          f"a shape; ratio = transformers' time / ours within a round (median [quartiles]), goal >= {HF_GOAL}")
    for r in results:
        m = r["median_s"]
        print(f"  {r['label']:24s} {str(r['shape']):18s} at {r['first']:>4}: "
              f"apply_rope {1e3 * m['apply_rope']:8.3f} ms vs {1e3 * m['transformers (one tensor)']:8.3f} ms, "
              f"RotaryEmbedding {1e3 * m['RotaryEmbedding(q, k)']:8.3f} ms vs {1e3 * m['transformers (q, k)']:8.3f} ms")
        for name in ("apply_rope", "RotaryEmbedding"):
            q1, q2, q3 = r[name]
            ok &= q2 >= HF_GOAL and r["agree"]
            print(f"      {name:16s} {q2:5.2f}x [{q1:.2f} {q3:.2f}]  {_verdict(q2 >= HF_GOAL)}"
                  + ("" if r["agree"] else "   RESULTS DIFFER FROM TRANSFORMERS'"))
    return ok


def print_compiled(result: dict) -> bool:
    m = result["median_s"]
    print(f"\ncompiled (fullgraph) on {result['device']} at {result['shape']}, against cloning q and k "
          f"({1e3 * m['q.clone(), k.clone()']:.2f} ms); time / the clone's within a round, median [quartiles]:")
    q1, q2, q3 = result["compiled_over_clone"]
    ok = q2 <= COMPILED_CLONE_GOAL and result["agree"]
    print(f"  rotation of q and k, cached tables  {1e3 * m['compiled rotation, cached tables']:8.2f} ms: "
          f"{q2:.2f}x the clone [{q1:.2f} {q3:.2f}] (goal <= ~{COMPILED_CLONE_GOAL}: {_verdict(ok)})"
          + ("" if result["agree"] else "   RESULTS DIFFER FROM EAGER"))
    q1, q2, q3 = result["module_over_clone"]
    print(f"  RotaryEmbedding(q, k), tables made  {1e3 * m['compiled RotaryEmbedding(q, k)']:8.2f} ms: "
          f"{q2:.2f}x the clone [{q1:.2f} {q3:.2f}] (for information)")
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
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-rope", action="store_true")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--no-widgets", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"posenc bench: torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
          f"{os.cpu_count()} CPUs, load average {load:.1f}, {platform.processor() or platform.machine()}")
    print("(timings on a shared machine are noisy; the ratios compare candidates measured in the same rounds)")
    ok = True
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        if not args.no_rope:
            ok &= print_rope(bench_rope(device, rounds=args.rounds))
        if not args.no_compile:
            ok &= print_compiled(bench_compiled(device, rounds=args.rounds))
    if len(devices) == 1:
        print("\n(no CUDA device: GPU numbers skipped)")
    if not args.no_widgets:
        import matplotlib

        matplotlib.use("Agg")
        ok &= print_widgets(bench_widgets())
    print(f"\noverall: {'all goals met' if ok else 'some goals not met (see above)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
