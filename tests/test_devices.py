"""Every public function and module on the CPU, on the `meta` device and on CUDA when present.

The meta device has shapes and dtypes but no data: any tensor the library creates on the CPU
behind the caller's back shows up as a result on the wrong device or a device-mismatch error, as
it would on a GPU. Outputs must stay on the caller's device, in the caller's dtype.
"""
import pytest
import torch

import posenc_lib as P

SCALINGS = [
    {"rope_type": "linear", "factor": 2.0},
    {"rope_type": "ntk", "factor": 4.0},
    {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4},
    {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 4, "low_freq_factor": 1.0,
     "high_freq_factor": 4.0},
]


def _x(device, dtype=torch.float32, shape=(2, 3, 5, 8)):
    return torch.ones(shape, device=device, dtype=dtype) * 0.5


# name -> f(device, dtype) -> tensor or tuple of tensors, every one expected on `device`
FUNCTIONS = {
    "sinusoidal_frequencies": lambda d, t: P.sinusoidal_frequencies(8, device=d, dtype=t),
    "sinusoidal_table": lambda d, t: P.sinusoidal_table(5, 8, device=d, dtype=t),
    "sinusoidal_table_concat": lambda d, t: P.sinusoidal_table(5, 8, layout="concat", device=d, dtype=t),
    "offset_matrix": lambda d, t: P.absolute.offset_matrix(3, 8, device=d, dtype=t),
    "layout_permutation": lambda d, t: P.layout_permutation(8, device=d),
    "SinusoidalEncoding": lambda d, t: P.SinusoidalEncoding(8)(_x(d, t, (2, 5, 8))),
    "SinusoidalEncoding_batched": lambda d, t: P.SinusoidalEncoding(8)(
        _x(d, t, (2, 5, 8)), torch.arange(10, device=d).view(2, 5)),
    "LearnedEncoding": lambda d, t: P.LearnedEncoding(6, 8).to(device=d, dtype=t)(_x(d, t, (2, 5, 8))),
    "rotate_half": lambda d, t: P.rotate_half(_x(d, t)),
    "rope_inv_freq": lambda d, t: P.rope_inv_freq(8, device=d)[0],
    "apply_rope_half": lambda d, t: P.apply_rope(_x(d, t)),
    "apply_rope_interleaved": lambda d, t: P.apply_rope(_x(d, t), torch.arange(5, device=d), layout="interleaved"),
    "apply_rope_batched": lambda d, t: P.apply_rope(_x(d, t), torch.arange(10, device=d).view(2, 5)),
    "apply_rope_inv_freq": lambda d, t: P.apply_rope(_x(d, t), inv_freq=P.rope_inv_freq(8, device=d)[0]),
    "rope_complex": lambda d, t: P.rope_complex(_x(d, t)),
    "rope_cos_sin": lambda d, t: P.rope_cos_sin(torch.arange(5, device=d), P.rope_inv_freq(8, device=d)[0], dtype=t),
    "rope_cos_sin_batched": lambda d, t: P.rope_cos_sin(torch.arange(3000, device=d).view(2, 1500),
                                                      P.rope_inv_freq(64, device=d)[0], dtype=t),
    "rotate_large": lambda d, t: P.rope.rotate(_x(d, t, (2, 3, 1500, 64)), torch.ones(1500, 32, device=d),
                                               torch.zeros(1500, 32, device=d)),  # the compiled loop on the CPU
    "rope_matrix": lambda d, t: P.rope_matrix(3, 8, device=d, dtype=t),
    "rope_decay_bound": lambda d, t: P.rope_decay_bound(torch.arange(5, device=d, dtype=t), 8),
    "RotaryEmbedding": lambda d, t: P.RotaryEmbedding(8)(_x(d, t), _x(d, t)),
    "RotaryEmbedding_batched": lambda d, t: P.RotaryEmbedding(8, layout="interleaved")(
        _x(d, t), _x(d, t), torch.arange(10, device=d).view(2, 5)),
    "t5_relative_bucket": lambda d, t: P.t5_relative_bucket(torch.arange(-5, 5, device=d)),
    "relative_positions": lambda d, t: P.relative_positions(torch.arange(3, device=d), torch.arange(4, device=d)),
    "T5RelativeBias": lambda d, t: P.T5RelativeBias(3).to(device=d, dtype=t)(4, 6),
    "ShawRelativePosition": lambda d, t: P.ShawRelativePosition(8, 2).to(device=d, dtype=t)(_x(d, t)),
    "alibi_slopes": lambda d, t: P.alibi_slopes(6, device=d, dtype=t),
    "alibi_bias": lambda d, t: P.alibi_bias(6, 3, 5, device=d, dtype=t),
    "ALiBi": lambda d, t: P.ALiBi(3).score_bias(_x(d, t), torch.arange(5, device=d), torch.arange(5, device=d)),
    "attention": lambda d, t: P.attention(_x(d, t), _x(d, t), _x(d, t), causal=True, return_weights=True),
    "attention_bias": lambda d, t: P.attention(_x(d, t), _x(d, t), _x(d, t), bias=P.alibi_bias(3, 5, device=d)),
}
for _s in SCALINGS:
    FUNCTIONS[f"rope_inv_freq_{_s['rope_type']}"] = (lambda s: lambda d, t: P.rope_inv_freq(8, scaling=s, device=d,
                                                                                          seq_len=50)[0])(_s)
    FUNCTIONS[f"RotaryEmbedding_{_s['rope_type']}"] = (lambda s: lambda d, t: P.RotaryEmbedding(8, scaling=s)(
        _x(d, t), _x(d, t), torch.arange(20, 25, device=d)))(_s)
