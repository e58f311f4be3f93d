"""Rotary position embedding (RoPE, Su et al. 2021).

Pair i of a query or key at position m is rotated by the angle m * theta_i (counter-clockwise):

    [y1]   [cos(m t)  -sin(m t)] [x1]        y1 = x1 cos - x2 sin
    [y2] = [sin(m t)   cos(m t)] [x2]        y2 = x2 cos + x1 sin       (as complex: y = x * e^{i m t})

so <R_m q, R_n k> = Re[sum_i q_i conj(k_i) e^{i (m-n) theta_i}] depends on m - n only
(m - n = query - key: the negative of the key - query convention of relative.py and alibi.py).

Which dimensions form a pair is the layout:
    layout="half"         pair i = (x[i], x[i + dim/2])   GPT-NeoX, Hugging Face (`rotate_half`)
    layout="interleaved"  pair i = (x[2i], x[2i+1])        RoFormer, Meta's Llama (`view_as_complex`)
Both are the same rotation up to the fixed permutation `absolute.layout_permutation(dim)` of dims;
mixing them (weights converted for one, code of the other) gives garbage past the first tokens.

Angles m * theta_i are computed in float64 (float32 on devices without it), cos/sin in float32 or
better; bf16/fp16 inputs are rotated in float32 and returned in their own dtype and device.
"""
from __future__ import annotations

import numbers
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import torch

from . import _checks, _rope_cpu
from .attention import PositionalEncoding, check_positions, default_positions
from .scaling import rope_inv_freq

