"""The seed notes (../shared/seeds/*.txt next to the repository): their right examples reproduced, and for
each bug in their code, what the library does instead. The seed code is NOT copied: each `_seed_*` helper
below is a minimal reproduction of what the seed code does, written for this test, and used only where
the library is compared with it (what torch does with the seed code alone is not tested here).
"""
import glob
import math
import re
from pathlib import Path

import pytest
import torch
from conftest import ref_frequencies
from torch import nn

import posenc_lib as P

SEEDS = Path(__file__).resolve().parents[1] / ".." / "shared" / "seeds"  # the course's shared notes

# 004_*.txt prints getPositionEncoding(seq_len=4, d=4, n=100). Retyped here so the test also runs on a
# clone without the seed notes; when the notes are present the test parses them and checks this copy.
TABLE_004 = [[0.0, 1.0, 0.0, 1.0],
             [0.84147098, 0.54030231, 0.09983342, 0.99500417],
             [0.90929743, -0.41614684, 0.19866933, 0.98006658],
             [0.14112001, -0.9899925, 0.29552021, 0.95533649]]


def _parse_table_004():
    files = glob.glob(str(SEEDS / "004_*.txt"))
    if not files:
        return None
    text = Path(files[0]).read_text(encoding="utf-8")
    block = re.search(r"\[\[(.*?)\]\]", text, re.S).group(1)  # the first printed numpy matrix
    rows = [re.findall(r"-?\d+\.\d*(?:e-?\d+)?", row) for row in block.split("]")]
    return [[float(v) for v in row] for row in rows if row]


def test_004_robot_table_is_reproduced():
    parsed = _parse_table_004()
    if parsed is not None:
        assert parsed == TABLE_004
    table = P.sinusoidal_table(4, 4, base=100.0, dtype=torch.float64)  # n = 100, d = 4, "I am a robot"
    torch.testing.assert_close(table, torch.tensor(TABLE_004, dtype=torch.float64), atol=1e-8, rtol=0)
    # the same numbers in the paper's float32 default
    torch.testing.assert_close(P.sinusoidal_table(4, 4, base=100.0), torch.tensor(TABLE_004), atol=1e-7, rtol=0)


def test_003_offset_example_is_a_rotation_on_sin_cos():
    """003 checks PE(pos + k) from PE(pos) at pos=10, k=3, pair i=10, d=512 with [[cos, sin], [-sin, cos]]."""
    pe = P.sinusoidal_table(14, 512, dtype=torch.float64)
    beta = 3 * ref_frequencies(512, 10000.0)[10]
    s, c = pe[10, 20], pe[10, 21]
    torch.testing.assert_close(pe[13, 20], s * math.cos(beta) + c * math.sin(beta))
    torch.testing.assert_close(pe[13, 21], c * math.cos(beta) - s * math.sin(beta))
    torch.testing.assert_close(P.absolute.offset_matrix(3, 512) @ pe[10], pe[13], atol=1e-12, rtol=0)


def test_003_which_frequency_is_fast():
    """003 labels pair 0 (omega = 1) as the slowly varying one; it is the fastest: one turn per 2*pi tokens."""
    omega = P.sinusoidal_frequencies(512)
    assert omega[0] == 1.0 and (omega[1:] < omega[:-1]).all()
    table = P.sinusoidal_table(100, 512, dtype=torch.float64)
    change = (table[1:] - table[:-1]).abs().mean(0)  # how much each column moves per token
    assert change[0] > 100 * change[-2]


# ------------------------------------------------------------------ bugs in the seeds' sinusoidal code (000, 001, 004)
def _seed_sinusoidal_buffer(max_len, d_model):
    """The 000/001 pattern: a fixed (max_len, d_model) buffer filled with pe[:, 0::2] = sin, pe[:, 1::2] = cos,
    frequencies from exp(-log(10000) * 2i / d) in float32."""
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)
    return pe


def test_odd_d_model_gets_a_named_error():
    """The seed's buffer fails on an odd d_model with a bare size mismatch (1::2 has one column fewer than 0::2)."""
    with pytest.raises(ValueError, match="dim must be even"):
        P.SinusoidalEncoding(7)
    with pytest.raises(ValueError, match="dim must be even"):
        P.sinusoidal_table(10, 7)


