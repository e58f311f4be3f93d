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
        torch.testing.assert_close(got, want, atol=0, rtol=0)  # both make cos/sin from the positions


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
    mha(x, positions)  # a first call may make the frequencies (from CPU values); the calls after it must not sync
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        mha(x, positions)
        mha(x)
        apply_rope(x.view(2, 32, 4, 16).transpose(1, 2), positions)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_one_compiled_graph_follows_the_positions_of_every_call():
    """cos/sin are made from the positions inside the graph, not baked into it: one compiled forward called at
    other positions (a later window, batched, a decoding step's one query against its keys) gives transformers'
    LlamaRotaryEmbedding + apply_rotary_pos_emb at those positions, as eager does."""
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as hf
    config = LlamaConfig(hidden_size=128, num_attention_heads=4, head_dim=32,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    hf_rotary, rope = hf.LlamaRotaryEmbedding(config), RotaryEmbedding(32)
    forward = _compiled(lambda a, b, p: rope(a, b, p))
    rotate_qk = _compiled(lambda a, b, p, s: rope.rotate_qk(a, b, p, s))
    gen = torch.Generator().manual_seed(5)
    q, k = torch.randn(2, 4, 16, 32, generator=gen), torch.randn(2, 4, 16, 32, generator=gen)
    for positions in (torch.arange(16), torch.arange(40, 56), torch.randint(0, 200, (2, 16), generator=gen)):
        cos, sin = hf_rotary(q, positions.expand(2, -1))
        for got, want in zip(forward(q, k, positions), hf.apply_rotary_pos_emb(q, k, cos, sin)):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=0)  # HF's float32 angles, ours float64
    one, keys = torch.tensor([15]), torch.arange(16)
    got_q, got_k = rotate_qk(q[:, :, -1:], k, one, keys)
    torch.testing.assert_close(got_q, rope(q, k, keys)[0][:, :, -1:], atol=0, rtol=0)
    torch.testing.assert_close(got_k, rope(q, k, keys)[1], atol=0, rtol=0)
