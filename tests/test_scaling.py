"""Context-extension scalings of the RoPE frequencies (posenc_lib.scaling) against Hugging Face's
ROPE_INIT_FUNCTIONS and the formulas, the registry of rope types, and a named error for every bad scaling.

HF computes the frequencies in float32, the library in float64: they agree to a few float32 ulps
(HF rounds 2i/dim to float32 and the power base ** e amplifies that by ln(base)), which is the
tolerance used here. HF has no static "ntk" type: it is checked against its formula and against
HF "dynamic" at the length where the two coincide. HF's dynamic uses config.max_position_embeddings
where the library's rope_parameters name it original_max_position_embeddings.
"""
import ast
import math

import pytest
import torch
from conftest import float32_ulp, ref_frequencies, ref_rope
from hypothesis import given, strategies as st
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS as HF_ROPE_INIT
from transformers.models.llama import modeling_llama as hf_llama

from posenc_lib import ROPE_SCALINGS, ROPE_TYPES, RotaryEmbedding, apply_rope, rope_inv_freq, rotary_dim


def _config(head_dim, base, params, max_position_embeddings):
    return LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                       max_position_embeddings=max_position_embeddings,
                       rope_parameters={"rope_theta": base, **params})


def _assert_close_to_hf(ours: torch.Tensor, hf: torch.Tensor, base: float, amplification: float = 1.0):
    """HF's float32 frequencies are within (3 + ln(base)) float32 ulps of ours, times `amplification`
    where HF blends two float32 values with a weight computed from them (llama3's smoothing band)."""
    assert ours.dtype == torch.float64 and hf.shape == ours.shape
    ulps = (hf.double() - ours).abs() / float32_ulp(ours)
    assert ulps.max() <= (3 + math.log(base)) * amplification, f"{ulps.max().item():.1f} float32 ulps apart"


def _hf(params, head_dim, base, max_position_embeddings, seq_len=None):
    config = _config(head_dim, base, params, max_position_embeddings)
    return HF_ROPE_INIT[params["rope_type"]](config, torch.device("cpu"), seq_len=seq_len)


def _ref_yarn(dim, base, p):
    """YaRN (Peng et al. 2023, and its reference code) in plain float64 Python: pair i keeps theta_i when
    it turns more than beta_fast times over L0, becomes theta_i / factor below beta_slow turns, with a
    linear ramp over the pair index between the two (fractional) pair indices, floored/ceiled unless
    truncate=False; cos/sin are multiplied by 0.1 ln(factor) + 1 (or mscale ratio, or the given one)."""
    factor, l0 = p["factor"], p["original_max_position_embeddings"]
    beta_fast, beta_slow = p.get("beta_fast", 32.0), p.get("beta_slow", 1.0)

    def index_at(turns):  # solve l0 * theta_d / (2 pi) = turns for d, with theta_d = base ** (-2d/dim)
        return dim * math.log(l0 / (turns * 2 * math.pi)) / (2 * math.log(base))

    lo, hi = index_at(beta_fast), index_at(beta_slow)
    if p.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    if lo == hi:
        hi += 0.001
    out = []
    for i, theta in enumerate(ref_frequencies(dim, base)):
        ramp = min(max((i - lo) / (hi - lo), 0.0), 1.0)  # 0: keep theta, 1: theta / factor
        out.append(theta * (1 - ramp) + theta / factor * ramp)

    def mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if p.get("attention_factor") is not None:
        af = p["attention_factor"]
    elif p.get("mscale") and p.get("mscale_all_dim"):
        af = mscale(factor, p["mscale"]) / mscale(factor, p["mscale_all_dim"])
    else:
        af = mscale(factor)
    return torch.tensor(out, dtype=torch.float64), af


def _ref_llama3(dim, base, factor, l0, low, high):
    """Llama 3.1 in plain float64 Python: wavelengths shorter than L0/high kept, longer than L0/low divided
    by factor, and in between theta * ((1 - s) / factor + s) with s = (L0 / wavelength - low) / (high - low)."""
    out = []
    for theta in ref_frequencies(dim, base):
        wavelength = 2 * math.pi / theta
        if wavelength < l0 / high:
            out.append(theta)
        elif wavelength > l0 / low:
            out.append(theta / factor)
        else:
            s = (l0 / wavelength - low) / (high - low)
            out.append(theta * ((1 - s) / factor + s))
    return torch.tensor(out, dtype=torch.float64)


HEAD_DIMS = [8, 64, 96, 128]
BASES = [10000.0, 500000.0]


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("factor", [1.0, 2.0, 8.0, 32.0])
def test_linear_matches_hf(head_dim, base, factor):
    params = {"rope_type": "linear", "factor": factor}
    hf_inv, hf_af = _hf(params, head_dim, base, 4096)
    inv, af = rope_inv_freq(head_dim, base=base, scaling=params)
    _assert_close_to_hf(inv, hf_inv, base)
    assert af == hf_af == 1.0
    torch.testing.assert_close(inv, torch.tensor(ref_frequencies(head_dim, base), dtype=torch.float64) / factor)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("factor,l0,seq_len", [(2.0, 2048, None), (2.0, 2048, 1000), (4.0, 2048, 2048),
                                              (4.0, 2048, 8192), (8.0, 4096, 20000), (1.5, 512, 100_000)])
