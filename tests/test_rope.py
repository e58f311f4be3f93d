"""RoPE against an explicit float64 per-pair rotation, against Hugging Face's Llama code, and its properties.

Precision note: Hugging Face computes the angles position * inv_freq in float32, which by itself
loses precision at long positions (a float32 angle near 1e5 rad is off by up to ~4e-3 rad). The
library computes them in float64. So HF is compared at moderate positions (< 8192) with the
DESIGN tolerance 1e-5, and long positions are compared with the float64 formula instead.
"""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import LlamaConfig
from transformers.models.llama import modeling_llama as hf_llama

from conftest import eager_rotate_half, float32_ulp, pair_indices, ref_frequencies, ref_rope
from posenc_lib import RotaryEmbedding, apply_rope, layout_permutation, rope_complex, rope_matrix, rotate_half
from posenc_lib import rope as rope_mod

LAYOUTS = ["half", "interleaved"]
even_dims = st.integers(1, 32).map(lambda h: 2 * h)


def _hf_rotary(head_dim, base, params=None, max_position_embeddings=4096):
    config = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                         max_position_embeddings=max_position_embeddings,
                         rope_parameters={"rope_type": "default", "rope_theta": base, **(params or {})})
    return hf_llama.LlamaRotaryEmbedding(config)


# ------------------------------------------------------------------ against the float64 formula
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,base", [((1, 1, 5, 2), 10000.0), ((2, 3, 17, 8), 10.0), ((2, 4, 33, 64), 10000.0),
                                        ((1, 2, 10, 128), 500000.0), ((7, 6), 10000.0), ((3, 9, 16), 1e6)])
