#!/usr/bin/env bash
# The checks to run on a lent GPU machine (the session's device tool), in one call:
#   1. the English notebooks under strict nbval on that machine's CPU (another CPU than CI's: are the
#      stored numbers the same there?), with the GPU hidden, as on a learner's laptop;
#   2. the unit tests, whose device fixture adds "cuda" there (tests/test_compile.py runs a forward of
#      every encoding under torch.cuda.set_sync_debug_mode("error"));
#   3. make bench's RoPE sweep and compiled figure on that CPU and on the GPU (BENCH=1).
# That machine has no network: the Jupyter/nbval packages (and the locked transformers) travel as
# wheels in .whl/ (ignored by git; see the device tool's README). It has its own torch, which may differ
# from the lock's: say so when reporting. Results go to $OUT.
set -u
OUT="${OUT:-/tmp/device-out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" MPLBACKEND=Agg PYTHONUNBUFFERED=1  # $PWD: posenc_lib from this tree
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep -m1 "Model name"; nproc
  python3 -c "import sys, torch, transformers, matplotlib, numpy; print(sys.version.split()[0], 'torch', torch.__version__,
'transformers', transformers.__version__, 'matplotlib', matplotlib.__version__, 'numpy', numpy.__version__)"; } \
  2>&1 | tee "$OUT/machine.txt"
timeout 60 python3 -c "
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name='python3')
print('a kernel starts'); kc.stop_channels(); km.shutdown_kernel()" > "$OUT/kernel.txt" 2>&1
tail -n 15 "$OUT/kernel.txt"
if [ -z "${SKIP_NOTEBOOKS:-}" ]; then
CUDA_VISIBLE_DEVICES= timeout 200 python3 -m pytest notebooks/[0-9][0-9]_*.ipynb --nbval --nbval-current-env \
  --nbval-sanitize-with tools/nbval_sanitize.cfg -n 12 --dist loadscope -q -p no:cacheprovider -o addopts="" \
  > "$OUT/notebooks.log" 2>&1
echo "notebooks rc=$?"; tail -n 3 "$OUT/notebooks.log"
fi
if [ -z "${SKIP_TESTS:-}" ]; then
timeout "${TESTS_TIMEOUT:-240}" python3 -m pytest tests -q -n 12 --dist loadscope -p no:cacheprovider -rfE ${TESTS_K:+-k "$TESTS_K"} > "$OUT/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -40; tail -n 2 "$OUT/tests.log"
fi
if [ -n "${BENCH:-}" ]; then
  timeout 300 python3 tools/bench.py --no-widgets --rounds 20 > "$OUT/bench.txt" 2>&1; echo "bench rc=$?"
  grep -vi warn "$OUT/bench.txt" | tail -n 30
fi