def test_dynamic_matches_hf(head_dim, base, factor, l0, seq_len):
    hf_inv, hf_af = _hf({"rope_type": "dynamic", "factor": factor}, head_dim, base, l0, seq_len)
    ours = {"rope_type": "dynamic", "factor": factor, "original_max_position_embeddings": l0}
    inv, af = rope_inv_freq(head_dim, base=base, scaling=ours, seq_len=seq_len)
    _assert_close_to_hf(inv, hf_inv, base)
    assert af == hf_af == 1.0
    if seq_len is None or seq_len <= l0:  # within the trained length dynamic NTK is plain RoPE
        torch.testing.assert_close(inv, rope_inv_freq(head_dim, base=base)[0], atol=0, rtol=1e-14)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("params,max_pos", [
    ({"factor": 4.0, "original_max_position_embeddings": 2048}, 8192),
    ({"factor": 8.0, "original_max_position_embeddings": 4096, "beta_fast": 16.0, "beta_slow": 2.0}, 32768),
    ({"factor": 16.0, "original_max_position_embeddings": 4096, "attention_factor": 1.3}, 65536),
    ({"factor": 40.0, "original_max_position_embeddings": 4096, "mscale": 1.0, "mscale_all_dim": 0.5}, 163840),
    ({"factor": 4.0, "original_max_position_embeddings": 1024, "truncate": False}, 4096),
    ({"factor": 2.0, "original_max_position_embeddings": 64, "beta_fast": 32.0, "beta_slow": 1.0}, 128),
    # L0 / 2pi > base: the slow end of the ramp passes dim/2 - 1 and is clamped at dim - 1 (HF's rule)
    ({"factor": 4.0, "original_max_position_embeddings": 131072}, 524288),
    ({"factor": 8.0, "original_max_position_embeddings": 4_000_000, "beta_slow": 0.5}, 32_000_000),
])
def test_yarn_matches_hf_including_attention_factor(head_dim, base, params, max_pos):
    params = {"rope_type": "yarn", **params}
    hf_inv, hf_af = _hf(params, head_dim, base, max_pos)
    inv, af = rope_inv_freq(head_dim, base=base, scaling=params)
    _assert_close_to_hf(inv, hf_inv, base)
    assert af == pytest.approx(hf_af, rel=1e-12)
    ref_inv, ref_af = _ref_yarn(head_dim, base, params)
    torch.testing.assert_close(inv, ref_inv, atol=0, rtol=1e-12)
    assert af == pytest.approx(ref_af, rel=1e-14)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("factor,l0,low,high", [(8.0, 8192, 1.0, 4.0), (32.0, 8192, 1.0, 4.0), (4.0, 1024, 2.0, 8.0),
                                               (2.0, 256, 1.0, 2.0)])
def test_llama3_matches_hf(head_dim, base, factor, l0, low, high):
    params = {"rope_type": "llama3", "factor": factor, "original_max_position_embeddings": l0,
              "low_freq_factor": low, "high_freq_factor": high}
    hf_inv, hf_af = _hf(params, head_dim, base, int(l0 * factor))
    inv, af = rope_inv_freq(head_dim, base=base, scaling=params)
    # in the smoothing band HF's float32 weight s multiplies theta * (1 - 1/factor): the relative
    # error of s is amplified up to ~factor times there (seen: 26 ulps at factor 32, base 5e5, dim 96)
    _assert_close_to_hf(inv, hf_inv, base, amplification=factor)
    assert af == hf_af == 1.0
    torch.testing.assert_close(inv, _ref_llama3(head_dim, base, factor, l0, low, high), atol=0, rtol=1e-12)


def _ref_longrope(dim, base, p, seq_len):
    """LongRoPE (Ding et al. 2024; Phi-3's modeling code) in plain Python: theta_i / lambda_i with lambda the
    short factors while seq_len <= L0 (or no seq_len), the long ones beyond; attention factor
    sqrt(1 + ln(factor) / ln(L0)) for factor > 1 unless given."""
    l0 = p["original_max_position_embeddings"]
    lambdas = p["long_factor"] if seq_len is not None and seq_len > l0 else p["short_factor"]
    inv = [theta / lam for theta, lam in zip(ref_frequencies(dim, base), lambdas)]
    if p.get("attention_factor") is not None:
        af = p["attention_factor"]
    else:
        af = 1.0 if p["factor"] <= 1 else math.sqrt(1 + math.log(p["factor"]) / math.log(l0))
    return torch.tensor(inv, dtype=torch.float64), af


@pytest.mark.parametrize("head_dim", [8, 64, 96, 128])
@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("l0,factor,attention_factor,seq_len", [
    (4096, 32.0, None, None), (4096, 32.0, None, 4096), (4096, 32.0, None, 4097), (4096, 32.0, None, 100_000),
    (2048, 1.0, None, 3000), (1024, 16.0, 1.25, 5000), (8192, 1.0, None, None)])