def test_fixed_max_len_buffer_vs_no_maximum():
    """The seed adds a fixed 50-row buffer (x + pe[:, :60] fails past it); the library computes any position,
    and agrees with the seed's buffer where it has rows."""
    x = torch.zeros(1, 60, 8)
    out = P.SinusoidalEncoding(8)(x)
    torch.testing.assert_close(out[0], P.sinusoidal_table(60, 8))
    torch.testing.assert_close(out[0, :50], _seed_sinusoidal_buffer(50, 8), atol=1e-5, rtol=0)


def test_float32_angles_of_the_seed_drift_at_long_positions():
    """The seed builds angles position * div_term in float32; at 100k+ positions they are off by ~1e-2 rad.
    The library's angles are float64, so its float32 table stays within 1e-5 of the formula."""
    positions = torch.arange(100_000, 100_064)
    omega = torch.tensor(ref_frequencies(64, 10000.0), dtype=torch.float64)
    exact = positions.double()[:, None] * omega
    exact_table = torch.stack((exact.sin(), exact.cos()), -1).flatten(-2)
    ours = P.SinusoidalEncoding(64)(torch.zeros(1, 64, 64), positions)[0]
    assert (ours.double() - exact_table).abs().max() < 1e-5


def test_004_loop_table_equals_the_vectorised_one():
    """004 fills the table with two Python loops (~50x slower); the library's vectorised table is the same."""
    seq_len, d, n = 30, 16, 100.0
    loop = torch.zeros(seq_len, d, dtype=torch.float64)
    for k in range(seq_len):
        for i in range(d // 2):
            denominator = n ** (2 * i / d)
            loop[k, 2 * i], loop[k, 2 * i + 1] = math.sin(k / denominator), math.cos(k / denominator)
    torch.testing.assert_close(P.sinusoidal_table(seq_len, d, base=n, dtype=torch.float64), loop, atol=1e-12, rtol=0)


def test_004_plot_exponent_uses_the_column_not_the_pair_index():
    """004's sinusoid plot uses exponent 2*j/d with j the column (the mistake `i` instead of 2*floor(i/2)):
    then a sin column and its cos partner no longer share a frequency. In the library they do."""
    d, n = 16, 10000.0
    table = P.sinusoidal_table(200, d, base=n, dtype=torch.float64)
    pair_norm = table[:, 0::2] ** 2 + table[:, 1::2] ** 2  # sin^2 + cos^2 of one frequency: exactly 1
    torch.testing.assert_close(pair_norm, torch.ones_like(pair_norm))


# ------------------------------------------------------------------ bugs in the seed's RoPE demo (000)
class _SeedRotary(nn.Module):
    """What 000's RotaryPositionalEmbedding does: cos/sin buffers for max_seq_len positions, rebuilt from a
    CPU arange whenever a call is longer than max_seq_len (and max_seq_len is never updated)."""

    def __init__(self, dim, max_seq_len):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim))
        self._build(max_seq_len)

    def _build(self, seq_len):
        freqs = torch.outer(torch.arange(seq_len).float(), self.inv_freq)  # arange on the CPU
        emb = torch.cat((freqs, freqs), -1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    def forward(self, q, k, seq_len):
        if seq_len > self.max_seq_len:
            self._build(seq_len)
        cos, sin = self.cos_cached[:seq_len], self.sin_cached[:seq_len]
        return q * cos + P.rotate_half(q) * sin, k * cos + P.rotate_half(k) * sin


def test_lambda_as_module_attribute_vs_nope():
    """000 switches RoPE off with `attn.rope = lambda q, k, seq_len: (q, k)`, which torch refuses (a function
    where a submodule lives). The library's 'no position' is a module, NoPE, and a function is refused clearly."""
    model = P.TinyLM(10, encoding="rope", d_model=16, num_heads=2, num_layers=2)
    model.replace_encoding(P.NoPE())
    assert all(isinstance(b.attn.encoding, P.NoPE) for b in model.blocks)
    model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="encoding must be a PositionalEncoding"):
        model.replace_encoding(lambda q, k: (q, k))