def test_apply_rope_matches_explicit_rotation(shape, base, layout):
    torch.manual_seed(0)
    x = torch.randn(shape)
    positions = torch.randint(0, 5000, (shape[-2],))
    out = apply_rope(x, positions, base=base, layout=layout)
    assert out.shape == x.shape and out.dtype == x.dtype
    torch.testing.assert_close(out.double(), ref_rope(x, positions, base=base, layout=layout), atol=1e-5, rtol=0)
    # default positions are 0 .. seq-1
    torch.testing.assert_close(apply_rope(x, base=base, layout=layout).double(),
                               ref_rope(x, torch.arange(shape[-2]), base=base, layout=layout), atol=1e-5, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_batched_positions_inv_freq_and_attention_factor(layout):
    torch.manual_seed(1)
    x = torch.randn(3, 2, 6, 16)
    positions = torch.randint(0, 3000, (3, 6))
    inv_freq = torch.rand(8) * 0.5
    out = apply_rope(x, positions, inv_freq=inv_freq, attention_factor=1.25, layout=layout)
    ref = ref_rope(x, positions, inv_freq=inv_freq.double(), attention_factor=1.25, layout=layout)
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_long_positions_match_float64_formula(layout):
    torch.manual_seed(2)
    x = torch.randn(2, 2, 8, 64)
    positions = torch.tensor([65_536, 65_537, 100_000, 131_071, 500_000, 1_000_000, 2_000_003, 4_000_000])
    out = apply_rope(x, positions, layout=layout)
    torch.testing.assert_close(out.double(), ref_rope(x, positions, layout=layout), atol=1e-5, rtol=0)


# ------------------------------------------------------------------ against Hugging Face
def test_rotate_half_is_hf_rotate_half():
    x = torch.randn(2, 3, 4, 10)
    assert torch.equal(rotate_half(x), hf_llama.rotate_half(x))


HF_CASES = [(1, 1, 7, 2, 10000.0), (2, 4, 33, 64, 10000.0), (3, 8, 20, 128, 500000.0), (1, 2, 48, 16, 100.0),
            (2, 12, 9, 96, 1e6)]


@pytest.mark.parametrize("batch,heads,seq,head_dim,base", HF_CASES)
def test_apply_rope_matches_hf_llama(batch, heads, seq, head_dim, base):
    """End to end at positions < 48, where HF's float32 angles are still within ~1e-6 of exact."""
    torch.manual_seed(3)
    q, k = torch.randn(batch, heads, seq, head_dim), torch.randn(batch, heads, seq, head_dim)
    position_ids = torch.stack([torch.randperm(48)[:seq] for _ in range(batch)])
    rot = _hf_rotary(head_dim, base)
    cos, sin = rot(q, position_ids)
    q_hf, k_hf = hf_llama.apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(apply_rope(q, position_ids, base=base), q_hf, atol=1e-5, rtol=0)
    torch.testing.assert_close(apply_rope(k, position_ids, base=base), k_hf, atol=1e-5, rtol=0)
    q_ours, k_ours = RotaryEmbedding(head_dim, base=base)(q, k, position_ids)
    torch.testing.assert_close(q_ours, q_hf, atol=1e-5, rtol=0)
    torch.testing.assert_close(k_ours, k_hf, atol=1e-5, rtol=0)
    # the interleaved layout is HF's rotation on permuted dims
    perm = layout_permutation(head_dim)
    inter = apply_rope(q[..., torch.argsort(perm)], position_ids, base=base, layout="interleaved")
    torch.testing.assert_close(inter[..., perm], q_hf, atol=1e-5, rtol=0)


@pytest.mark.parametrize("batch,heads,seq,head_dim,base", HF_CASES)
def test_hf_frequencies_and_rotation_at_any_position(batch, heads, seq, head_dim, base):
    """Split HF's pipeline in its two parts and compare each tightly, at positions up to 8191:
    its inv_freq (float32) equals ours to a few float32 ulps, and its rotation applied to a given
    cos/sin is bit-identical to ours. What remains -- HF rounding pos * inv_freq to float32 -- is
    HF's own error (up to ~1e-3 at 8k positions), so ours is closer to the float64 formula than HF's."""
    torch.manual_seed(8)
    q = torch.randn(batch, heads, seq, head_dim)
    position_ids = torch.randint(0, 8192, (batch, seq))
    rot = _hf_rotary(head_dim, base)
    ours_inv = rope_mod.rope_inv_freq(head_dim, base=base)[0]
    # HF rounds the exponent 2i/dim to float32 (exact only when dim is a power of 2) and the power
    # base ** e multiplies that rounding by ln(base): allow 2 + ln(base) float32 ulps
    ulps = (rot.inv_freq.double() - ours_inv).abs() / float32_ulp(ours_inv)
    assert ulps.max() <= 2 + math.log(base)
    cos, sin = rot(q, position_ids)  # (B, T, head_dim), the half-split layout's [c, c]
    q_hf, _ = hf_llama.apply_rotary_pos_emb(q, q, cos, sin)
    h = head_dim // 2
    ours_same_tables = rope_mod.rotate(q, cos[:, None, :, :h], sin[:, None, :, :h], "half")
    assert torch.equal(ours_same_tables, q_hf)
    ref = ref_rope(q, position_ids, base=base)
    ours_err = (apply_rope(q, position_ids, base=base).double() - ref).abs().max()
    hf_err = (q_hf.double() - ref).abs().max()
    assert ours_err <= 1e-5 and ours_err <= hf_err


# ------------------------------------------------------------------ properties
@given(dim=even_dims, m=st.integers(0, 100_000), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2 ** 16))
def test_rotation_preserves_norms(dim, m, layout, seed):
    x = torch.randn(3, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    out = apply_rope(x, torch.full((3,), m), layout=layout)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), atol=1e-12, rtol=0)
    # each pair keeps its own norm too (it is a rotation per pair, not a mix across pairs)
    for a, b in pair_indices(dim, layout):
        torch.testing.assert_close(out[:, a] ** 2 + out[:, b] ** 2, x[:, a] ** 2 + x[:, b] ** 2, atol=1e-12, rtol=0)


@given(dim=even_dims, m=st.integers(0, 50_000), n=st.integers(0, 50_000), shift=st.integers(-50_000, 50_000),
       layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2 ** 16))