def test_longrope_matches_hf_including_the_switch_and_attention_factor(head_dim, base, l0, factor, attention_factor,
                                                                       seq_len):
    torch.manual_seed(head_dim)
    pairs = head_dim // 2
    params = {"rope_type": "longrope", "original_max_position_embeddings": l0, "factor": factor,
              "short_factor": (1 + torch.rand(pairs)).tolist(), "long_factor": (1 + 60 * torch.rand(pairs)).tolist()}
    if attention_factor is not None:
        params["attention_factor"] = attention_factor
    hf_inv, hf_af = _hf(params, head_dim, base, int(l0 * max(factor, 1)), seq_len)
    inv, af = rope_inv_freq(head_dim, base=base, scaling=params, seq_len=seq_len)
    _assert_close_to_hf(inv, hf_inv, base)  # HF also rounds each factor to float32: within its 3 ulps
    assert af == pytest.approx(hf_af, rel=1e-12)
    ref_inv, ref_af = _ref_longrope(head_dim, base, params, seq_len)
    torch.testing.assert_close(inv, ref_inv, atol=0, rtol=1e-12)
    assert af == pytest.approx(ref_af, rel=1e-14)


def test_longrope_factor_from_the_lengths_as_hf_falls_back():
    """HF computes the attention factor from max_position_embeddings / L0 when `factor` is absent; posenc wants
    the factor in the dict (from_hf_config fills it in): the same number either way."""
    sf, lf = [1.0] * 16, [4.0] * 16
    hf_inv, hf_af = _hf({"rope_type": "longrope", "original_max_position_embeddings": 4096, "short_factor": sf,
                         "long_factor": lf}, 32, 10000.0, 131072)
    inv, af = rope_inv_freq(32, scaling={"rope_type": "longrope", "original_max_position_embeddings": 4096,
                                         "factor": 131072 / 4096, "short_factor": sf, "long_factor": lf})
    assert af == pytest.approx(hf_af, rel=1e-12) == math.sqrt(1 + math.log(32) / math.log(4096))
    _assert_close_to_hf(inv, hf_inv, 10000.0)


def test_llama3_without_a_smoothing_band_matches_hf():
    """Llama 4 Scout: low_freq_factor == high_freq_factor == 1: wavelengths above L0 divided by the factor, the
    rest kept, nothing in between (HF only warns about high <= low)."""
    params = {"rope_type": "llama3", "factor": 16.0, "original_max_position_embeddings": 8192,
              "low_freq_factor": 1.0, "high_freq_factor": 1.0}
    hf_inv, _ = _hf(params, 128, 500000.0, 8192 * 16)
    inv, af = rope_inv_freq(128, base=500000.0, scaling=params)
    _assert_close_to_hf(inv, hf_inv, 500000.0)
    theta = torch.tensor(ref_frequencies(128, 500000.0), dtype=torch.float64)
    long = 2 * math.pi / theta > 8192
    assert long.any() and (~long).any() and af == 1.0
    torch.testing.assert_close(inv, torch.where(long, theta / 16, theta), atol=0, rtol=1e-15)


PARTIAL_SCALINGS = [
    None, {"rope_type": "linear", "factor": 4.0}, {"rope_type": "dynamic", "factor": 2.0},
    {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512},
    {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 512, "low_freq_factor": 1.0,
     "high_freq_factor": 4.0},
    {"rope_type": "longrope", "factor": 16.0, "original_max_position_embeddings": 512},
]