def test_cache_rebuilt_on_every_long_call_vs_no_table():
    """The seed rebuilds its tables on EVERY call past max_seq_len (it never updates the bound); the library
    keeps no table at all: cos/sin come from each call's positions, so no call depends on an earlier one."""
    seed = _SeedRotary(8, 16)
    builds = []
    build = seed._build
    seed._build = lambda seq_len: (builds.append(seq_len), build(seq_len))
    q = torch.randn(1, 2, 40, 8)
    rope = P.RotaryEmbedding(8)
    for _ in range(5):
        out, _ = rope(q, q)
        seed_out, _ = seed(q, q, 40)
    assert builds == [40] * 5  # rebuilt on every call
    torch.testing.assert_close(out, seed_out, atol=1e-5, rtol=0)  # the same rotation
    short = torch.randn(1, 2, 7, 8)
    assert torch.equal(rope(short, short)[0], P.apply_rope(short))  # after longer calls: apply_rope's, exactly
    assert torch.equal(out, P.apply_rope(q))


def test_rope_past_its_cache_stays_on_the_device():
    """The seed's rebuild uses a CPU arange, so it fails on any other device (meta stands in for CUDA here:
    on a GPU the error is torch's "Expected all tensors to be on the same device"); the library's does not."""
    q = torch.randn(1, 2, 40, 8, device="meta")
    out, _ = P.RotaryEmbedding(8)(q, q)
    assert out.device.type == "meta"
    seed = _SeedRotary(8, 16).to("meta")
    with pytest.raises(RuntimeError, match="device"):
        seed(q, q, 40)  # 40 > max_seq_len: the rebuild's arange is on the CPU, inv_freq on meta


def test_rope_keeps_the_dtype_of_half_inputs():
    """The seed multiplies bf16 q by its float32 cos buffer, so its result silently becomes float32; the
    library's stays bf16 and agrees with the seed's rotation."""
    q = torch.randn(1, 2, 8, 8).to(torch.bfloat16)
    out = P.RotaryEmbedding(8)(q, q)[0]
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, _SeedRotary(8, 16)(q, q, 8)[0].to(torch.bfloat16))


def test_q4_frequency_snippet_doubles_the_exponent():
    """000's Q4 tip writes theta = 10000 ** (-2 * arange(0, dim, 2) / dim): arange(0, dim, 2) is already 2i, so
    this is base 10^8, every frequency squared; for dim 8: [1, 1e-2, 1e-4, 1e-6] instead of [1, 1e-1, 1e-2, 1e-3]."""
    dim = 8
    q4 = (10000 ** (-2 * torch.arange(0, dim, 2) / dim)).double()
    inv_freq, _ = P.rope_inv_freq(dim)
    torch.testing.assert_close(inv_freq, torch.tensor(ref_frequencies(dim, 10000.0), dtype=torch.float64))
    torch.testing.assert_close(q4, P.rope_inv_freq(dim, base=1e8)[0], rtol=1e-6, atol=0)
    torch.testing.assert_close(q4, inv_freq ** 2, rtol=1e-6, atol=0)
    torch.testing.assert_close(q4, torch.tensor([1.0, 1e-2, 1e-4, 1e-6], dtype=torch.float64), rtol=1e-6, atol=0)