def test_score_depends_only_on_m_minus_n(dim, m, n, shift, layout, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(dim, generator=g, dtype=torch.float64), torch.randn(dim, generator=g, dtype=torch.float64)
    shift = max(shift, -min(m, n))

    def score(a, b):
        return (apply_rope(q[None], torch.tensor([a]), layout=layout)
                @ apply_rope(k[None], torch.tensor([b]), layout=layout).T).item()

    assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=1e-9)
    # and it is the complex form Re sum_i q_i conj(k_i) e^{i (m - n) theta_i}
    zq = torch.complex(*(q[[a for a, _ in pair_indices(dim, layout)]], q[[b for _, b in pair_indices(dim, layout)]]))
    zk = torch.complex(*(k[[a for a, _ in pair_indices(dim, layout)]], k[[b for _, b in pair_indices(dim, layout)]]))
    theta = torch.tensor(ref_frequencies(dim, 10000.0), dtype=torch.float64)
    expected = (zq * zk.conj() * torch.polar(torch.ones_like(theta), (m - n) * theta)).sum().real.item()
    assert score(m, n) == pytest.approx(expected, abs=1e-9)


@given(dim=even_dims, seq=st.integers(1, 12), base=st.sampled_from([100.0, 10000.0]), seed=st.integers(0, 2 ** 16))
def test_layouts_agree_up_to_permutation_and_complex_and_matrix_forms(dim, seq, base, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, seq, dim, generator=g, dtype=torch.float64)
    positions = torch.randint(0, 10_000, (seq,), generator=g)
    perm = layout_permutation(dim)  # half dim j holds interleaved dim perm[j]
    inter = apply_rope(x, positions, base=base, layout="interleaved")
    half = apply_rope(x[..., perm], positions, base=base, layout="half")
    torch.testing.assert_close(half, inter[..., perm], atol=1e-12, rtol=0)
    torch.testing.assert_close(rope_complex(x, positions, base=base), inter, atol=1e-12, rtol=0)
    for layout, out in (("interleaved", inter), ("half", apply_rope(x, positions, base=base, layout="half"))):
        for t in range(seq):
            R = rope_matrix(int(positions[t]), dim, base=base, layout=layout)
            torch.testing.assert_close(x[:, t] @ R.T, out[:, t], atol=1e-12, rtol=0)
            torch.testing.assert_close(R @ R.T, torch.eye(dim, dtype=torch.float64), atol=1e-12, rtol=0)


def test_rope_complex_float32_matches_interleaved():
    torch.manual_seed(4)
    x = torch.randn(2, 3, 11, 32)
    positions = torch.randint(0, 70_000, (2, 11))
    torch.testing.assert_close(rope_complex(x, positions), apply_rope(x, positions, layout="interleaved"),
                               atol=1e-5, rtol=0)


def test_rotation_sign_is_counter_clockwise():
    # pair (1, 0) at position 1 with theta_0 = 1 goes to (cos 1, sin 1): counter-clockwise (y2 = x1 sin + x2 cos)
    x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    for layout in LAYOUTS:
        out = apply_rope(x, torch.tensor([1]), layout=layout)
        torch.testing.assert_close(out[0], torch.tensor([math.cos(1.0), math.sin(1.0)], dtype=torch.float64))


# ------------------------------------------------------------------ the fast kernel is the eager form, bit for bit
def _eager_interleaved(x, cos, sin):
    turned = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    return x * cos.repeat_interleave(2, -1) + turned * sin.repeat_interleave(2, -1)


def _eager_reference(x, cos, sin, layout):
    """The eager form in float32 (float64 for float64 x), rounded once to x's dtype."""
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    xw, c, s = x.to(work), cos.to(work), sin.to(work)
    out = eager_rotate_half(xw, torch.cat((c, c), -1), torch.cat((s, s), -1)) if layout == "half" \
        else _eager_interleaved(xw, c, s)
    return out.to(x.dtype)