@pytest.mark.parametrize("head_dim,partial", [(96, 0.25), (80, 0.4), (128, 0.75), (64, 0.5), (256, 0.25)])
@pytest.mark.parametrize("params", PARTIAL_SCALINGS, ids=lambda p: "default" if p is None else p["rope_type"])
def test_partial_rotary_frequencies_match_hf(head_dim, partial, params):
    """HF: rotary dim = int(head_dim * partial_rotary_factor) and every formula runs on it."""
    rotated = int(head_dim * partial)
    assert rotary_dim(head_dim, partial) == rotated
    if params is not None and params["rope_type"] == "longrope":
        params = {**params, "short_factor": [1.0 + i / rotated for i in range(rotated // 2)],
                  "long_factor": [2.0 + i for i in range(rotated // 2)]}
    seq_len = 3000 if params is not None and params["rope_type"] in ("dynamic", "longrope") else None
    hf_params = {"rope_type": "default"} if params is None else params
    dynamic = params is not None and params["rope_type"] == "dynamic"
    config = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                         max_position_embeddings=512 if dynamic else 512 * 16,
                         rope_parameters={"rope_theta": 10000.0, "partial_rotary_factor": partial, **hf_params})
    if params is None:  # Llama's default ignores the factor; GPT-NeoX's (and Phi's) honours it
        from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding
        hf_inv, hf_af = GPTNeoXRotaryEmbedding.compute_default_rope_parameters(config)
    else:
        hf_inv, hf_af = HF_ROPE_INIT[params["rope_type"]](config, torch.device("cpu"), seq_len=seq_len)
    ours = params if params is None or params["rope_type"] != "dynamic" else {
        **params, "original_max_position_embeddings": 512}
    inv, af = rope_inv_freq(head_dim, scaling=ours, seq_len=seq_len, partial_rotary_factor=partial)
    amplification = params["factor"] if params is not None and params["rope_type"] == "llama3" else 1.0
    _assert_close_to_hf(inv, hf_inv, 10000.0, amplification)
    assert af == pytest.approx(hf_af, rel=1e-12)
    # the same as the frequencies of a head of the rotated size (the exponent is over rotary_dim)
    torch.testing.assert_close(inv, rope_inv_freq(rotated, scaling=ours, seq_len=seq_len)[0], atol=0, rtol=0)
    # and the factor may sit in the dict, as in HF's rope_parameters
    in_dict = {**(ours or {"rope_type": "default"}), "partial_rotary_factor": partial}
    torch.testing.assert_close(rope_inv_freq(head_dim, scaling=in_dict, seq_len=seq_len)[0], inv, atol=0, rtol=0)


def test_rotary_embedding_longrope_picks_short_or_long_per_call_as_hf():
    """Phi3RotaryEmbedding (HF's longrope_frequency_update): per call, long factors when max(position_ids) + 1 > L0."""
    from transformers import Phi3Config
    from transformers.models.phi3 import modeling_phi3 as hf_phi3
    torch.manual_seed(3)
    head_dim, l0, pairs = 16, 32, 8
    sf, lf = (1 + torch.rand(pairs)).tolist(), (1 + 20 * torch.rand(pairs)).tolist()
    config = Phi3Config(hidden_size=2 * head_dim, num_attention_heads=2, num_key_value_heads=2,
                        max_position_embeddings=8 * l0, original_max_position_embeddings=l0,
                        rope_scaling={"type": "longrope", "short_factor": sf, "long_factor": lf})
    hf_rotary = hf_phi3.Phi3RotaryEmbedding(config)
    ours = RotaryEmbedding(head_dim, scaling={"rope_type": "longrope", "factor": 8.0,
                                              "original_max_position_embeddings": l0,
                                              "short_factor": sf, "long_factor": lf})
    q, k = torch.randn(1, 2, 6, head_dim), torch.randn(1, 2, 6, head_dim)
    for last in (10, 31, 32, 40, 20, 45):  # L = last + 1: short, short, long, long, short, long
        position_ids = torch.arange(last - 5, last + 1)[None]
        cos, sin = hf_rotary(q, position_ids)
        q_hf, k_hf = hf_phi3.apply_rotary_pos_emb(q, k, cos, sin)
        q_ours, k_ours = ours(q, k, position_ids[0])
        torch.testing.assert_close(q_ours, q_hf, atol=1e-5, rtol=0)
        torch.testing.assert_close(k_ours, k_hf, atol=1e-5, rtol=0)
    cpu = torch.device("cpu")
    assert sorted(ours._inv_freq, key=str) == [(cpu, 33), (cpu, None)]  # two sets of frequencies kept: short, long


def test_rope_theta_in_scaling_overrides_base():
    params = {"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0}
    hf_inv, _ = _hf({"rope_type": "linear", "factor": 2.0}, 64, 500000.0, 4096)
    inv, _ = rope_inv_freq(64, base=10000.0, scaling=params)
    _assert_close_to_hf(inv, hf_inv, 500000.0)


# ------------------------------------------------------------------ static NTK: formula, and HF dynamic where they meet
@given(dim=st.integers(2, 64).map(lambda h: 2 * h), factor=st.floats(1.0, 64.0),
       base=st.sampled_from([10000.0, 500000.0]))
def test_ntk_is_the_base_change_formula(dim, factor, base):
    inv, af = rope_inv_freq(dim, base=base, scaling={"rope_type": "ntk", "factor": factor})
    new_base = base * factor ** (dim / (dim - 2))
    torch.testing.assert_close(inv, torch.tensor(ref_frequencies(dim, new_base), dtype=torch.float64),
                               atol=0, rtol=1e-12)
    assert af == 1.0
    assert inv[0].item() == 1.0  # the highest frequency never moves
    assert inv[-1].item() == pytest.approx(ref_frequencies(dim, base)[-1] / factor, rel=1e-12)  # the lowest: / factor


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("factor", [2.0, 4.0, 16.0])
def test_ntk_equals_hf_dynamic_where_they_coincide(head_dim, factor):
    """HF dynamic uses NTK factor f_d * L / L0 - (f_d - 1); with f_d = 1 that is L / L0, so HF dynamic at
    factor 1 and L = factor * L0 is the static NTK base change with `factor`."""
    l0 = 1024
    hf_inv, _ = _hf({"rope_type": "dynamic", "factor": 1.0}, head_dim, 10000.0, l0, seq_len=int(factor * l0))
    inv, _ = rope_inv_freq(head_dim, scaling={"rope_type": "ntk", "factor": factor})
    _assert_close_to_hf(inv, hf_inv, 10000.0)
    # and the library's own dynamic reaches the static one at the length where its factor equals `factor`
    dyn = {"rope_type": "dynamic", "factor": factor, "original_max_position_embeddings": l0}
    torch.testing.assert_close(rope_inv_freq(head_dim, scaling=dyn, seq_len=2 * l0)[0],
                               rope_inv_freq(head_dim, scaling={"rope_type": "ntk", "factor": factor + 1})[0],
                               atol=0, rtol=1e-12)


# ------------------------------------------------------------------ what each method does to each frequency
def test_yarn_and_llama3_keep_high_and_divide_low_frequencies():
    dim, base, factor, l0 = 128, 10000.0, 8.0, 4096
    theta = torch.tensor(ref_frequencies(dim, base), dtype=torch.float64)
    wavelength = 2 * math.pi / theta
    yarn, af = rope_inv_freq(dim, scaling={"rope_type": "yarn", "factor": factor,
                                           "original_max_position_embeddings": l0})
    rotations = l0 / wavelength  # turns a pair makes over the trained length
    fast, slow = rotations > 32, rotations < 1  # beta_fast = 32, beta_slow = 1
    assert fast.any() and slow.any()
    torch.testing.assert_close(yarn[fast], theta[fast])  # extrapolated: untouched
    torch.testing.assert_close(yarn[slow], theta[slow] / factor)  # interpolated: divided by the factor
    assert ((yarn >= theta / factor - 1e-15) & (yarn <= theta + 1e-15)).all()
    assert af == pytest.approx(0.1 * math.log(factor) + 1)
    llama3, _ = rope_inv_freq(dim, scaling={"rope_type": "llama3", "factor": factor,
                                            "original_max_position_embeddings": l0, "low_freq_factor": 1.0,
                                            "high_freq_factor": 4.0})
    short, long = wavelength < l0 / 4.0, wavelength > l0 / 1.0
    assert short.any() and long.any()
    torch.testing.assert_close(llama3[short], theta[short])
    torch.testing.assert_close(llama3[long], theta[long] / factor)
    assert (llama3[1:] <= llama3[:-1]).all()  # still ordered from fast to slow


def test_default_rope_type_is_no_scaling():
    torch.testing.assert_close(rope_inv_freq(32, scaling={"rope_type": "default"})[0], rope_inv_freq(32)[0])
    assert set(ROPE_TYPES) == {"default", "linear", "ntk", "dynamic", "yarn", "longrope", "llama3", "proportional"}


# ------------------------------------------------------------------ whole pipeline: vs LlamaRotaryEmbedding
@pytest.mark.parametrize("params,max_pos", [
    ({"rope_type": "linear", "factor": 4.0}, 4096),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}, 4096),
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 512, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0}, 4096),
])
def test_rotary_embedding_with_scaling_matches_hf(params, max_pos):
    torch.manual_seed(0)
    head_dim = 64
    q, k = torch.randn(2, 4, 40, head_dim), torch.randn(2, 4, 40, head_dim)
    position_ids = torch.stack([torch.randperm(40), torch.arange(40)])  # < 48: HF's float32 angles still exact enough
    config = _config(head_dim, 10000.0, params, max_pos)
    cos, sin = hf_llama.LlamaRotaryEmbedding(config)(q, position_ids)  # includes the attention factor
    q_hf, k_hf = hf_llama.apply_rotary_pos_emb(q, k, cos, sin)
    q_ours, k_ours = RotaryEmbedding(head_dim, scaling=params)(q, k, position_ids)
    torch.testing.assert_close(q_ours, q_hf, atol=1e-5, rtol=0)
    torch.testing.assert_close(k_ours, k_hf, atol=1e-5, rtol=0)
    inv, af = rope_inv_freq(head_dim, scaling=params)
    torch.testing.assert_close(apply_rope(q, position_ids, inv_freq=inv, attention_factor=af), q_hf, atol=1e-5, rtol=0)
    # far positions: against the float64 formula with the same frequencies
    far = torch.arange(100_000, 100_040)
    torch.testing.assert_close(RotaryEmbedding(head_dim, scaling=params)(q, k, far)[0].double(),
                               ref_rope(q, far, inv_freq=inv, attention_factor=af), atol=1e-5, rtol=0)


def test_rotary_embedding_dynamic_tracks_the_length():
    """Dynamic NTK: the frequencies follow the longest position asked for (HF: max(position_ids) + 1)."""
    torch.manual_seed(1)
    head_dim, l0 = 32, 64
    params = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": l0}
    rope = RotaryEmbedding(head_dim, scaling=params)
    q = torch.randn(1, 2, 40, head_dim)
    for length in (40, 100, 300):
        positions = torch.arange(length - 40, length)
        inv, _ = rope_inv_freq(head_dim, scaling=params, seq_len=length)
        out, _ = rope(q, q, positions)
        torch.testing.assert_close(out.double(), ref_rope(q, positions, inv_freq=inv), atol=1e-5, rtol=0)
        config = _config(head_dim, 10000.0, {"rope_type": "dynamic", "factor": 2.0}, l0)
        hf_inv = HF_ROPE_INIT["dynamic"](config, torch.device("cpu"), seq_len=length)[0]
        _assert_close_to_hf(inv, hf_inv, 10000.0)


# ------------------------------------------------------------------ the registry and the legacy key
def _minimal(rope_type: str, l0: int = 64, pairs: int = 8) -> dict:
    """A scaling dict of `rope_type` with only the keys its registry record requires (pairs: LongRoPE's lists)."""
    values = {"factor": 4.0, "original_max_position_embeddings": l0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "short_factor": [1.0 + i / pairs for i in range(pairs)], "long_factor": [2.0 ** i for i in range(pairs)]}
    return {"rope_type": rope_type, **{k: values[k] for k in ROPE_SCALINGS[rope_type].required}}


@pytest.mark.parametrize("rope_type", ROPE_TYPES)
def test_each_registry_record_names_the_keys_its_function_needs(rope_type):
    """The required keys are enough and each is needed; the allowed keys are exactly required + optional."""
    record, minimal = ROPE_SCALINGS[rope_type], _minimal(rope_type)
    inv, factor = rope_inv_freq(16, scaling=minimal, seq_len=300)
    assert inv.shape == (8,) and bool(torch.isfinite(inv).all()) and factor >= 1.0
    for key in record.required:
        with pytest.raises(ValueError, match=rf"rope_type={rope_type!r} is missing \[{key!r}\]"):
            rope_inv_freq(16, scaling={k: v for k, v in minimal.items() if k != key})
    with pytest.raises(ValueError, match=r"unknown keys \['mrope_section'\]") as info:
        rope_inv_freq(16, scaling={**minimal, "mrope_section": [4, 2, 2]})
    allowed = set(ast.literal_eval(str(info.value).split("allowed: ")[1]))
    assert allowed == {"rope_type", "type", "rope_theta", "partial_rotary_factor", *record.required, *record.optional}


@pytest.mark.parametrize("params", [{"factor": 2.0}, {"factor": 3.0, "original_max_position_embeddings": 64}])
def test_hf_legacy_key_type_is_rope_type(params):
    rope_type = "linear" if len(params) == 1 else "dynamic"
    modern = {"rope_type": rope_type, **params}
    for legacy in ({"type": rope_type, **params}, {"type": rope_type, "rope_type": rope_type, **params}):
        torch.testing.assert_close(rope_inv_freq(16, scaling=legacy, seq_len=500)[0],
                                   rope_inv_freq(16, scaling=modern, seq_len=500)[0], atol=0, rtol=0)
    # RotaryEmbedding sees the legacy "dynamic" as dynamic too: frequencies for the call's length
    q = torch.randn(1, 2, 10, 16)
    positions = torch.arange(490, 500)
    assert torch.equal(RotaryEmbedding(16, scaling={"type": rope_type, **params})(q, q, positions)[0],
                       RotaryEmbedding(16, scaling=modern)(q, q, positions)[0])


def test_yarn_beta_fast_equal_to_beta_slow_is_allowed():
    """beta_fast == beta_slow collapses the ramp to one step (HF adds 0.001 to avoid 0/0); only < is an error."""
    params = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048, "beta_fast": 8.0,
              "beta_slow": 8.0}
    hf_inv, _ = _hf(params, 64, 10000.0, 8192)
    inv, _ = rope_inv_freq(64, scaling=params)
    _assert_close_to_hf(inv, hf_inv, 10000.0)
    torch.testing.assert_close(inv, _ref_yarn(64, 10000.0, params)[0], atol=0, rtol=1e-12)