def test_q4_rotation_snippet_turns_clockwise():
    """000's Q4 tip writes q * cos - q_shifted * sin; its class writes q * cos + rotate_half(q) * sin. With
    q_shifted = rotate_half(q) the tip is RoPE at negated positions (scores of (m, n) = the class's (n, m)),
    and mixing the two for q and k makes the score depend on m + n."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 8, generator=gen, dtype=torch.float64)
    pos = torch.arange(6)
    angles = pos[:, None].double() * torch.tensor(ref_frequencies(8, 10000.0), dtype=torch.float64)
    cos, sin = torch.cat((angles.cos(),) * 2, -1), torch.cat((angles.sin(),) * 2, -1)
    torch.testing.assert_close(x * cos + P.rotate_half(x) * sin, P.apply_rope(x, pos))
    torch.testing.assert_close(x * cos - P.rotate_half(x) * sin, P.apply_rope(x, -pos))
    q, k = x[:1], x[1:2]

    def score(q_sign, k_sign, m, n):
        return float(P.apply_rope(q, torch.tensor([q_sign * m]))[0] @ P.apply_rope(k, torch.tensor([k_sign * n]))[0])

    assert score(-1, -1, 5, 2) == pytest.approx(score(1, 1, 2, 5), abs=1e-12)
    assert score(1, -1, 5, 2) == pytest.approx(score(1, -1, 7, 0), abs=1e-12)       # m + n = 7 in both
    assert score(1, -1, 5, 2) != pytest.approx(score(1, -1, 105, 102), abs=1e-6)    # same m - n, other m + n


def test_000_prose_pairs_neighbours_code_pairs_halves():
    """000's derivation pairs (x1, x2), (x3, x4), ... (interleaved) while its code uses rotate_half (half-split):
    two different functions, equal only after layout_permutation."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 8, generator=gen, dtype=torch.float64)
    pos = torch.arange(4)
    prose, code = P.apply_rope(x, pos, layout="interleaved"), P.apply_rope(x, pos, layout="half")
    # the prose's pairing written out: pair i = (x[2i], x[2i+1]) turned by pos * theta_i
    theta = torch.tensor(ref_frequencies(8, 10000.0), dtype=torch.float64)
    a = pos[:, None].double() * theta
    written = torch.stack((x[:, 0::2] * a.cos() - x[:, 1::2] * a.sin(),
                           x[:, 1::2] * a.cos() + x[:, 0::2] * a.sin()), -1)
    torch.testing.assert_close(prose, written.flatten(-2))
    assert (prose - code).abs().max() > 0.1
    perm = P.layout_permutation(8)
    torch.testing.assert_close(P.apply_rope(x[:, perm], pos, layout="half"), prose[:, perm], rtol=0, atol=1e-12)


def test_000_partial_rotary_comment_describes_real_models():
    """000's comment "RoPE only on part of the dims (usually the first half)" (its code rotates all): GPT-NeoX
    rotates the first rotary_pct = 0.25 of each head, GPT-J the first rotary_dim = 64 of 256 (transformers'
    configs and modeling code); the rest passes through unchanged. GLM rotates half: transformers' GlmConfig
    default and the published GLM-4 9B config, 64 of 128."""
    from transformers import GlmConfig, GPTJConfig, GPTNeoXConfig, LlamaConfig

    from posenc_lib.experiments.results import load_model_configs

    assert GlmConfig().rope_parameters["partial_rotary_factor"] == 0.5
    glm4 = next(m for m in load_model_configs() if m["name"] == "GLM-4 9B Chat (HF format)")
    glm4_layer = P.from_hf_config(glm4["config"]).layer(0)
    assert (glm4_layer.rotary_dim, glm4_layer.head_dim) == (64, 128)
    from transformers.models.gpt_neox import modeling_gpt_neox as neox

    neox_config, gptj_config = GPTNeoXConfig(), GPTJConfig()
    assert LlamaConfig().rope_parameters.get("partial_rotary_factor", 1.0) == 1.0  # Llama rotates every dim
    assert neox_config.rope_parameters["partial_rotary_factor"] == 0.25
    head_dim = neox_config.hidden_size // neox_config.num_attention_heads
    assert (head_dim, int(head_dim * 0.25)) == (96, 24)
    assert gptj_config.rotary_dim == 64 and gptj_config.n_embd // gptj_config.n_head == 256
    # GPT-NeoX's apply_rotary_pos_emb rotates the first cos.shape[-1] dims and passes the rest through
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 5, head_dim, generator=gen)
    rotary = int(head_dim * 0.25)
    cos, sin = P.rope_cos_sin(torch.arange(5), P.rope_inv_freq(rotary)[0])
    cos, sin = torch.cat((cos, cos), -1)[None], torch.cat((sin, sin), -1)[None]
    out, _ = neox.apply_rotary_pos_emb(q, q, cos, sin)
    torch.testing.assert_close(out[..., rotary:], q[..., rotary:], rtol=0, atol=0)
    torch.testing.assert_close(out[..., :rotary], P.apply_rope(q[..., :rotary], torch.arange(5)))