def _tables(positions, dim):
    return rope_mod.rope_cos_sin(positions, rope_mod.rope_inv_freq(dim)[0])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(3, 5, 300, 128), (3, 5, 7, 6), (1, 1, 1, 2), (5, 3000, 64), (9, 40),
                                   (2, 3, 700, 256), (2, 3, 2, 90, 64)])  # compiled loop (>= 65,536 elements; 3-d and 5-d x reshaped to 4-d) or whole-tensor ops
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_rotate_is_bit_identical_to_eager_form(shape, layout, dtype):
    torch.manual_seed(5)
    x = torch.randn(shape).to(dtype)
    cos, sin = _tables(torch.randint(0, 100_000, (shape[-2],)), shape[-1])
    ref = _eager_reference(x, cos, sin, layout)
    out = rope_mod.rotate(x, cos, sin, layout)
    assert out.dtype == dtype and torch.equal(out, ref)
    if x.dim() > 2:  # non-contiguous input (a transposed view): same answer
        assert torch.equal(rope_mod.rotate(x.transpose(0, -2).contiguous().transpose(0, -2), cos, sin, layout), ref)
    # the whole-tensor form used on GPUs, checked here on the CPU
    c3, s3 = cos.to(ref.dtype if dtype != torch.bfloat16 else torch.float32)[None], \
        sin.to(ref.dtype if dtype != torch.bfloat16 else torch.float32)[None]
    assert torch.equal(rope_mod._rotate_whole(x, c3, s3, layout), ref)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotate_batched_tables_bit_identical(layout):
    torch.manual_seed(9)
    x = torch.randn(3, 4, 600, 64)
    cos, sin = _tables(torch.randint(0, 50_000, (3, 600)), 64)  # (B, T, h) -> (B, 1, T, h)
    cos, sin = cos[:, None], sin[:, None]
    assert torch.equal(rope_mod.rotate(x, cos, sin, layout), _eager_reference(x, cos, sin, layout))
    x3 = torch.randn(3, 600, 128)  # (B, T, D) with (B, T, D/2) tables: one table per batch row
    cos, sin = _tables(torch.randint(0, 50_000, (3, 600)), 128)
    assert torch.equal(rope_mod.rotate(x3, cos, sin, layout), _eager_reference(x3, cos, sin, layout))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_large_cpu_inputs_use_the_compiled_loop_and_small_ones_do_not(layout, monkeypatch):
    loop = rope_mod._rope_cpu.kernel()
    assert loop is not None, "numba is a dependency: the compiled loop must be available"
    calls = []

    def counting_loop(*args):  # counts the loop's runs, not just kernel() lookups
        calls.append(args[-2:])
        return loop(*args)
    monkeypatch.setattr(rope_mod._rope_cpu, "kernel", lambda: counting_loop)
    cos, sin = _tables(torch.arange(512), 128)
    rope_mod.rotate(torch.randn(1, 1, 512, 128), cos, sin, layout)  # 65,536 elements: the loop, in one run
    assert calls == [(0, 512)]
    rope_mod.rotate(torch.randn(1, 1, 511, 128), cos[:511], sin[:511], layout)  # one position fewer: torch ops
    assert calls == [(0, 512)]
    x = torch.randn(2, 4, 512, 128)  # 524,288 elements: ranges on the threads that cover all 4,096 vectors
    rope_mod.rotate(x, cos, sin, layout)
    covered = sorted(calls[1:])
    assert covered[0][0] == 0 and covered[-1][1] == 2 * 4 * 512
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))
    assert len(covered) == (1 if torch.get_num_threads() == 1 else 4 * min(torch.get_num_threads(), 2 * 4 * 512))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotate_without_numba_is_still_bit_identical(layout, monkeypatch):
    monkeypatch.setattr(rope_mod._rope_cpu, "kernel", lambda: None)  # as if numba were not installed
    torch.manual_seed(12)
    x = torch.randn(2, 4, 300, 128)
    cos, sin = _tables(torch.arange(300), 128)
    assert torch.equal(rope_mod.rotate(x, cos, sin, layout), _eager_reference(x, cos, sin, layout))


def test_rotate_under_no_grad_of_tensors_that_require_grad():
    """Inference on a model's parameters: the compiled loop reads tensors that require grad."""
    x = torch.randn(2, 4, 300, 128, requires_grad=True)
    cos, sin = (t.requires_grad_() for t in _tables(torch.arange(300), 128))
    with torch.no_grad():
        out = rope_mod.rotate(x, cos, sin)
    assert not out.requires_grad and torch.equal(out, _eager_reference(x.detach(), cos.detach(), sin.detach(), "half"))