def test_yarn_optional_keys_given_as_none_fall_back_to_defaults():
    base = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    expected = rope_inv_freq(32, scaling=base)
    got = rope_inv_freq(32, scaling={**base, "beta_fast": None, "beta_slow": None, "attention_factor": None})
    torch.testing.assert_close(got[0], expected[0], atol=0, rtol=0)
    assert got[1] == expected[1]


@pytest.mark.parametrize("scaling", [None] + [_minimal(t, l0=4, pairs=4) for t in ROPE_TYPES])
def test_frequencies_on_the_callers_device(scaling, device):
    inv, factor = rope_inv_freq(8, scaling=scaling, device=device, seq_len=50)
    assert inv.device.type == device.type and inv.dtype == torch.float64 and inv.shape == (4,)
    assert isinstance(factor, float)


# ------------------------------------------------------------------ bad scalings: a clear error naming the key
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 64, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
LONGROPE = {"rope_type": "longrope", "factor": 8.0, "original_max_position_embeddings": 64,
            "short_factor": [1.0, 1.5, 2.0, 2.5], "long_factor": [1.0, 4.0, 8.0, 16.0]}
NAN, INF = float("nan"), float("inf")

BAD = [
    ("dim odd", lambda: rope_inv_freq(9), ValueError, r"dim must be even"),
    ("dim bool", lambda: rope_inv_freq(True), TypeError, r"dim must be an int"),
    ("seq_len negative", lambda: rope_inv_freq(8, scaling={"rope_type": "dynamic", "factor": 2.0,
                                                           "original_max_position_embeddings": 4}, seq_len=-3),
     ValueError, r"seq_len must be >= 1"),
    ("ntk tiny dim", lambda: rope_inv_freq(2, scaling={"rope_type": "ntk", "factor": 2.0}), ValueError,
     r"dim must be >= 4"),
    *[(f"base {bad!r}", lambda b=bad: rope_inv_freq(8, base=b), error, pattern)
      for bad, error, pattern in [(NAN, ValueError, r"base must be a finite number"),
                                  (INF, ValueError, r"base must be a finite number"),
                                  ("10000", TypeError, r"base must be a number, got str"),
                                  (0.5, ValueError, r"base must be > 1.0")]],
    # the dict and its rope_type
    ("scaling not a dict", lambda: rope_inv_freq(8, scaling="linear"), TypeError, r"scaling must be a dict"),
    ("rope_type unknown", lambda: rope_inv_freq(8, scaling={"rope_type": "su", "factor": 2.0}), ValueError,
     r"rope_type'\] must be one of \['default', 'dynamic', 'linear', 'llama3', 'longrope', 'ntk', 'proportional', "
     r"'yarn'\], "
     r"got 'su'"),
    ("rope_type missing", lambda: rope_inv_freq(8, scaling={"factor": 2.0}), ValueError,
     r"scaling needs a 'rope_type', one of"),
    ("legacy type unknown", lambda: rope_inv_freq(8, scaling={"type": "su", "factor": 2.0}), ValueError,
     r"scaling\['type'\] must be one of"),
    ("legacy type disagrees", lambda: rope_inv_freq(8, scaling={"type": "linear", "rope_type": "ntk", "factor": 2.0}),
     ValueError, r"scaling\['rope_type'\] and its legacy name scaling\['type'\] disagree: 'ntk' and 'linear'"),
    ("typo in key", lambda: rope_inv_freq(8, scaling={"rope_type": "linear", "factr": 2.0}), ValueError,
     r"unknown keys \['factr'\]"),
    # missing keys
    ("factor missing", lambda: rope_inv_freq(8, scaling={"rope_type": "linear"}), ValueError,
     r"rope_type='linear' is missing \['factor'\]"),
    ("yarn L0 missing", lambda: rope_inv_freq(8, scaling={"rope_type": "yarn", "factor": 2.0}), ValueError,
     r"missing \['original_max_position_embeddings'\]"),
    ("llama3 keys missing", lambda: rope_inv_freq(8, scaling={"rope_type": "llama3", "factor": 2.0,
                                                             "original_max_position_embeddings": 8}),
     ValueError, r"missing \['low_freq_factor', 'high_freq_factor'\]"),
    # values: type, finiteness, range
    ("factor < 1", lambda: rope_inv_freq(8, scaling={"rope_type": "linear", "factor": 0.5}), ValueError,
     r"scaling\['factor'\] must be >= 1.0, got 0.5"),
    ("factor negative", lambda: RotaryEmbedding(8, scaling={"rope_type": "ntk", "factor": -2.0}), ValueError,
     r"scaling\['factor'\] must be >= 1.0"),
    ("factor string", lambda: rope_inv_freq(8, scaling={"rope_type": "linear", "factor": "2"}), TypeError,
     r"scaling\['factor'\] must be a number"),
    *[(f"{key} {bad}", lambda k=key, b=bad, s=scaling: rope_inv_freq(8, scaling={**s, k: b}), ValueError,
       rf"scaling\[{key!r}\] must be a finite number")
      for bad in (NAN, INF, -INF)
      for key, scaling in [("factor", YARN), ("attention_factor", YARN), ("beta_fast", YARN), ("mscale", YARN),
                           ("rope_theta", YARN), ("low_freq_factor", LLAMA3), ("high_freq_factor", LLAMA3)]],
    ("rope_theta string", lambda: rope_inv_freq(8, scaling={**YARN, "rope_theta": "1e4"}), TypeError,
     r"scaling\['rope_theta'\] must be a number"),
    ("attention_factor zero", lambda: rope_inv_freq(8, scaling={**YARN, "attention_factor": 0.0}), ValueError,
     r"scaling\['attention_factor'\] must be > 0"),
    ("L0 zero", lambda: rope_inv_freq(8, scaling={"rope_type": "dynamic", "factor": 2.0,
                                                  "original_max_position_embeddings": 0}),
     ValueError, r"original_max_position_embeddings'\] must be >= 1"),
    ("L0 float", lambda: rope_inv_freq(8, scaling={**YARN, "original_max_position_embeddings": 64.5}), TypeError,
     r"original_max_position_embeddings'\] must be an int"),
    ("truncate string", lambda: rope_inv_freq(8, scaling={**YARN, "truncate": "no"}), TypeError,
     r"scaling\['truncate'\] must be True or False"),
    ("beta_fast negative", lambda: rope_inv_freq(8, scaling={**YARN, "beta_fast": -1.0}), ValueError,
     r"beta_fast'\] must be > 0"),
    ("beta_fast < beta_slow", lambda: rope_inv_freq(8, scaling={**YARN, "beta_fast": 1.0, "beta_slow": 32.0}),
     ValueError, r"scaling\['beta_fast'\] must be >= scaling\['beta_slow'\].*got 1.0 < 32.0"),
    ("beta_slow above the default beta_fast", lambda: rope_inv_freq(8, scaling={**YARN, "beta_slow": 64.0}),
     ValueError, r"scaling\['beta_fast'\] must be >= scaling\['beta_slow'\].*got 32.0 < 64.0"),
    ("low > high freq factor", lambda: rope_inv_freq(8, scaling={**LLAMA3, "low_freq_factor": 8.0}), ValueError,
     r"high_freq_factor'\] must be >= scaling\['low_freq_factor'\].*got 4.0 < 8.0"),
    # LongRoPE's per-pair lists
    ("longrope list not a list", lambda: rope_inv_freq(8, scaling={**LONGROPE, "short_factor": 2.0}), TypeError,
     r"scaling\['short_factor'\] must be a list of numbers"),
    ("longrope entry a string", lambda: rope_inv_freq(8, scaling={**LONGROPE, "long_factor": [1.0, "2", 3.0, 4.0]}),
     TypeError, r"scaling\['long_factor'\]\[1\] must be a number"),
    ("longrope entry zero", lambda: rope_inv_freq(8, scaling={**LONGROPE, "long_factor": [1.0, 0.0, 3.0, 4.0]}),
     ValueError, r"scaling\['long_factor'\]\[1\] must be > 0"),
    ("longrope entry nan", lambda: rope_inv_freq(8, scaling={**LONGROPE, "short_factor": [1.0, NAN, 3.0, 4.0]}),
     ValueError, r"scaling\['short_factor'\]\[1\] must be a finite number"),
    ("longrope wrong length", lambda: rope_inv_freq(8, scaling={**LONGROPE, "short_factor": [1.0] * 3}), ValueError,
     r"scaling\['short_factor'\] must have one factor per pair, rotary_dim/2 = 4 .*got 3"),
    ("longrope length of the full head under partial rotary",
     lambda: rope_inv_freq(16, scaling=LONGROPE | {"short_factor": [1.0] * 8, "long_factor": [1.0] * 8},
                           partial_rotary_factor=0.5), ValueError, r"rotary_dim/2 = 4 .*partial 0.5.*got 8"),
    ("longrope factor missing", lambda: rope_inv_freq(8, scaling={k: v for k, v in LONGROPE.items() if k != "factor"}),
     ValueError, r"rope_type='longrope' is missing \['factor'\]"),
    # partial rotary
    *[(f"partial {bad!r}", lambda b=bad: rope_inv_freq(16, partial_rotary_factor=b), error, pattern)
      for bad, error, pattern in [(0.0, ValueError, r"partial_rotary_factor must be > 0"),
                                  (1.5, ValueError, r"partial_rotary_factor must be in \(0, 1\]"),
                                  ("0.5", TypeError, r"partial_rotary_factor must be a number"),
                                  (True, TypeError, r"partial_rotary_factor must be a number"),
                                  (NAN, ValueError, r"partial_rotary_factor must be a finite number"),
                                  (0.2, ValueError, r"partial_rotary_factor=0.2 of head_dim=16 gives rotary_dim=3"),
                                  (0.1, ValueError, r"gives rotary_dim=1: it must be even and >= 2")]],
    ("partial in the dict out of range", lambda: rope_inv_freq(16, scaling={"rope_type": "default",
                                                                           "partial_rotary_factor": 2.0}),
     ValueError, r"scaling\['partial_rotary_factor'\] must be in \(0, 1\]"),
    ("partial twice, disagreeing", lambda: rope_inv_freq(16, scaling={"rope_type": "default",
                                                                     "partial_rotary_factor": 0.5},
                                                         partial_rotary_factor=0.25),
     ValueError, r"partial_rotary_factor=0.25 and scaling\['partial_rotary_factor'\]=0.5 disagree"),
    ("rotary_dim odd head", lambda: rotary_dim(15), ValueError, r"gives rotary_dim=15: it must be even"),
    ("rotary_dim head not an int", lambda: rotary_dim(16.0, 0.5), TypeError, r"head_dim must be an int"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_scaling_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):  # the message names the parameter and what was expected
        call()


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(method="dynamic", dynamic_factor=float("nan")), ValueError, r"dynamic_factor must be a finite number"),
    (dict(method="dynamic", dynamic_factor=0.5), ValueError, r"dynamic_factor must be >= 1"),
    (dict(method="llama3", low_freq_factor="1"), TypeError, r"low_freq_factor must be a number"),
    (dict(method="llama3", low_freq_factor=4.0, high_freq_factor=1.0), ValueError,
     r"high_freq_factor.*low_freq_factor"),
])
def test_extension_scaling_checks_its_settings(kwargs, exc, match):
    from posenc_lib.scaling import extension_scaling
    with pytest.raises(exc, match=match):
        extension_scaling(factor=2.0, original_max_position_embeddings=64, **kwargs)