def test_000_std_comparison_measures_the_initialisation():
    """000 compares the output std of two attention layers with different random weights, one with RoPE. With
    the same weights RoPE moves the std far less than another seed does; order shows in the permutation test."""
    d_model, heads, T = 512, 8, 64
    x = torch.randn(2, T, d_model, generator=torch.Generator().manual_seed(1))

    def layer(seed, encoding):
        torch.manual_seed(seed)
        return P.MultiHeadAttention(d_model, heads, encoding=encoding, bias=True)

    with torch.no_grad():
        stds = [float(layer(seed, P.NoPE())(x).std()) for seed in range(4)]
        rope, nope = layer(0, P.RotaryEmbedding(d_model // heads)), layer(0, P.NoPE())
        gap = abs(float(rope(x).std()) - float(nope(x).std()))
        shuffle = torch.randperm(T, generator=torch.Generator().manual_seed(2))
        assert (nope(x[:, shuffle]) - nope(x)[:, shuffle]).abs().max() < 1e-5
        assert (rope(x[:, shuffle]) - rope(x)[:, shuffle]).abs().max() > 1e-2
    assert max(stds) - min(stds) > 10 * gap


def test_000_relative_does_not_mean_extrapolates():
    """000's table: relative encodings extrapolate better (长度外推 较好). Notebook 07's measurement (data/): RoPE,
    relative, rises more at 8L than no encoding at all; T5 rises too; only ALiBi stays flat."""
    from posenc_lib.experiments import load_results

    summary = load_results("extrapolation")["summary"]
    rise = {enc: summary[enc]["8"]["mean"] - summary[enc]["1"]["mean"] for enc in ("rope", "t5", "alibi", "nope")}
    assert rise["rope"] > 1.0 and rise["rope"] > rise["nope"]
    assert rise["alibi"] < rise["t5"] < rise["rope"] and rise["t5"] > 0.1 and abs(rise["alibi"]) < 0.1


def test_permutation_claim_of_000_and_001():
    """000/001 say shuffling "我 爱 北京" leaves self-attention's result unchanged. Per token it does not:
    the outputs are shuffled the same way (equivariance); only a pooled readout is unchanged."""
    torch.manual_seed(0)
    vocab = {"我": 0, "爱": 1, "北京": 2}
    embed = nn.Embedding(3, 16)
    attn = P.MultiHeadAttention(16, 2)
    a = attn(embed(torch.tensor([[vocab[w] for w in ["我", "爱", "北京"]]])))
    b = attn(embed(torch.tensor([[vocab[w] for w in ["爱", "北京", "我"]]])))
    assert not torch.allclose(a, b, atol=1e-4)
    torch.testing.assert_close(b, a[:, [1, 2, 0]], atol=1e-6, rtol=0)
    torch.testing.assert_close(b.mean(1), a.mean(1), atol=1e-6, rtol=0)


@pytest.mark.parametrize("edition", ["notebooks", "notebooks/zh"])
def test_06_quotes_seed_q4_verbatim(edition):
    """06 section 6 shows the seed passage it reviews (000's Q4) so a learner can follow; every line of the
    quoted block is the seed's own line (checked against the notes when they are present)."""
    import json
    root = Path(__file__).resolve().parents[1]
    cells = json.loads((root / edition / "06_rope.ipynb").read_text())["cells"]
    text = next("".join(c["source"]) for c in cells
                if c["cell_type"] == "markdown" and "### Q4:" in "".join(c["source"]))
    block = text[text.index("```text") + len("```text"):].split("```")[0]
    quoted = [line.strip() for line in block.splitlines() if line.strip()]
    assert "theta = 10000 ** (-2 * torch.arange(0, dim, 2) / dim)" in quoted  # the doubled exponent, point (4)
    assert "q_rot = q * cos_cached - q_shifted * sin_cached" in quoted        # the undefined q_shifted, point (5)
    files = glob.glob(str(SEEDS / "000_*.txt"))
    if files:
        seed_lines = {line.strip() for line in Path(files[0]).read_text(encoding="utf-8").splitlines()}
        assert [line for line in quoted if line not in seed_lines] == []