LAYOUTS = ("half", "interleaved")
# On the CPU, inputs with fewer elements than this are rotated by a few whole-tensor torch ops
# (`_rotate_whole`): the compiled loop's first use in a process costs ~0.5 s (importing numba), which
# small tensors -- most of the course's -- need not pay. Inputs of at least _PARALLEL_MIN_ELEMENTS
# are split over torch.get_num_threads() threads; below that a thread hand-off costs more than it saves.
_KERNEL_MIN_ELEMENTS = 1 << 16
_PARALLEL_MIN_ELEMENTS = 1 << 18
_POOL = None  # (pid, workers, ThreadPoolExecutor), made on first use
_POOL_PREFIX = "posenc-rope"
_POOL_LOCK = threading.Lock()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """x (..., dim) = [x1 | x2] (halves) -> [-x2 | x1]: the half-split layout's 90-degree turn (GPT-NeoX/HF).

    With it, RoPE in the "half" layout is x * [cos, cos] + rotate_half(x) * [sin, sin] (cos/sin of
    shape (..., dim/2)): pair i = (x[i], x[i + dim/2]) turned counter-clockwise. Same as HF's rotate_half.
    """
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    """x (..., dim) = (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...): the interleaved layout's 90-degree turn.

    RoPE in the "interleaved" layout (RoFormer, Meta's Llama) is x * cos_rep + rotate_every_two(x) * sin_rep
    with cos_rep = (c0, c0, c1, c1, ...): pair i = (x[2i], x[2i+1]) turned counter-clockwise.
    """
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def rope_angles(positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """The angles m * theta_i: positions (..., seq) ints, inv_freq (dim/2,) -> (..., seq, dim/2).

    Computed in float64 (float32 on devices without float64, e.g. MPS) on positions' device: in
    float32 an angle near 1e5 rad is off by up to ~4e-3, and in bf16 positions 256 and 257 collide.
    """
    work = _checks.angle_dtype(positions.device)
    return positions.to(work)[..., None] * inv_freq.to(device=positions.device, dtype=work)


def _full_width(t: torch.Tensor, layout: str) -> torch.Tensor:
    """(..., dim/2) -> (..., dim): [c, c] for half, c0 c0 c1 c1 ... for interleaved."""
    return torch.cat((t, t), dim=-1) if layout == "half" else t.repeat_interleave(2, dim=-1)


def _eager_rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> torch.Tensor:
    """The reference form: x * cos_full + turn(x) * sin_full, computed in float32 or better."""
    work = _checks.compute_dtype(x.dtype)
    xw = x.to(work)
    turn = rotate_half if layout == "half" else rotate_every_two
    cos_full, sin_full = _full_width(cos.to(work), layout), _full_width(sin.to(work), layout)
    return (xw * cos_full + turn(xw) * sin_full).to(x.dtype)


def _member_view(t: torch.Tensor, layout: str) -> torch.Tensor:
    """(..., D) -> a (..., 2, D/2) view of t whose [..., m, i] is member m of pair i (see `layout`):
    t = [x1 | x2] (half) or (x1_0, x2_0, x1_1, x2_1, ...) (interleaved)."""
    if layout == "half":
        return t.unflatten(-1, (2, t.shape[-1] // 2))
    return t.unflatten(-1, (t.shape[-1] // 2, 2)).transpose(-1, -2)


def _executor(workers: int) -> ThreadPoolExecutor:
    """One small thread pool per process (re-made after a fork: threads do not survive it)."""
    global _POOL
    with _POOL_LOCK:
        pid = os.getpid()
        if _POOL is None or _POOL[0] != pid or _POOL[1] < workers:
            _POOL = (pid, workers, ThreadPoolExecutor(max_workers=workers, thread_name_prefix=_POOL_PREFIX))
        return _POOL[2]


def _run_parallel(work, total: int) -> None:
    """work(start, stop) over the range 0 .. total-1, split over torch.get_num_threads() threads.

    4 parts per thread, so that one whose core is taken away holds up little. Runs in the calling
    thread when one thread is asked for, or when called from the pool itself (nested use).
    """
    workers = min(torch.get_num_threads(), total)
    if workers <= 1 or threading.current_thread().name.startswith(_POOL_PREFIX):
        work(0, total)
        return
    parts = min(4 * workers, total)
    bounds = [total * i // parts for i in range(parts + 1)]
    pool = _executor(workers)
    for future in [pool.submit(work, start, stop) for start, stop in zip(bounds, bounds[1:])]:
        future.result()


def rope_cos_sin(positions: torch.Tensor, inv_freq: torch.Tensor, *, attention_factor: float = 1.0,
                 dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """The tables cos(m * theta_i) * a and sin(m * theta_i) * a for positions m, frequencies theta_i.

    positions: (...,) integers, e.g. (seq,) or (batch, seq); inv_freq: (dim/2,). Returns two tensors of
    shape (..., dim/2) in `dtype` on positions' device. The angles m * theta_i and their cos/sin are
    computed in float64 (float32 on devices without it) and rounded once to `dtype`; a is the
    attention factor (YaRN; 1 otherwise). Pair i of a vector at position m is turned by these.
    """
    angles = rope_angles(positions, inv_freq)  # (..., dim/2), float64 where the device has it
    cos, sin = angles.cos(), angles.sin()
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos.to(dtype), sin.to(dtype)


def _as_groups(t: torch.Tensor, x: torch.Tensor):
    """cos/sin (T, h), (1, ..., T, h) or (B, 1, ..., 1, T, h) with B = x.shape[0] -> (G, T, h); else None."""
    T, h = x.shape[-2], x.shape[-1] // 2
    if t.dim() < 2 or t.shape[-1] != h or t.shape[-2] != T:
        return None
    lead = t.shape[:-2]
    if t.dim() > x.dim():  # more leading dims than x: the result takes the tables' shape (eager form)
        return None
    if all(n == 1 for n in lead):
        return t.reshape(1, T, h)
    if x.dim() == t.dim() and lead[0] == x.shape[0] and all(n == 1 for n in lead[1:]):
        return t.reshape(lead[0], T, h)
    return None


def _traced(*tensors: torch.Tensor) -> bool:
    """Is something recording or transforming these ops? torch.jit, torch.compile, torch.func (vmap,
    grad: wrapped tensors), a dispatch mode (make_fx, FakeTensorMode) or a tensor subclass. Then rotate
    uses the eager form's pure ops: no buffer written in place, no memory handed to compiled code."""
    compiler = getattr(torch, "compiler", None)
    if torch.jit.is_tracing() or torch.jit.is_scripting() or getattr(compiler, "is_compiling", lambda: False)():
        return True
    functorch = getattr(torch._C, "_functorch", None)
    wrapped = getattr(functorch, "is_functorch_wrapped_tensor", lambda t: False)
    modes = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)
    return modes() > 0 or any(type(t) is not torch.Tensor or wrapped(t) for t in tensors)


def _rotate_whole(x: torch.Tensor, cos3: torch.Tensor, sin3: torch.Tensor, layout: str) -> torch.Tensor:
    """The compiled loop's arithmetic (`_rope_cpu`) as whole-tensor ops: GPUs, small inputs; cos3/sin3 (G, T, D/2)."""
    work = cos3.dtype
    G, T, h = cos3.shape
    shape = (G, *([1] * (x.dim() - 3)), T, h) if x.dim() >= 3 else (T, h)
    c, s = cos3.reshape(shape), sin3.reshape(shape)
    out = torch.empty(x.shape, dtype=work, device=x.device)
    xm, om = _member_view(x, layout), _member_view(out, layout)  # (..., 2, D/2) views
    x1, x2, o1, o2 = xm[..., 0, :], xm[..., 1, :], om[..., 0, :], om[..., 1, :]
    torch.mul(x1, c, out=o1)
    o1.sub_(x2 * s)
    torch.mul(x2, c, out=o2)
    o2.add_(x1 * s)
    return out.to(x.dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half") -> torch.Tensor:
    """Rotate x (..., seq, dim) by precomputed cos/sin of shape (seq, dim/2) or (batch, 1, ..., seq, dim/2).

    Convention: pair (x1, x2) (see `layout`) goes to (x1 cos - x2 sin, x2 cos + x1 sin), i.e. the
    eager form `x * cos_full + turn(x) * sin_full` with cos_full = [c, c] (half) or c0 c0 c1 c1 ...
    (interleaved) and turn = `rotate_half` / `rotate_every_two`. The result equals that eager form
    computed in float32 (float64 for float64 x) BIT FOR BIT -- the same products and sums in the
    same order (a NaN stays a NaN, though its sign bit may differ) -- and is returned as a new tensor
    in x's dtype on x's device. cos and sin must be on x's device.

    On the CPU, inputs of 65,536 elements or more go through one compiled loop (`_rope_cpu`, numba)
    spread over torch.get_num_threads() threads: x is read once and the result written once,
    instead of the ~10 passes of the eager form. Smaller inputs, other devices, and CPUs without
    numba use a few whole-tensor ops; under autograd, tracing, torch.compile or torch.func, and for
    other cos/sin shapes, the eager form itself is used.
    """
    for name, table in (("cos", cos), ("sin", sin)):
        if table.device != x.device:
            raise ValueError(f"{name} must be on x's device ({x.device}), got {table.device}")
    work = _checks.compute_dtype(x.dtype)
    grad = torch.is_grad_enabled() and (x.requires_grad or cos.requires_grad or sin.requires_grad)
    cos3, sin3 = _as_groups(cos, x), _as_groups(sin, x)
    if grad or cos3 is None or sin3 is None or x.numel() == 0 or _traced(x, cos, sin):
        return _eager_rotate(x, cos, sin, layout)
    cos3, sin3 = cos3.to(work), sin3.to(work)
    loop = _rope_cpu.kernel() if x.device.type == "cpu" and x.numel() >= _KERNEL_MIN_ELEMENTS else None
    if loop is None:  # GPUs (a loop per element would only add launches), small inputs, no numba
        return _rotate_whole(x, cos3, sin3, layout)
    T, D = x.shape[-2], x.shape[-1]
    x4 = x.detach().resolve_neg().to(work).reshape(x.shape[0] if x.dim() > 2 else 1, -1, T, D)  # (B, R, T, D); a view for 2-4 dims
    out = torch.empty(x.shape, dtype=work, device=x.device)
    x5, out5 = _member_view(x4, layout), _member_view(out.view(x4.shape), layout)  # (B, R, T, 2, D/2) views
    arrays = (x5.numpy(), cos3.resolve_neg().numpy(), sin3.resolve_neg().numpy(), out5.numpy())
    group_step = 1 if cos3.shape[0] > 1 else 0  # batch b uses table b (batched positions) or table 0
    vectors = x4.shape[0] * x4.shape[1] * T
    if x4.numel() < _PARALLEL_MIN_ELEMENTS:
        loop(*arrays, group_step, 0, vectors)
    else:
        _run_parallel(lambda start, stop: loop(*arrays, group_step, start, stop), vectors)
    return out if x.dtype == work else out.to(x.dtype)  # half inputs: rounded once, as .to(dtype) would


def _broadcast_to_x(t: torch.Tensor, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """cos/sin of shape (B, T, d/2) from batched positions -> (B, 1, ..., T, d/2) to line up with x."""
    if positions.dim() == 1:
        return t
    if x.dim() < 3 or x.shape[0] not in (1, positions.shape[0]):
        raise ValueError(f"batched positions of shape {tuple(positions.shape)} need x of shape "
                         f"(batch={positions.shape[0]}, ..., seq, dim), got {tuple(x.shape)}")
    return t.reshape(t.shape[0], *([1] * (x.dim() - 3)), *t.shape[1:])


def _check_x(x, name="x"):
    _checks.float_tensor(name, x)
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., seq, dim), got {tuple(x.shape)}")
    _checks.even_int(f"{name}'s last dimension (head_dim)", x.shape[-1])


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0,
               inv_freq: torch.Tensor | None = None, attention_factor: float = 1.0,
               layout: str = "half") -> torch.Tensor:
    """RoPE: turn pair i of the vector at position m counter-clockwise by m * theta_i.

        y1 = a * (x1 cos(m theta_i) - x2 sin(m theta_i)),   y2 = a * (x2 cos(m theta_i) + x1 sin(m theta_i))

    x: (..., seq, dim), usually (batch, heads, seq, head_dim), floating point, dim even.
    positions: (seq,) or (batch, seq) integers m (default 0 .. seq-1); moved to x's device.
    layout: which dims form pair i -- "half": (x[i], x[i + dim/2]) (GPT-NeoX, Hugging Face) or
    "interleaved": (x[2i], x[2i+1]) (RoFormer, Meta's Llama); the two agree up to `layout_permutation`.
    inv_freq: (dim/2,) frequencies theta_i, e.g. from `rope_inv_freq` with a scaling; default
    base ** (-2i/dim). attention_factor a multiplies cos and sin (YaRN; 1 otherwise).
    Angles in float64, the rotation in float32 (float64 for float64 x); returns a new tensor of x's
    shape, dtype and device (x is not modified). For float32 x it is bit-identical to HF's eager
    `x * cos + rotate_half(x) * sin` given the same cos/sin tables (`rope_cos_sin`); for bf16/fp16,
    HF rounds the tables to that dtype and multiplies in it, while this rotates in float32 and rounds
    once, so the two differ by about one unit in the last place of the input's dtype.
    """
    _check_x(x)
    _checks.choice("layout", layout, LAYOUTS)
    positions = (default_positions(x) if positions is None
                 else check_positions(positions, x.shape[-2], device=x.device))
    dim = x.shape[-1]
    if inv_freq is None:
        inv_freq, _ = rope_inv_freq(dim, base=base, device=x.device)
    elif not isinstance(inv_freq, torch.Tensor) or inv_freq.shape != (dim // 2,):
        raise ValueError(f"inv_freq must be a tensor of shape (dim/2,) = ({dim // 2},), got "
                         f"{tuple(inv_freq.shape) if isinstance(inv_freq, torch.Tensor) else type(inv_freq).__name__}")
    attention_factor = _checks.positive_float("attention_factor", attention_factor)
    cos, sin = rope_cos_sin(positions, inv_freq, attention_factor=attention_factor,
                            dtype=_checks.compute_dtype(x.dtype))  # (..., T, d/2)
    cos, sin = _broadcast_to_x(cos, x, positions), _broadcast_to_x(sin, x, positions)
    return rotate(x, cos, sin, layout)


def rope_complex(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0) -> torch.Tensor:
    """The derivation's form: z_i = x[2i] + i x[2i+1] (complex), out = z_i * e^{i m theta_i}, back to reals.

    x: (..., seq, dim), dim even; positions (seq,) or (batch, seq) ints (default 0 .. seq-1);
    theta_i = base ** (-2i/dim). Multiplying by e^{i m theta} is the counter-clockwise turn of
    apply_rope, with the interleaved pairing of `view_as_complex` (RoFormer, Meta's Llama): same
    result as apply_rope(x, positions, base=base, layout="interleaved") up to rounding. Returns x's
    shape, dtype and device; angles in float64, the product in complex64 (complex128 for float64 x).
    """
    _check_x(x)
    positions = default_positions(x) if positions is None else check_positions(positions, x.shape[-2], device=x.device)
    inv_freq, _ = rope_inv_freq(x.shape[-1], base=base, device=x.device)
    angles = rope_angles(positions, inv_freq)
    work = _checks.compute_dtype(x.dtype)
    rotation = torch.polar(torch.ones_like(angles), angles)  # e^{i m theta}, complex128 (or complex64)
    rotation = _broadcast_to_x(rotation, x, positions)
    z = torch.view_as_complex(x.to(work).reshape(*x.shape[:-1], -1, 2).contiguous())  # (..., T, d/2)
    out = torch.view_as_real(z * rotation.to(z.dtype)).flatten(-2)
    return out.to(x.dtype)


def rope_matrix(position: int, dim: int, *, base: float = 10000.0, layout: str = "interleaved",
                device=None, dtype=torch.float64) -> torch.Tensor:
    """The explicit (dim, dim) rotation R_m with apply_rope(x, layout=layout)[..., m, :] == R_m @ x[..., m, :].

    For each pair i = (a, b) (layout "interleaved": (2i, 2i+1), the block-diagonal form of the
    RoFormer paper; "half": (i, i + dim/2)), with t = position * base ** (-2i/dim):
        R[a, a] = cos t,  R[a, b] = -sin t,  R[b, a] = sin t,  R[b, b] = cos t   (counter-clockwise)
    and zeros elsewhere; R_m^T = R_{-m} = R_m^{-1}. position: an int; returns `dtype` (float64) on `device`.
    """
    _checks.choice("layout", layout, LAYOUTS)
    if isinstance(position, bool) or not isinstance(position, numbers.Integral):
        raise TypeError(f"position must be an int (a token index), got {type(position).__name__} ({position!r})")
    inv_freq, _ = rope_inv_freq(dim, base=base, device=device)
    angle = int(position) * inv_freq.to(dtype)
    c, s = angle.cos(), angle.sin()
    h = dim // 2
    first = torch.arange(h, device=device) if layout == "half" else torch.arange(0, dim, 2, device=device)
    second = first + h if layout == "half" else first + 1
    R = torch.zeros(dim, dim, device=device, dtype=dtype)
    R[first, first], R[first, second] = c, -s
    R[second, first], R[second, second] = s, c
    return R


class RotaryEmbedding(PositionalEncoding):
    """RoPE as a module: forward(q, k, positions=None) -> (rotated q, rotated k).

    q, k: (batch, heads, seq, head_dim). cos/sin tables are cached per (device, dtype), grown
    (doubled) only when a position beyond the cached length is asked for, never rebuilt on every
    call; `cache_builds` counts how often a table was built. With scaling {"rope_type": "dynamic"}
    the frequencies depend on the length, so the table is rebuilt when that length changes.
    """

    def __init__(self, dim: int, *, base: float = 10000.0, layout: str = "half", scaling: dict | None = None):
        super().__init__()
        self.dim = _checks.even_int("dim", dim)
        self.base = _checks.positive_float("base", base, minimum=1.0)
        self.layout = _checks.choice("layout", layout, LAYOUTS)
        rope_inv_freq(self.dim, base=self.base, scaling=scaling)  # validate now, not at the first call
        self.scaling = scaling
        self._cache: dict = {}  # (device, dtype) -> (length, key, cos, sin)
        self.cache_builds = 0

    def _tables(self, positions: torch.Tensor, dtype: torch.dtype):
        device = positions.device
        dynamic = self.scaling is not None and self.scaling.get("rope_type") == "dynamic"
        if device.type == "meta":  # values unknowable: compute for these positions, nothing to cache
            inv, factor = rope_inv_freq(self.dim, base=self.base, scaling=self.scaling, device=device)
            return (*rope_cos_sin(positions, inv, attention_factor=factor, dtype=dtype), False)
        needed = int(positions.max()) + 1 if positions.numel() else 1
        key = (device, dtype)
        seq_key = needed if dynamic else None
        entry = self._cache.get(key)
        if entry is None or entry[0] < needed or entry[1] != seq_key:
            length = needed if dynamic else max(needed, 2 * entry[0] if entry else 0, 64)
            inv, factor = rope_inv_freq(self.dim, base=self.base, scaling=self.scaling, device=device,
                                        seq_len=needed if dynamic else None)
            entry = (length, seq_key,
                     *rope_cos_sin(torch.arange(length, device=device), inv, attention_factor=factor, dtype=dtype))
            self._cache[key] = entry
            self.cache_builds += 1
        return entry[2], entry[3], True

    def _rotate_one(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        if positions.device.type != "meta" and positions.numel() and int(positions.min()) < 0:
            raise ValueError(f"positions must be >= 0 for RotaryEmbedding's cache, got min {int(positions.min())}")
        cos, sin, cached = self._tables(positions, _checks.compute_dtype(x.dtype))
        if cached:
            cos, sin = cos[positions], sin[positions]  # (..., T, d/2)
        return rotate(x, _broadcast_to_x(cos, x, positions), _broadcast_to_x(sin, x, positions), self.layout)

    def forward(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor | None = None):
        return self.rotate_qk(q, k, positions, positions)

    def rotate_qk(self, q, k, q_positions=None, k_positions=None):
        _check_x(q, "q")
        _check_x(k, "k")
        for name, t in (("q", q), ("k", k)):
            if t.shape[-1] != self.dim:
                raise ValueError(f"{name}'s last dimension must be dim={self.dim}, got {t.shape[-1]}")
        q_positions = (default_positions(q) if q_positions is None
                       else check_positions(q_positions, q.shape[-2], device=q.device))
        k_positions = (default_positions(k) if k_positions is None
                       else check_positions(k_positions, k.shape[-2], device=k.device))
        return self._rotate_one(q, q_positions), self._rotate_one(k, k_positions)

    def extra_repr(self):
        return f"dim={self.dim}, base={self.base}, layout={self.layout!r}, scaling={self.scaling}"


def rope_decay_bound(distance, dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoFormer's relative upper bound on a RoPE score at relative distance r = m - n (Su et al. 2021, sec. 3.4.3).

    Take the d/2 pairs of q and k as complex numbers and h_i = q_i * conj(k_i); then the score is
    <R_m q, R_n k> = Re sum_{i<d/2} h_i e^{i r theta_i}, theta_i = base ** (-2i/d). With the partial
    sums S_j = sum_{k<j} e^{i r theta_k} (S_0 = 0) and h_{d/2} = 0, Abel summation gives

        |score| <= (max_i |h_{i+1} - h_i|) * sum_{j=1}^{d/2} |S_j|.

    This returns the part that depends on the distance, averaged over the pairs:
    (1 / (d/2)) * sum_{j=1}^{d/2} |S_j|, which equals (d/2 + 1) / 2 at r = 0 and shrinks as |r| grows
    (the "long-term decay"). It depends on |r| only (S_j(-r) = conj S_j(r)).

    distance: a number, a sequence or a tensor of real distances (any shape); dim: even head dim.
    Returns a float64 tensor of distance's shape (float32 on devices without float64), on its device.
    """
    dim = _checks.even_int("dim", dim)
    base = _checks.positive_float("base", base, minimum=1.0)
    if isinstance(distance, torch.Tensor):
        if distance.is_complex() or distance.dtype == torch.bool:
            raise TypeError(f"distance must hold real numbers, got a tensor of {distance.dtype}")
        device = distance.device
    else:
        device = torch.device("cpu")
        try:
            distance = torch.as_tensor(distance, dtype=torch.float64, device=device)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"distance must be a number, a sequence of numbers or a tensor, got {distance!r}") from error
    work = _checks.angle_dtype(device)
    inv_freq, _ = rope_inv_freq(dim, base=base, device=device)
    angles = distance.to(work)[..., None] * inv_freq.to(work)  # (..., d/2): r * theta_k
    partial_sums = torch.polar(torch.ones_like(angles), angles).cumsum(dim=-1)  # S_1 .. S_{d/2}
    return partial_sums.abs().mean(dim=-1)