for _kind in P.ENCODINGS:
    FUNCTIONS[f"MultiHeadAttention_{_kind}"] = (lambda k: lambda d, t: P.MultiHeadAttention(
        16, 2, encoding=P.make_encoding(k, d_model=16, num_heads=2), causal=True).to(device=d, dtype=t)(
        _x(d, t, (2, 5, 16))))(_kind)
    FUNCTIONS[f"TinyLM_{_kind}"] = (lambda k: lambda d, t: P.TinyLM(11, encoding=k, d_model=16, num_heads=2,
                                                                     num_layers=1, max_len=8).to(device=d, dtype=t)(
        torch.zeros(2, 5, dtype=torch.long, device=d), torch.zeros(2, 5, dtype=torch.long, device=d)))(_kind)

INTEGER_RESULTS = {"layout_permutation", "t5_relative_bucket", "relative_positions"}
# documented float64 (float32 on devices without it) whatever the input dtype
DTYPE_FREE = {"rope_inv_freq", "rope_decay_bound"} | {f"rope_inv_freq_{s['rope_type']}" for s in SCALINGS}


def _tensors(result):
    if isinstance(result, torch.Tensor):
        return [result]
    return [r for r in result if isinstance(r, torch.Tensor)]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_outputs_stay_on_the_callers_device(name, device):
    dtype = torch.float64 if device.type != "mps" else torch.float32
    outputs = _tensors(FUNCTIONS[name](device, dtype))
    assert outputs
    for out in outputs:
        assert out.device.type == device.type, f"{name} returned a tensor on {out.device}"
        if name in INTEGER_RESULTS:
            assert out.dtype == torch.int64
        elif name not in DTYPE_FREE:
            assert out.dtype == dtype, f"{name} returned {out.dtype}"


@pytest.mark.parametrize("name", [n for n in sorted(FUNCTIONS) if n.startswith(("apply_rope", "Rotary", "rope_complex",
                                                                                "Sinusoidal", "attention"))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_dtypes_kept(name, dtype, device):
    for out in _tensors(FUNCTIONS[name](device, dtype)):
        assert out.dtype == dtype and out.device.type == device.type


def test_every_public_name_is_exercised():
    """A new public function must be added to FUNCTIONS above (or be a non-tensor helper listed here)."""
    not_tensor_functions = {"ENCODINGS", "ROPE_INIT_FUNCTIONS", "ROPE_TYPES", "NoPE", "PositionalEncoding",
                            "make_encoding", "MultiHeadAttention", "TinyLM"}
    covered = {name.split("_")[0] if name[0].isupper() else name for name in FUNCTIONS}
    missing = [name for name in P.__all__ if name not in not_tensor_functions and name not in covered
               and not any(key.startswith(name) for key in FUNCTIONS)]
    assert not missing, f"public names with no device test: {missing}"


def test_positions_on_another_device_are_rejected_or_moved(device):
    """positions made with a bare torch.arange (on the CPU) for x on another device: the library either
    moves them to x's device or says so clearly; it never returns a result on the CPU."""
    x = _x(device)
    positions = torch.arange(5)  # CPU
    for f in (lambda: P.apply_rope(x, positions), lambda: P.RotaryEmbedding(8)(x, x, positions)[0],
              lambda: P.SinusoidalEncoding(8)(x[0], positions)):
        out = f()
        assert out.device.type == device.type
