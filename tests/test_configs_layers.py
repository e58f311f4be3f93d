"""posenc_lib.configs.layers: what a LayerPositions does, against transformers' functions: its rotation (each kind
of layer of the course's entries, LongRoPE's switch to the long factors), its visible keys (HF's masks), Llama 4's
query temperature; on the caller's device; bad arguments named."""
import math

import pytest
import torch

from posenc_lib.configs import LayerPositions, attention_temperature, from_hf_config

transformers = pytest.importorskip("transformers")

from test_configs import (  # noqa: E402
    KNOWN,
    MODELS,
    assert_close_to_hf,
    entries_named,
    hf_config,
    hf_frequencies,
    hf_rotary,
    modeling,
)
from test_configs_reader import SMALL_LLAMA, config_json  # noqa: E402
from transformers import masking_utils as hf_masks  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS as HF_ROPE_INIT  # noqa: E402
from transformers.models.ministral3 import configuration_ministral3 as cfg_ministral3  # noqa: E402
from transformers.models.qwen3_vl import configuration_qwen3_vl as cfg_qwen3  # noqa: E402


# ------------------------------------------------------------------ the same layers rotate q and k as HF's code does
def _hf_rotate(model_type, text, layer, q, k, position_ids):
    """q, k (B, H, T, head_dim) rotated by the model's own HF functions, for this layer."""
    module, rotary = modeling(model_type), hf_rotary(model_type, text)
    if model_type == "gptj":
        r = layer.rotary_dim
        table = module.create_sinusoidal_positions(int(position_ids.max()) + 1, r)[position_ids]  # (B, T, r)
        sin, cos = table.split(r // 2, dim=-1)
        turn = [torch.cat((module.apply_rotary_pos_emb(t.transpose(1, 2)[..., :r], sin, cos),
                           t.transpose(1, 2)[..., r:]), -1).transpose(1, 2) for t in (q, k)]
        return turn[0], turn[1]
    if model_type in ("llama4", "llama4_text"):
        freqs = rotary(q, position_ids)
        qh, kh = module.apply_rotary_emb(q.transpose(1, 2), k.transpose(1, 2), freqs)
        return qh.transpose(1, 2), kh.transpose(1, 2)
    args = (q, position_ids, layer.layer_type) if model_type in ("gemma3",) else (q, position_ids)
    cos, sin = rotary(*args)
    start, stop = layer.rotary_dims
    if model_type == "deepseek_v3":
        qr, kr = module.apply_rotary_pos_emb_interleave(q[..., start:], k[..., start:], cos, sin)
        return torch.cat((q[..., :start], qr), -1), torch.cat((k[..., :start], kr), -1)
    if model_type == "phi":  # PhiAttention splits off the rotary dims itself
        qr, kr = module.apply_rotary_pos_emb(q[..., :stop], k[..., :stop], cos, sin)
        return torch.cat((qr, q[..., stop:]), -1), torch.cat((kr, k[..., stop:]), -1)
    return module.apply_rotary_pos_emb(q, k, cos, sin)


def _deinterleave(x, start):
    """HF's DeepSeek writes each rope slice as [y1 of every pair | y2 of every pair]: the same scores."""
    r = x.shape[-1] - start
    order = torch.cat((torch.arange(start), start + torch.arange(0, r, 2), start + torch.arange(1, r, 2)))
    return x[..., order]


ROPE_MODELS = [m for m in KNOWN if m["config"]["model_type"] not in ("bert", "gpt2")]


@pytest.mark.parametrize("entry", ROPE_MODELS, ids=[m["name"] for m in ROPE_MODELS])
def test_each_kind_of_layer_rotates_like_transformers(entry):
    torch.manual_seed(0)
    config, model_type = entry["config"], entry["config"]["model_type"]
    ours, text = from_hf_config(config), hf_config(config)
    position_ids = torch.stack([torch.arange(24), torch.randperm(24) + 9])  # small: HF's float32 angles stay exact
    for _, indices in ours.kinds():
        layer = ours.layer(indices[0])
        if not layer.rope:
            continue
        q, k = torch.randn(2, 2, 24, layer.head_dim), torch.randn(2, 2, 24, layer.head_dim)
        q_hf, k_hf = _hf_rotate(model_type, text, layer, q, k, position_ids)
        q_ours, k_ours = layer.apply(q, position_ids), layer.apply(k, position_ids)
        if model_type == "deepseek_v3":
            q_ours, k_ours = _deinterleave(q_ours, layer.rotary_dims[0]), _deinterleave(k_ours, layer.rotary_dims[0])
        torch.testing.assert_close(q_ours, q_hf, atol=1e-5, rtol=0)
        torch.testing.assert_close(k_ours, k_hf, atol=1e-5, rtol=0)


def test_longrope_switches_to_the_long_factors_past_the_trained_length_as_hf():
    entry = next(m for m in MODELS if m["name"].startswith("Phi-3"))
    layer, text = from_hf_config(entry["config"]).layer(0), hf_config(entry["config"])
    rotary = hf_rotary("phi3", text)
    for last, long in ((4095, False), (4096, True), (9000, True), (100, False)):  # L = last + 1 vs L0 = 4096
        hf_inv, hf_factor = hf_frequencies(rotary, layer, longest=last + 1)  # a call that reaches position `last`
        inv, factor = layer.frequencies(last + 1)
        assert_close_to_hf(inv, hf_inv, 10000.0)
        lambdas = entry["config"]["rope_scaling"]["long_factor" if long else "short_factor"]
        torch.testing.assert_close(inv, layer.frequencies()[0] * torch.tensor(
            entry["config"]["rope_scaling"]["short_factor"], dtype=torch.float64) / torch.tensor(
            lambdas, dtype=torch.float64), atol=0, rtol=1e-12)
        assert factor == pytest.approx(hf_factor, rel=1e-6)
        hf_inv, _ = HF_ROPE_INIT["longrope"](text, seq_len=last + 1)
        assert_close_to_hf(inv, hf_inv, 10000.0)


# ------------------------------------------------------------------ masks and the temperature, against HF's functions
@pytest.mark.parametrize("attention,window", [("sliding", 3), ("sliding", 1), ("chunked", 4), ("full", None)])
def test_visible_keys_are_hfs_masks(attention, window):
    layer = LayerPositions(0, True, 8, (0, 8), "half", 1e4, "default", None, torch.ones(4, dtype=torch.float64),
                           1.0, 8 ** -0.5, attention, window)
    n = 11
    if attention == "sliding":
        fn = hf_masks.sliding_window_causal_mask_function(window)
    elif attention == "chunked":
        fn = hf_masks.chunked_causal_mask_function(window, torch.zeros(1, dtype=torch.long))
    else:
        fn = hf_masks.causal_mask_function
    zero = torch.tensor(0)
    expected = fn(zero, zero, torch.arange(n)[:, None], torch.arange(n)[None, :]).expand(n, n)
    assert torch.equal(layer.visible_keys(n), expected)


def test_attention_temperature_is_what_llama4_multiplies_its_nope_queries_by():
    """Capture the query states Llama4TextAttention hands to its attention function on a NoPE layer (a function
    registered through transformers' public AttentionInterface, chosen by attn_implementation)."""
    from transformers import Llama4TextConfig
    from transformers.models.llama4 import modeling_llama4 as hf
    torch.manual_seed(0)
    config = Llama4TextConfig(hidden_size=32, num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                              num_hidden_layers=4, floor_scale=4, attn_scale=0.3, intermediate_size=8,
                              intermediate_size_mlp=8)
    attention = hf.Llama4TextAttention(config, 3)  # layer 3: NoPE by the default pattern
    assert not attention.use_rope
    seen = {}

    def capture(module, query, key, value, mask, **kwargs):
        seen["q"] = query
        return torch.zeros(query.shape[0], query.shape[2], query.shape[1], query.shape[3]), None
    transformers.AttentionInterface.register("posenc_capture_queries", capture)
    config._attn_implementation = "posenc_capture_queries"
    x = torch.randn(1, 20, 32)
    attention(x, None, None)
    plain = attention.q_proj(x).view(1, 20, 2, 16).transpose(1, 2)
    scale = attention_temperature(torch.arange(20), floor_scale=4, attn_scale=0.3)
    torch.testing.assert_close(seen["q"], plain * scale[:, None].float(), atol=1e-6, rtol=1e-6)
    layer = from_hf_config({"model_type": "llama4_text", "hidden_size": 32, "num_attention_heads": 2,
                            "head_dim": 16, "num_hidden_layers": 4, "floor_scale": 4, "attn_scale": 0.3}).layer(3)
    torch.testing.assert_close(layer.query_scale(torch.arange(20)), scale, atol=0, rtol=0)
    assert bool((layer.query_scale(torch.arange(20)) == attention_temperature(
        torch.arange(20), floor_scale=4, attn_scale=0.3)).all())


def test_attention_temperature_formula():
    s = attention_temperature(torch.arange(0, 40), floor_scale=8, attn_scale=0.1)
    assert s.dtype == torch.float64 and bool((s[:7] == 1).all())  # m + 1 < 8
    assert s[7].item() == pytest.approx(1 + 0.1 * math.log(2))  # m + 1 = 8: floor 1
    assert s[23].item() == pytest.approx(1 + 0.1 * math.log(4))
    assert bool((s[1:] >= s[:-1]).all())


def test_layer_apply_on_the_callers_device(device):
    layer = entries_named("Phi-3").layer(0)
    x = torch.randn(2, 3, 5, layer.head_dim, device=device)
    out = layer.apply(x, torch.arange(5, device=device))
    assert out.device.type == device.type and out.shape == x.shape and out.dtype == x.dtype
    inv, _ = layer.frequencies(device=device)
    assert inv.device.type == device.type
    assert attention_temperature(torch.arange(3, device=device)).device.type == device.type
    assert layer.visible_keys(4, device=device).device.type == device.type


def test_bad_arguments_of_the_report_objects():
    positions = from_hf_config(SMALL_LLAMA)
    with pytest.raises(ValueError, match=r"index must be in \[-2, 2\), got 2"):
        positions.layer(2)
    with pytest.raises(TypeError, match=r"index must be an int"):
        positions.layer("0")
    layer = positions.layer(0)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., seq, head_dim=32\)"):
        layer.apply(torch.randn(3, 16))
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor"):
        layer.apply(torch.ones(3, 32, dtype=torch.long))
    with pytest.raises(ValueError, match=r"seq_len must be >= 1"):
        layer.visible_keys(0)
    with pytest.raises(TypeError, match=r"positions must be an integer tensor"):
        layer.query_scale(torch.ones(3))
    with pytest.raises(ValueError, match=r"floor_scale must be > 0"):
        attention_temperature(torch.arange(3), floor_scale=0)


DEVICES = ["cpu", "meta"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_mrope_and_query_scale_run_on_the_callers_device(device):
    layer = from_hf_config(config_json(cfg_qwen3.Qwen3VLTextConfig())).layer(0)
    positions = torch.zeros(3, 2, 5, dtype=torch.long, device=device)
    out = layer.apply(torch.zeros(2, 2, 5, 128, device=device), positions)
    assert out.device.type == device and out.shape == (2, 2, 5, 128)
    scaled = from_hf_config(config_json(cfg_ministral3.Ministral3Config())).layer(0)
    assert scaled.query_scale(torch.arange(4, device=device)).device.type == device
