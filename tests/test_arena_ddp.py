"""The arena under torchrun: two gloo processes on the CPU train, measure and write what one process writes.

Each rank draws the same global batch (and PoSE's positions for it) and trains on its half; DDP averages the
gradients, so the two-process run must equal the single-process one with the same global batch: the training
losses, the measurements (rank 0's), and the trained weights, to float tolerance. An inference method (ReRoPE)
reads rank 0's saved RoPE weights."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
METHODS = ["rope", "pose", "rerope"]
SIZES = ["steps=6", "log_every=1", "warmup_steps=2", "eval_windows=4", "probe_windows=4", "batch_size=8",
         "eval_multiples=[1,2]"]


def _arena(out: Path, *launcher) -> subprocess.CompletedProcess:
    command = [*launcher, "-m", "posenc_lib.arena", "--preset", "quick", "--methods", *METHODS, "--set", *SIZES,
               "--out", str(out), "--no-progress", "--workers", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _close(a, b, tol):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= tol
    return a == b


@pytest.mark.skipif(not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
                    reason="this torch has no gloo backend")
def test_two_gloo_processes_equal_one_process(tmp_path):
    start = time.perf_counter()
    ddp = _arena(tmp_path / "ddp", sys.executable, "-m", "torch.distributed.run", "--standalone",
                 "--nproc_per_node=2")
    assert ddp.returncode == 0, ddp.stdout[-3000:] + ddp.stderr[-3000:]
    single = _arena(tmp_path / "single", sys.executable)
    assert single.returncode == 0, single.stdout[-3000:] + single.stderr[-3000:]
    for method in METHODS:
        two, one = (json.loads((tmp_path / d / "runs" / f"{method}.seed0.json").read_text()) for d in ("ddp", "single"))
        assert (two["world_size"], one["world_size"]) == (2, 1)
        for key in ("loss", "sliding_loss", "probe", "train_curve"):   # stored at 4-5 decimals
            assert _close(two.get(key), one.get(key), 2e-4 if key == "train_curve" else 2e-5), (method, key)
    weights = [torch.load(tmp_path / d / "states" / "rope.seed0.pt", weights_only=True) for d in ("ddp", "single")]
    assert weights[0].keys() == weights[1].keys()
    # float32 sums in another order; AdamW divides by sqrt(v), so a weight whose gradients are tiny moves by
    # lr-sized steps whose sign can follow rounding: measured max difference 4.5e-6 after 6 steps (weights ~0.1-4);
    # both ranks on the same rows (a wrong shard) moved them by 0.07 (measured)
    for name in weights[0]:
        torch.testing.assert_close(weights[0][name], weights[1][name], rtol=1e-4, atol=2e-5, msg=name)
    assert not list((tmp_path / "ddp" / "runs").glob(".*.tmp"))   # no temporary file left behind
    print(f"two gloo processes + one process: {time.perf_counter() - start:.0f} s")