@pytest.mark.parametrize("head_dim, fraction, factor",
                         [(16, 0.25, None), (16, 0.5, 2.0), (64, 0.25, None), (32, 1.0, None)])
def test_proportional_rope_is_transformers_p_rope(head_dim, fraction, factor):
    """Gemma 4's rope_type 'proportional' (p-RoPE): transformers' own init function gives the same frequencies;
    the slowest pairs get 0 and the exponent runs over the whole head (not over the rotated dims)."""
    import transformers
    params = {"rope_type": "proportional", "rope_theta": 10000.0, "partial_rotary_factor": fraction}
    if factor is not None:
        params["factor"] = factor
    config = transformers.LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                                      rope_parameters=dict(params))
    theirs, their_factor = HF_ROPE_INIT["proportional"](config, "cpu")
    ours, our_factor = rope_inv_freq(head_dim, scaling=params)
    assert ours.shape == (head_dim // 2,) and our_factor == their_factor == 1.0
    torch.testing.assert_close(ours.float(), theirs, rtol=1e-6, atol=0)
    turning = int(fraction * head_dim // 2)
    assert (ours[turning:] == 0).all() and (ours[:turning] > 0).all()
    # the other "partial": GPT-NeoX turns fewer dims with the exponent over them -- other frequencies
    if fraction < 1:
        neox, _ = rope_inv_freq(head_dim, partial_rotary_factor=fraction)
        assert neox.shape[0] < ours.shape[0] and not torch.allclose(neox[1:turning], ours[1:turning])


def test_proportional_takes_its_fraction_in_the_dict():
    with pytest.raises(ValueError, match="goes in the scaling dict"):
        rope_inv_freq(16, scaling={"rope_type": "proportional"}, partial_rotary_factor=0.25)


def test_gemma4_defaults_are_what_notebook_10_says():
    """Notebook 10: Gemma 4's full-attention layers use p-RoPE with partial_rotary_factor 0.25 and base 1e6,
    its sliding layers plain RoPE with base 1e4 (transformers' default Gemma4TextConfig)."""
    from transformers import CONFIG_MAPPING
    params = CONFIG_MAPPING["gemma4_text"]().rope_parameters
    assert params["full_attention"] == {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6}
    assert params["sliding_attention"] == {"rope_type": "default", "rope_theta": 1e4}