def test_kernel_without_jit_or_without_a_cache_directory(monkeypatch):
    import numba
    cpu = rope_mod._rope_cpu
    monkeypatch.setattr(cpu, "_KERNEL", cpu._UNSET)
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    assert cpu.kernel() is None  # a loop run by the Python interpreter would be far slower than torch ops
    monkeypatch.setattr(numba.config, "DISABLE_JIT", False)
    monkeypatch.setattr(cpu, "_KERNEL", cpu._UNSET)
    njit = numba.njit

    def njit_without_cache_locator(*args, **kwargs):
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function '_rotate_pairs': no locator available")
        return njit(*args, **kwargs)
    monkeypatch.setattr(numba, "njit", njit_without_cache_locator)
    loop = cpu.kernel()  # compiled, just not cached on disk
    torch.manual_seed(13)
    x = torch.randn(1, 2, 300, 128)
    cos, sin = _tables(torch.arange(300), 128)
    out = torch.empty_like(x)
    loop(rope_mod._member_view(x, "half").numpy(), cos[None].numpy(), sin[None].numpy(),
         rope_mod._member_view(out, "half").numpy(), 0, 0, 600)
    assert torch.equal(out, _eager_reference(x, cos, sin, "half"))


@pytest.mark.parametrize("shape", [(2, 3, 5, 8), (2, 4, 512, 128)])  # whole-tensor ops / the compiled loop
def test_rope_under_tracers_and_function_transforms(shape):
    """make_fx, vmap, torch.func.grad and fake tensors see the eager form's pure torch ops: a graph
    recorded from rotate computes the rotation of a NEW input, and vmap/grad give the plain answers."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    torch.manual_seed(14)
    x, y = torch.randn(shape), torch.randn(shape)
    graph = make_fx(lambda t: apply_rope(t))(x)
    assert torch.equal(graph(y), apply_rope(y))
    assert torch.equal(torch.func.vmap(apply_rope)(x), apply_rope(x))
    weights = torch.randn(shape)
    leaf = x.clone().requires_grad_()
    (apply_rope(leaf) * weights).sum().backward()
    assert torch.allclose(torch.func.grad(lambda t: (apply_rope(t) * weights).sum())(x), leaf.grad)
    with FakeTensorMode():
        assert apply_rope(torch.randn(shape)).shape == shape


def test_rope_of_a_tensor_with_the_negative_bit():
    """x.conj().imag is a lazily negated view (is_neg()); numpy cannot read it without resolve_neg()."""
    x = torch.randn(2, 4, 512, 128, dtype=torch.complex64).conj().imag
    assert x.is_neg()
    assert torch.equal(apply_rope(x), apply_rope(x.clone()))


def test_rotate_tables_must_be_on_x_device_and_extra_table_dims_broadcast():
    cos, sin = _tables(torch.arange(300), 128)
    x = torch.randn(300, 128)
    with pytest.raises(ValueError, match="cos must be on x's device"):
        rope_mod.rotate(x, cos.to("meta"), sin)
    with pytest.raises(ValueError, match="sin must be on x's device"):
        rope_mod.rotate(x, cos, sin.to("meta"))
    c6, s6 = cos.reshape(1, 1, 1, 1, 300, 64), sin.reshape(1, 1, 1, 1, 300, 64)  # more dims than x
    out = rope_mod.rotate(x, c6, s6)
    ref = _eager_reference(x, c6, s6, "half")
    assert out.shape == ref.shape == (1, 1, 1, 1, 300, 128) and torch.equal(out, ref)


def test_importing_the_library_does_not_import_numba():
    """numba (~0.5 s to import) is loaded on the first large CPU rotation, not by `import posenc_lib`."""
    import subprocess
    import sys
    code = "import sys, posenc_lib; print('numba' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "False", result.stderr


def test_rotate_with_one_thread_and_inside_threads():
    """The same bits whatever the thread count, and when called from worker threads (nested use)."""
    from concurrent.futures import ThreadPoolExecutor
    torch.manual_seed(10)
    x = torch.randn(2, 4, 1000, 64)
    cos, sin = _tables(torch.arange(1000), 64)
    ref = _eager_reference(x, cos, sin, "half")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert torch.equal(rope_mod.rotate(x, cos, sin), ref)
    finally:
        torch.set_num_threads(threads)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: rope_mod.rotate(x, cos, sin), range(3)))
    assert all(torch.equal(r, ref) for r in results)


def _rotate_in_child(queue, x, cos, sin):
    try:
        queue.put(rope_mod._executor(2).submit(lambda: 42).result(timeout=20))
        queue.put(rope_mod.rotate(x, cos, sin).numpy().tobytes())  # bytes: pickling a tensor may run torch ops
    except Exception as error:  # a stale pool (threads lost in the fork) would time out here
        queue.put(repr(error))


def test_rotate_works_after_fork():
    """Threads do not survive fork(): the child gets a new pool instead of one whose workers are gone,
    and a large rotation runs there on 2 threads (the compiled loop on that pool, no OpenMP region).
    Only rotate itself runs in the child: torch's own OpenMP ops hang after fork with > 1 thread,
    which is why DataLoader workers run with one thread."""
    import multiprocessing
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    x = torch.randn(2, 4, 1000, 64)
    cos, sin = _tables(torch.arange(1000), 64)
    ref = rope_mod.rotate(x, cos, sin)  # made the parent's pool and compiled the loop before the fork
    parent_pool = rope_mod._executor(2)
    assert parent_pool.submit(lambda: 1).result(timeout=20) == 1
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        child = ctx.Process(target=_rotate_in_child, args=(queue, x, cos, sin))
        child.start()
    finally:
        torch.set_num_threads(threads)
    try:  # a child that hangs (torch's OpenMP ops after fork) must fail the test, not hang the run
        assert queue.get(timeout=60) == 42
        result = queue.get(timeout=60)
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
            child.join()
    same = result == ref.numpy().tobytes()
    assert same, result if isinstance(result, str) else "the child's rotation differs from the parent's"


def test_cos_sin_tables_match_the_formula():
    positions = torch.cat((torch.arange(3000), torch.tensor([65_536, 1_000_000, 4_000_001])))
    inv = rope_mod.rope_inv_freq(128)[0]
    cos, sin = rope_mod.rope_cos_sin(positions, inv, attention_factor=1.25)  # long positions too
    angles = positions.double()[:, None] * torch.tensor(ref_frequencies(128, 1e4), dtype=torch.float64)
    assert cos.dtype == torch.float32 and cos.shape == (3003, 64)
    torch.testing.assert_close(cos.double(), 1.25 * angles.cos(), atol=2e-7, rtol=0)
    torch.testing.assert_close(sin.double(), 1.25 * angles.sin(), atol=2e-7, rtol=0)
    small_cos, _ = rope_mod.rope_cos_sin(positions[:100], inv, attention_factor=1.25)  # a prefix gives the same rows
    torch.testing.assert_close(small_cos, cos[:100], atol=1.2e-7, rtol=0)
    batched, _ = rope_mod.rope_cos_sin(positions[:3000].view(3, 1000), inv, dtype=torch.float64)
    torch.testing.assert_close(batched, angles[:3000].cos().view(3, 1000, 64), atol=1e-12, rtol=0)
    learnable = inv.clone().requires_grad_(True)  # learnable frequencies: differentiable path
    rope_mod.rope_cos_sin(positions[:600], learnable)[0].sum().backward()
    assert learnable.grad is not None and learnable.grad.abs().sum() > 0


# ------------------------------------------------------------------ precision: half inputs, long positions
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_half_precision_at_long_positions(dtype, layout):
    torch.manual_seed(6)
    x = torch.randn(2, 4, 6, 64).to(dtype)
    x_before = x.clone()
    positions = torch.tensor([65_536, 65_537, 65_538, 100_000, 250_001, 1_000_000])
    out = apply_rope(x, positions, layout=layout)
    assert out.dtype == dtype and torch.equal(x, x_before)
    ref = ref_rope(x, positions, layout=layout)  # x's half-precision values, rotated exactly
    eps = torch.finfo(dtype).eps  # one ulp at 1: 2**-7 (bf16), 2**-10 (fp16)
    torch.testing.assert_close(out.double(), ref, rtol=eps, atol=1e-5)
    # the mistake the library avoids: angles computed in the input's dtype. bf16 cannot tell 65536
    # from 65537, so the naive rotation is far from the reference (this is what the test would catch)
    if dtype == torch.bfloat16:
        pos_lo = positions.to(dtype)
        assert pos_lo[0] == pos_lo[1]
        theta = torch.tensor(ref_frequencies(64, 1e4)).to(dtype)
        naive_angles = pos_lo[:, None] * theta
        naive = eager_rotate_half(x, torch.cat([naive_angles.cos()] * 2, -1), torch.cat([naive_angles.sin()] * 2, -1))
        assert (naive.double() - ref).abs().max() > 0.5


@pytest.mark.parametrize("shape", [(2, 3, 5, 8), (2, 3, 1024, 32)])  # whole-tensor ops / the compiled loop
def test_input_never_modified_and_dtype_device_kept(shape):
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        x = torch.randn(shape).to(dtype)
        before = x.clone()
        for layout in LAYOUTS:
            out = apply_rope(x, layout=layout)
            assert out.dtype == dtype and out.device == x.device and out.data_ptr() != x.data_ptr()
        q, k = RotaryEmbedding(shape[-1])(x, x)
        rope_complex(x)
        assert q.dtype == k.dtype == dtype
        assert torch.equal(x, before)


# ------------------------------------------------------------------ autograd
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradients(layout):
    x = torch.randn(2, 3, 4, 8, dtype=torch.float64, requires_grad=True)
    positions = torch.tensor([0, 5, 77, 1000])
    torch.autograd.gradcheck(lambda t: apply_rope(t, positions, layout=layout), (x,))
    # the gradient of a rotation is the inverse rotation: rotating back by -m
    g = torch.randn(2, 3, 4, 8, dtype=torch.float64)
    (apply_rope(x, positions, layout=layout) * g).sum().backward()
    torch.testing.assert_close(x.grad, apply_rope(g, -positions, layout=layout), atol=1e-12, rtol=0)


# ------------------------------------------------------------------ RotaryEmbedding's cache
def test_rotary_cache_built_once_grown_on_demand_and_per_dtype():
    rope = RotaryEmbedding(16)
    q = torch.randn(1, 2, 10, 16)
    rope(q, q)
    assert rope.cache_builds == 1
    for _ in range(5):  # repeated calls at the same or shorter length: no rebuild
        rope(q, q)
        rope(q[:, :, :3], q[:, :, :3])
    assert rope.cache_builds == 1
    length = rope._cache[(q.device, torch.float32)][0]
    within = torch.arange(length - 10, length)
    rope(q, q, within)
    assert rope.cache_builds == 1
    beyond = torch.arange(length, length + 10)  # past the cached table: grown once
    q2, _ = rope(q, q, beyond)
    assert rope.cache_builds == 2
    rope(q, q, beyond)
    assert rope.cache_builds == 2
    torch.testing.assert_close(q2.double(), ref_rope(q, beyond), atol=1e-5, rtol=0)
    rope(q.double(), q.double())  # a new dtype gets its own table
    assert rope.cache_builds == 3
    rope(q.to(torch.bfloat16), q.to(torch.bfloat16))  # half inputs share the float32 table
    assert rope.cache_builds == 3
    # growth is geometric: rising one position at a time triggers only a few builds
    rope2 = RotaryEmbedding(16)
    for t in range(1, 600):
        rope2(q[:, :, :1], q[:, :, :1], torch.tensor([t]))
    assert rope2.cache_builds <= 5


def test_rotary_cached_values_equal_uncached():
    torch.manual_seed(7)
    rope = RotaryEmbedding(32, layout="interleaved", base=500.0)
    q, k = torch.randn(2, 3, 9, 32), torch.randn(2, 3, 9, 32)
    positions = torch.randint(0, 3000, (2, 9))
    q_r, k_r = rope(q, k, positions)
    torch.testing.assert_close(q_r, apply_rope(q, positions, base=500.0, layout="interleaved"), atol=1e-6, rtol=0)
    torch.testing.assert_close(k_r.double(), ref_rope(k, positions, base=500.0, layout="interleaved"),
                               atol=1e-5, rtol=0)
