"""The CPU kernel behind `rope.rotate`: one compiled loop for both layouts, run on a few threads.

The eager form `x * cos_full + turn(x) * sin_full` reads and writes the whole tensor about ten times
(four temporaries). This loop reads x once and writes the result once, doing per pair (x1, x2) the
eager form's own products and sums in its own order, each rounded on its own:

    y1 = x1*c - x2*s        (eager: x1*c + (-x2)*s -- the same IEEE result: negation is exact;
    y2 = x2*c + x1*s         only a NaN may come out with the other sign bit, still a NaN)

numba compiles it without fast-math, so LLVM may not fuse a product into the sum (no FMA): the
result is bit-identical to the eager form, which `tests/test_rope.py` checks. Each call covers a range
of (row, position) pairs and releases the GIL (nogil), so `rope.rotate` runs a few ranges at once on
its own threads. Compiled code is cached on disk (numba's cache=True) after the first call; numba
itself is imported on first use, so `import posenc_lib` does not pay for it.
"""
from __future__ import annotations

import threading

_UNSET = object()
_KERNEL = _UNSET  # the compiled function once made (None: no numba, or NUMBA_DISABLE_JIT)
_LOCK = threading.Lock()


def _rotate_pairs(x, cos, sin, out, group_step, start, stop):
    # x, out: (B, R, T, 2, D/2), e.g. (batch, heads, seq, member, pair): member 0 and 1 of pair i at
    # [..., 0, i] and [..., 1, i] -- a view of (B, R, T, D) in either layout (see rope.rotate).
    # cos, sin: (G, T, D/2); batch b uses table b * group_step (1: one table per batch; 0: one for all).
    # Covers the flat (b, r, t) indices start .. stop-1.
    R, T = x.shape[1], x.shape[2]
    h = cos.shape[2]
    for k in range(start, stop):
        b, rest = divmod(k, R * T)
        r, t = divmod(rest, T)
        g = b * group_step
        for i in range(h):
            x1 = x[b, r, t, 0, i]
            x2 = x[b, r, t, 1, i]
            c = cos[g, t, i]
            s = sin[g, t, i]
            out[b, r, t, 0, i] = x1 * c - x2 * s
            out[b, r, t, 1, i] = x2 * c + x1 * s


def _compile():
    try:
        import numba
    except ImportError:
        return None
    if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1 would run the loop in Python: far slower than torch
        return None
    try:
        return numba.njit(nogil=True, cache=True, boundscheck=False)(_rotate_pairs)
    except RuntimeError:  # no writable place for numba's cache: compile in every process instead
        return numba.njit(nogil=True, boundscheck=False)(_rotate_pairs)


def kernel():
    """The compiled loop (compiled on its first call, then cached on disk), or None without numba or its JIT."""
    global _KERNEL
    with _LOCK:
        if _KERNEL is _UNSET:
            _KERNEL = _compile()
        return _KERNEL
