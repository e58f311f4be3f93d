"""Bad input gets a ValueError/TypeError whose message names the parameter and what was expected
(issue 2, section 2), never a shape error deep inside torch or a silent wrong answer."""
import re

import pytest
import torch

import posenc_lib as P
from posenc_lib.absolute import offset_matrix

X = torch.randn(2, 3, 5, 8)
X3 = torch.randn(2, 5, 8)
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0}

# (id, call, exception type, regex the message must match -- the parameter's name and what was expected)
CASES = [
    # odd dimensions where pairs are needed
    ("table odd dim", lambda: P.sinusoidal_table(4, 5), ValueError, r"dim must be even.*got 5"),
    ("frequencies odd dim", lambda: P.sinusoidal_frequencies(3), ValueError, r"dim must be even"),
    ("SinusoidalEncoding odd", lambda: P.SinusoidalEncoding(7), ValueError, r"dim must be even"),
    ("layout_permutation odd", lambda: P.layout_permutation(3), ValueError, r"dim must be even"),
    ("offset_matrix odd", lambda: offset_matrix(1, 5), ValueError, r"dim must be even"),
    ("apply_rope odd head_dim", lambda: P.apply_rope(torch.randn(2, 5, 7)), ValueError, r"head_dim.*even.*7"),
    ("rope_complex odd", lambda: P.rope_complex(torch.randn(5, 3)), ValueError, r"head_dim.*even"),
    ("RotaryEmbedding odd", lambda: P.RotaryEmbedding(9), ValueError, r"dim must be even"),
    ("rope_inv_freq odd", lambda: P.rope_inv_freq(9), ValueError, r"dim must be even"),
    ("rope_matrix odd", lambda: P.rope_matrix(0, 7), ValueError, r"dim must be even"),
    ("dim zero", lambda: P.sinusoidal_table(4, 0), ValueError, r"dim must be >= 1"),
    ("dim float", lambda: P.sinusoidal_table(4, 8.0), TypeError, r"dim must be an int"),
    ("dim bool", lambda: P.rope_inv_freq(True), TypeError, r"dim must be an int"),
    # negative lengths
    ("table negative length", lambda: P.sinusoidal_table(-1, 4), ValueError, r"num_positions must be >= 0"),
    ("alibi_bias negative", lambda: P.alibi_bias(2, -1), ValueError, r"q_len must be >= 0"),
    ("alibi_bias k_len negative", lambda: P.alibi_bias(2, 1, -3), ValueError, r"k_len must be >= 0"),
    ("alibi_bias q_len > k_len", lambda: P.alibi_bias(2, 5, 3), ValueError, r"q_len must be <= k_len"),
    ("T5 bias negative", lambda: P.T5RelativeBias(2)(-1, 3), ValueError, r"q_len must be >= 1"),
    ("Learned max_len negative", lambda: P.LearnedEncoding(-5, 4), ValueError, r"max_len must be >= 1"),
    ("Shaw negative clip", lambda: P.ShawRelativePosition(8, -1), ValueError, r"max_relative_position must be >= 0"),
    ("seq_len negative", lambda: P.rope_inv_freq(8, scaling={"rope_type": "dynamic", "factor": 2.0,
                                                             "original_max_position_embeddings": 4}, seq_len=-3),
     ValueError, r"seq_len must be >= 1"),
    # unknown layouts and rope types, listing the valid ones
    ("table layout", lambda: P.sinusoidal_table(4, 4, layout="paper"), ValueError,
     r"layout must be one of \['concat', 'interleaved'\], got 'paper'"),
    ("SinusoidalEncoding layout", lambda: P.SinusoidalEncoding(4, layout="half"), ValueError,
     r"layout must be one of \['concat', 'interleaved'\]"),
    ("apply_rope layout", lambda: P.apply_rope(X, layout="neox"), ValueError,
     r"layout must be one of \['half', 'interleaved'\], got 'neox'"),
    ("RotaryEmbedding layout", lambda: P.RotaryEmbedding(8, layout="concat"), ValueError,
     r"layout must be one of \['half', 'interleaved'\]"),
    ("rope_matrix layout", lambda: P.rope_matrix(1, 8, layout="x"), ValueError, r"layout must be one of"),
    ("rope_type unknown", lambda: P.rope_inv_freq(8, scaling={"rope_type": "longrope", "factor": 2.0}), ValueError,
     r"rope_type'\] must be one of \['default', 'dynamic', 'linear', 'llama3', 'ntk', 'yarn'\], got 'longrope'"),
    ("rope_type missing", lambda: P.rope_inv_freq(8, scaling={"factor": 2.0}), ValueError,
     r"scaling needs a 'rope_type', one of"),
    ("encoding kind", lambda: P.make_encoding("absolute", d_model=8, num_heads=2), ValueError,
     r"kind must be one of \['alibi', 'learned', 'nope', 'rope', 'shaw', 'sinusoidal', 't5'\]"),
    # scaling keys: missing, unknown, out of range
    ("scaling not a dict", lambda: P.rope_inv_freq(8, scaling="linear"), TypeError, r"scaling must be a dict"),
    ("factor missing", lambda: P.rope_inv_freq(8, scaling={"rope_type": "linear"}), ValueError,
     r"rope_type='linear' is missing \['factor'\]"),
    ("yarn L0 missing", lambda: P.rope_inv_freq(8, scaling={"rope_type": "yarn", "factor": 2.0}), ValueError,
     r"missing \['original_max_position_embeddings'\]"),
    ("llama3 keys missing", lambda: P.rope_inv_freq(8, scaling={"rope_type": "llama3", "factor": 2.0,
                                                               "original_max_position_embeddings": 8}),
     ValueError, r"missing \['low_freq_factor', 'high_freq_factor'\]"),
    ("factor < 1", lambda: P.rope_inv_freq(8, scaling={"rope_type": "linear", "factor": 0.5}), ValueError,
     r"scaling\['factor'\] must be >= 1.0, got 0.5"),
    ("factor negative", lambda: P.RotaryEmbedding(8, scaling={"rope_type": "ntk", "factor": -2.0}), ValueError,
     r"scaling\['factor'\] must be >= 1.0"),
    ("factor string", lambda: P.rope_inv_freq(8, scaling={"rope_type": "linear", "factor": "2"}), TypeError,
     r"scaling\['factor'\] must be a number"),
    ("L0 zero", lambda: P.rope_inv_freq(8, scaling={"rope_type": "dynamic", "factor": 2.0,
                                                    "original_max_position_embeddings": 0}),
     ValueError, r"original_max_position_embeddings'\] must be >= 1"),
    ("low >= high freq factor", lambda: P.rope_inv_freq(8, scaling={**LLAMA3, "low_freq_factor": 4.0}), ValueError,
     r"high_freq_factor'\] must be > scaling\['low_freq_factor'\]"),
    ("beta_fast negative", lambda: P.rope_inv_freq(8, scaling={"rope_type": "yarn", "factor": 2.0,
                                                              "original_max_position_embeddings": 8,
                                                              "beta_fast": -1.0}),
     ValueError, r"beta_fast'\] must be > 0"),
    ("typo in key", lambda: P.rope_inv_freq(8, scaling={"rope_type": "linear", "factr": 2.0}), ValueError,
     r"unknown keys \['factr'\]"),
    ("ntk tiny dim", lambda: P.rope_inv_freq(2, scaling={"rope_type": "ntk", "factor": 2.0}), ValueError,
     r"dim must be >= 4"),
    ("base <= 1", lambda: P.sinusoidal_table(4, 4, base=1.0), ValueError, r"base must be > 1.0"),
    ("rope base negative", lambda: P.apply_rope(X, base=-10.0), ValueError, r"base must be > 1.0"),
    # positions whose shape does not fit x
    ("positions too long", lambda: P.apply_rope(X, torch.arange(6)), ValueError,
     r"positions must have shape \(seq,\) or \(batch, seq\) with seq=5.*got shape \(6,\)"),
    ("positions 3-D", lambda: P.apply_rope(X, torch.zeros(2, 1, 5, dtype=torch.long)), ValueError,
     r"positions must have shape"),
    ("positions batch mismatch", lambda: P.apply_rope(X, torch.zeros(3, 5, dtype=torch.long)), ValueError,
     r"batched positions of shape \(3, 5\) need x of shape \(batch=3"),
    ("Rotary positions", lambda: P.RotaryEmbedding(8)(X, X, torch.arange(4)), ValueError, r"positions must have shape"),
    ("Sinusoidal positions", lambda: P.SinusoidalEncoding(8)(X3, torch.arange(7)), ValueError,
     r"positions must have shape"),
    ("TinyLM positions", lambda: P.TinyLM(5, encoding="rope", d_model=8, num_heads=2)(
        torch.zeros(1, 4, dtype=torch.long), positions=torch.arange(3)), ValueError, r"positions must have shape"),
    ("float positions", lambda: P.apply_rope(X, torch.arange(5.0)), TypeError,
     r"positions must be an integer tensor"),
    ("inv_freq shape", lambda: P.apply_rope(X, inv_freq=torch.ones(3)), ValueError,
     r"inv_freq must be a tensor of shape \(dim/2,\) = \(4,\)"),
    ("x last dim vs module dim", lambda: P.RotaryEmbedding(16)(X, X), ValueError, r"q's last dimension must be dim=16"),
    ("Sinusoidal x dim", lambda: P.SinusoidalEncoding(16)(X3), ValueError, r"x's last dimension must be dim=16"),
    ("x 1-D", lambda: P.apply_rope(torch.randn(8)), ValueError, r"x must have shape \(\.\.\., seq, dim\)"),
    ("rotary negative positions", lambda: P.RotaryEmbedding(8)(X, X, torch.tensor([0, 1, -2, 3, 4])), ValueError,
     r"positions must be >= 0"),
    # integer x
    ("apply_rope int x", lambda: P.apply_rope(torch.ones(2, 5, 8, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor.*int64"),
    ("rope_complex int x", lambda: P.rope_complex(torch.ones(5, 8, dtype=torch.int32)), TypeError,
     r"x must be a floating-point tensor"),
    ("Rotary int q", lambda: P.RotaryEmbedding(8)(torch.ones(1, 5, 8, dtype=torch.long), X3), TypeError,
     r"q must be a floating-point tensor"),
    ("Sinusoidal int x", lambda: P.SinusoidalEncoding(8)(torch.ones(2, 5, 8, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor"),
    ("Learned int x", lambda: P.LearnedEncoding(8, 8)(torch.ones(2, 5, 8, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor"),
    ("attention int v", lambda: P.attention(X, X, torch.ones(2, 3, 5, 8, dtype=torch.long)), TypeError,
     r"v must be a floating-point tensor"),
    ("x not a tensor", lambda: P.apply_rope([[1.0, 2.0]]), TypeError, r"x must be a torch.Tensor, got list"),
    ("MHA int x", lambda: P.MultiHeadAttention(8, 2)(torch.ones(1, 5, 8, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor"),
    # non-integer relative positions
    ("bucket float", lambda: P.t5_relative_bucket(torch.tensor([-1.5, 2.0])), TypeError,
     r"relative_position must be an integer tensor.*float32"),
    ("bucket bool", lambda: P.t5_relative_bucket(torch.tensor([True])), TypeError, r"relative_position must be an int"),
    ("relative_positions float", lambda: P.relative_positions(torch.arange(3.0), torch.arange(3)), TypeError,
     r"q_positions must be an integer tensor"),
    ("Shaw float positions", lambda: P.ShawRelativePosition(8, 2)(X, torch.arange(5.0)), TypeError,
     r"q_positions must be an integer tensor"),
    # T5 settings
    ("T5 num_buckets", lambda: P.t5_relative_bucket(torch.arange(3), num_buckets=2), ValueError,
     r"num_buckets must be >= 4 \(bidirectional=True\)"),
    ("T5 max_distance", lambda: P.T5RelativeBias(2, num_buckets=32, max_distance=8), ValueError,
     r"max_distance must be > 8"),
    # zero heads
    ("slopes zero heads", lambda: P.alibi_slopes(0), ValueError, r"num_heads must be >= 1, got 0"),
    ("alibi_bias zero heads", lambda: P.alibi_bias(0, 3), ValueError, r"num_heads must be >= 1"),
    ("ALiBi zero heads", lambda: P.ALiBi(0), ValueError, r"num_heads must be >= 1"),
    ("T5 zero heads", lambda: P.T5RelativeBias(0), ValueError, r"num_heads must be >= 1"),
    ("MHA zero heads", lambda: P.MultiHeadAttention(8, 0), ValueError, r"num_heads must be >= 1"),
    ("MHA heads do not divide", lambda: P.MultiHeadAttention(10, 4), ValueError,
     r"d_model must be divisible by num_heads"),
    ("slopes float heads", lambda: P.alibi_slopes(4.0), TypeError, r"num_heads must be an int"),
    ("ALiBi heads vs q", lambda: P.MultiHeadAttention(16, 4, encoding=P.ALiBi(2))(torch.randn(1, 5, 16)),
     ValueError, r"num_heads"),
    ("T5 heads vs q", lambda: P.MultiHeadAttention(16, 4, encoding=P.T5RelativeBias(2))(torch.randn(1, 5, 16)),
     ValueError, r"num_heads"),
    # learned embeddings past max_len
    ("learned past max_len", lambda: P.LearnedEncoding(4, 8)(X3), ValueError,
     r"sequence length 5 exceeds max_len=4"),
    ("learned position past max_len", lambda: P.LearnedEncoding(10, 8)(X3, torch.tensor([0, 1, 2, 3, 10])),
     ValueError, r"positions must lie in \[0, max_len=10\).*max 10"),
    ("learned negative position", lambda: P.LearnedEncoding(10, 8)(X3, torch.tensor([-1, 1, 2, 3, 4])), ValueError,
     r"positions must lie in \[0, max_len=10\)"),
    ("TinyLM learned past max_len", lambda: P.TinyLM(5, encoding="learned", d_model=8, num_heads=2, max_len=4)(
        torch.zeros(1, 6, dtype=torch.long)), ValueError, r"max_len=4"),
    # attention and the model
    ("attention q/k dims", lambda: P.attention(X, torch.randn(2, 3, 5, 4), X), ValueError,
     r"q and k must share the last dimension"),
    ("attention k/v lengths", lambda: P.attention(X, X, torch.randn(2, 3, 4, 8)), ValueError,
     r"k and v must have the same number of positions"),
    ("causal more queries than keys", lambda: P.attention(torch.randn(1, 6, 8), torch.randn(1, 4, 8),
                                                          torch.randn(1, 4, 8), causal=True),
     ValueError, r"causal attention needs q_len <= k_len"),
    ("MHA x 2-D", lambda: P.MultiHeadAttention(8, 2)(torch.randn(5, 8)), ValueError,
     r"x must have shape \(batch, seq, d_model=8\)"),
    ("MHA x width", lambda: P.MultiHeadAttention(8, 2)(torch.randn(1, 5, 6)), ValueError,
     r"x must have shape \(batch, seq, d_model=8\)"),
    ("MHA encoding type", lambda: P.MultiHeadAttention(8, 2, encoding="rope"), TypeError,
     r"encoding must be a posenc_lib PositionalEncoding"),
    ("TinyLM float idx", lambda: P.TinyLM(5, d_model=8, num_heads=2)(torch.zeros(1, 4)), TypeError,
     r"idx must be an integer tensor"),
    ("TinyLM 1-D idx", lambda: P.TinyLM(5, d_model=8, num_heads=2)(torch.zeros(4, dtype=torch.long)), ValueError,
     r"idx must have shape \(batch, seq\)"),
    ("TinyLM encoding", lambda: P.TinyLM(5, encoding=3, d_model=8, num_heads=2), TypeError,
     r"encoding must be one of"),
    ("rope_matrix float position", lambda: P.rope_matrix(1.5, 8), TypeError, r"position must be an int"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_named(call, exc, pattern):
    with pytest.raises(exc) as info:
        call()
    assert re.search(pattern, str(info.value)), f"message {str(info.value)!r} does not match {pattern!r}"


def test_errors_leave_no_partial_state():
    rope = P.RotaryEmbedding(8)
    with pytest.raises(ValueError):
        rope(X, X, torch.arange(6))
    assert rope.cache_builds == 0 and not rope._cache


def test_yarn_optional_keys_given_as_none_fall_back_to_defaults():
    base = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    expected = P.rope_inv_freq(32, scaling=base)
    got = P.rope_inv_freq(32, scaling={**base, "beta_fast": None, "beta_slow": None, "attention_factor": None})
    torch.testing.assert_close(got[0], expected[0])
    assert got[1] == expected[1]


def test_tinylm_names_the_encoding_parameter():
    from posenc_lib.model import TinyLM

    with pytest.raises(ValueError, match=r"encoding must be one of .*'rope'.*got 'ropee'"):
        TinyLM(129, encoding="ropee")
