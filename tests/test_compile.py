"""No host reads in the hot path: `torch.compile(..., fullgraph=True)` traces apply_rope, RotaryEmbedding and
a MultiHeadAttention with every registered encoding as one graph (a check that reads a tensor's values,
`int(t.max())` or `bool(t.all())`, would break it), and gives the eager results. On CUDA, the same forward
runs under torch.cuda.set_sync_debug_mode("error"): any device-to-host copy raises.

The tests compile with the "eager" backend: dynamo's tracing, which is what fullgraph checks, without
inductor's C++ build (make bench measures the fused speed)."""
import pytest
import torch

from posenc_lib import ENCODINGS, MultiHeadAttention, RotaryEmbedding, apply_rope, make_encoding


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend="eager")


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("with_positions", [False, True])
def test_apply_rope_compiles_as_one_graph(layout, with_positions):
    x = torch.randn(2, 4, 16, 32)
    positions = torch.arange(7, 23) if with_positions else None
    args = dict(layout=layout, partial_rotary_factor=0.5 if with_positions else 1.0)
    fn = _compiled(lambda t, p: apply_rope(t, p, **args))
    torch.testing.assert_close(fn(x, positions), apply_rope(x, positions, **args), atol=0, rtol=0)


@pytest.mark.parametrize("scaling", [None, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16},
                                     {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 16,
                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0}])
def test_rotary_embedding_compiles_as_one_graph(scaling):
    rope = RotaryEmbedding(32, scaling=scaling)
    q, k = torch.randn(2, 4, 16, 32), torch.randn(2, 4, 16, 32)
    positions = torch.arange(100, 116)[None].expand(2, 16)
    fn = _compiled(lambda a, b, p: rope(a, b, p))
    for got, want in zip(fn(q, k, positions), rope(q, k, positions)):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)  # compiled: cos/sin computed, eager: the table


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_attention_with_every_encoding_compiles_as_one_graph(name):
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4, encoding=make_encoding(name, d_model=32, num_heads=4), causal=True)
    x, positions = torch.randn(2, 16, 32), torch.arange(3, 19)
    fn = _compiled(lambda t, p: mha(t, p))
    torch.testing.assert_close(fn(x, positions), mha(x, positions), atol=1e-6, rtol=0)
    fn = _compiled(lambda t: mha(t))
    torch.testing.assert_close(fn(x), mha(x), atol=1e-6, rtol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_a_cuda_forward_never_waits_for_the_gpu(name):
    torch.manual_seed(0)
    mha = MultiHeadAttention(64, 4, encoding=make_encoding(name, d_model=64, num_heads=4), causal=True).cuda()
    x, positions = torch.randn(2, 32, 64, device="cuda"), torch.arange(5, 37, device="cuda")
    mha(x, positions)  # a first call may build tables from CPU values; the calls after it must not sync
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        mha(x, positions)
        mha(x)
        apply_rope(x.view(2, 32, 4, 16).transpose(1, 2), positions)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_a_fixed_table_compiles_and_names_positions_outside_it():
    rope, table = RotaryEmbedding(32), RotaryEmbedding(32, max_positions=64)
    q, k = torch.randn(2, 4, 16, 32), torch.randn(2, 4, 16, 32)
    positions = torch.arange(40, 56)
    fn = _compiled(lambda a, b, p: table(a, b, p))
    for got, want in zip(fn(q, k, positions), rope(q, k, positions)):
        torch.testing.assert_close(got, want, atol=0, rtol=0)  # the same float64-made table rows
    assert table.cache_builds == 1
    with pytest.raises(ValueError, match=r"q_positions must lie in \[0, max_positions=64\), got min 60, max 75"):
        table(q, k, torch.arange(60, 76))
    with pytest.raises(ValueError, match="max_positions: a fixed table cannot follow dynamic"):
        RotaryEmbedding(32, max_positions=64, scaling={"rope_type": "dynamic", "factor": 2.0,
                                                       "original_max_position_embeddings": 32})
    with pytest.raises(ValueError, match="max_positions"):
        RotaryEmbedding(32, max_positions=0)
