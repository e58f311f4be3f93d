"""posenc_lib.configs.reader: from_hf_config's paths, each compared with what transformers' own code computes
(transformers 5.24): new-format rope_parameters, sliding windows and NoPE patterns by rule, legacy rope types,
Gemma 4's p-RoPE with per-layer head sizes, Ministral 3's llama_4_scaling_beta (a query scaling), Qwen-VL's M-RoPE
(interleaved or in chunks) on real (3, batch, seq) position ids, DeepSeek-V3.2's MLA beside its half-split indexer,
Kimi Linear's MLA without RoPE, a legacy rope_scaling that the config class puts on some layer types only, a
family without a record (unknown, never a guess); bad configs named by the user's own key; pasted text."""
import importlib
import inspect
import math
from pathlib import Path

import pytest
import torch

from posenc_lib.configs import LayerPositions, from_hf_config
from posenc_lib.multidim import mrope_position_ids

transformers = pytest.importorskip("transformers")

from test_configs import check_against_hf  # noqa: E402
from transformers import AutoConfig  # noqa: E402
from transformers.models.gemma4 import (  # noqa: E402
    configuration_gemma4 as cfg_gemma4,
    modeling_gemma4 as hf_gemma4,
)
from transformers.models.glm4v import (  # noqa: E402
    configuration_glm4v as cfg_glm4v,
    modeling_glm4v as hf_glm4v,
)
from transformers.models.glm4v_moe import (  # noqa: E402
    configuration_glm4v_moe as cfg_glm4v_moe,
    modeling_glm4v_moe as hf_glm4v_moe,
)
from transformers.models.ministral3 import (  # noqa: E402
    configuration_ministral3 as cfg_ministral3,
    modeling_ministral3 as hf_ministral3,
)
from transformers.models.qwen2_vl import (  # noqa: E402
    configuration_qwen2_vl as cfg_qwen2,
    modeling_qwen2_vl as hf_qwen2,
)
from transformers.models.qwen3_5 import (  # noqa: E402
    configuration_qwen3_5 as cfg_qwen35,
    modeling_qwen3_5 as hf_qwen35,
)
from transformers.models.qwen3_vl import (  # noqa: E402
    configuration_qwen3_vl as cfg_qwen3,
    modeling_qwen3_vl as hf_qwen3,
)


def config_json(config) -> dict:
    """A transformers config as its config.json dict (what a learner pastes)."""
    out = {k: v for k, v in config.to_dict().items() if not k.startswith("_") and k != "transformers_version"}
    out["model_type"] = config.model_type
    return out


# ------------------------------------------------------------------ other paths of the reader, against HF
LF = [1.0 + 0.5 * i for i in range(48)]


SYNTHETIC = {
    "gemma3 minimal text_config (family defaults)": {
        "model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 7},
    "gemma3 new-format nested rope_parameters": {
        "model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 2, "head_dim": 32,
        "num_hidden_layers": 4, "sliding_window": 16, "layer_types": ["sliding_attention", "full_attention"] * 2,
        "rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6,
                                               "original_max_position_embeddings": 1024},
                            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
        "max_position_embeddings": 4096},
    "gemma2 defaults": {"model_type": "gemma2", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 3},
    "llama dynamic": {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
                      "max_position_embeddings": 2048, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
    "llama new-format rope_parameters with yarn": {
        "model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
        "max_position_embeddings": 32768,
        "rope_parameters": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096,
                            "rope_theta": 1e6}},
    "qwen2 sliding from max_window_layers": {
        "model_type": "qwen2", "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 5,
        "use_sliding_window": True, "sliding_window": 64, "max_window_layers": 3},
    "qwen3 head_dim default 128, not hidden_size / heads": {
        "model_type": "qwen3", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 3,
        "use_sliding_window": True, "sliding_window": 16, "max_window_layers": 1, "rope_theta": 1e6},
    "mistral without sliding_window key (default 4096)": {
        "model_type": "mistral", "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 2},
    "mistral v0.3-like, sliding_window null": {
        "model_type": "mistral", "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 2,
        "sliding_window": None, "rope_theta": 1e6},
    "smollm3 default NoPE interval with sliding layers": {
        "model_type": "smollm3", "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 8,
        "use_sliding_window": True, "sliding_window": 32},
    "llama4 empty no_rope_layers, default pattern": {
        "model_type": "llama4_text", "hidden_size": 256, "num_attention_heads": 2, "head_dim": 128,
        "num_hidden_layers": 8, "no_rope_layers": [], "floor_scale": 16, "attn_scale": 0.2},
    "llama4 no temperature tuning": {
        "model_type": "llama4_text", "hidden_size": 256, "num_attention_heads": 2, "head_dim": 128,
        "num_hidden_layers": 4, "attn_temperature_tuning": False},
    "deepseek_v3 rope_interleave false": {
        "model_type": "deepseek_v3", "hidden_size": 256, "num_attention_heads": 2, "num_hidden_layers": 2,
        "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "kv_lora_rank": 16, "q_lora_rank": 32,
        "rope_interleave": False, "n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1},
    "phi3 partial rotary with longrope (Phi-4-mini-like)": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 24, "num_hidden_layers": 2,
        "partial_rotary_factor": 0.75, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope", "long_factor": LF, "short_factor": [1.0] * 48}},
    "gpt_neox defaults (rotary_pct 0.25)": {
        "model_type": "gpt_neox", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2},
    "phi default partial 0.5": {"model_type": "phi", "hidden_size": 256, "num_attention_heads": 4,
                                "num_hidden_layers": 2},
    "gpt2 (learned absolute, n_positions default)": {"model_type": "gpt2", "n_embd": 64, "n_head": 2, "n_layer": 2},
}


@pytest.mark.parametrize("config", SYNTHETIC.values(), ids=list(SYNTHETIC))
def test_other_paths_match_transformers(config):
    check_against_hf(config)


def test_phi3_legacy_su_is_longrope():
    """transformers' Phi3Config renames the legacy types 'su' and 'yarn' to 'longrope' (5.x then misses L0 for 'su'
    and refuses the config; the reader applies the rename before looking for L0)."""
    config = SYNTHETIC["phi3 partial rotary with longrope (Phi-4-mini-like)"]
    for legacy in ("su", "yarn"):
        renamed = {**config, "rope_scaling": {**config["rope_scaling"], "type": legacy}}
        a, b = from_hf_config(config).layer(0), from_hf_config(renamed).layer(0)
        assert b.rope_type == "longrope" and a.attention_factor == b.attention_factor
        torch.testing.assert_close(a.inv_freq, b.inv_freq, atol=0, rtol=0)


# ----------------------------------------------------------------------------- Gemma 4: p-RoPE
def test_gemma4_default_reads_p_rope_on_wider_full_layers_as_transformers():
    """Gemma 4 (transformers' defaults): sliding layers plain RoPE over 256 dims, base 1e4; full-attention layers
    global_head_dim 512 with p-RoPE (base 1e6, the fastest partial_rotary_factor 0.25 of the pairs keep their
    frequency base^(-2i/512), the rest stop); q.k not scaled (scaling = 1.0). Frequencies equal transformers'
    rotary buffers; the rotation equals its apply_rotary_pos_emb."""
    config = cfg_gemma4.Gemma4TextConfig()
    read = from_hf_config(config_json(config))
    rotary = hf_gemma4.Gemma4TextRotaryEmbedding(config)
    for index, layer_type, head_dim in ((0, "sliding_attention", 256), (5, "full_attention", 512)):
        layer = read.layer(index)
        assert layer.layer_type == layer_type and layer.head_dim == head_dim and layer.rotary_dims == (0, head_dim)
        assert layer.layout == "half" and layer.score_scale == 1.0 and layer.attention_factor == 1.0
        theirs = getattr(rotary, f"{layer_type}_inv_freq").double()
        torch.testing.assert_close(layer.inv_freq, theirs, rtol=1e-6, atol=0)
        x = torch.randn(1, 2, 6, head_dim, dtype=torch.float64, generator=torch.Generator().manual_seed(index))
        positions = torch.tensor([[0, 1, 2, 100, 4000, 9000]])
        cos, sin = rotary(x.float(), positions, layer_type)
        expected = hf_gemma4.apply_rotary_pos_emb(x.transpose(1, 2), cos.double(), sin.double(), unsqueeze_dim=2)
        torch.testing.assert_close(layer.apply(x, positions), expected.transpose(1, 2), rtol=0, atol=2e-3)
    full = read.layer(5)
    assert full.rope_type == "proportional" and int((full.inv_freq > 0).sum()) == 64  # 0.25 of 256 pairs turn
    assert read.layer(0).window == 512 and read.layer(0).attention == "sliding" and read.layer(5).window is None


def test_gemma4_checkpoint_form_global_head_dim_reads_like_per_layer_config():
    """A Gemma 4 config.json says global_head_dim (transformers' to_dict writes per_layer_config instead): same."""
    written = config_json(cfg_gemma4.Gemma4TextConfig())
    checkpoint = {k: v for k, v in written.items() if k != "per_layer_config"} | {"global_head_dim": 512}
    a, b = from_hf_config(written), from_hf_config(checkpoint)
    assert [layer.head_dim for layer in a.layers] == [layer.head_dim for layer in b.layers]
    assert [layer.head_dim for layer in b.layers][:6] == [256] * 5 + [512]


@pytest.mark.parametrize("layers", [4, 6, 8, 12])
def test_gemma4_layer_types_rule_is_the_config_class_s(layers):
    """Without layer_types, Gemma 4's pattern: every 6th layer full, the last one forced to full (as its config
    class computes them)."""
    written = config_json(cfg_gemma4.Gemma4TextConfig(num_hidden_layers=layers))
    expected = written.pop("layer_types")
    written.pop("per_layer_config")
    assert [layer.layer_type for layer in from_hf_config(written).layers] == expected


def test_p_rope_and_neox_partial_are_two_meanings_of_partial():
    """The same partial_rotary_factor 0.5 on a Llama-like head of 64: GPT-NeoX's partial turns the first 32 dims
    (16 pairs, theta over 32 dims); p-RoPE turns pairs of the whole head (theta over 64 dims) and stops the
    slowest half of them."""
    base = {"model_type": "llama", "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 1}
    neox = from_hf_config({**base, "rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5}}).layer(0)
    p = from_hf_config({**base, "rope_parameters": {"rope_theta": 1e4, "rope_type": "proportional",
                                                     "partial_rotary_factor": 0.5}}).layer(0)
    assert neox.rotary_dims == (0, 32) and p.rotary_dims == (0, 64)
    assert neox.inv_freq.shape == (16,) and p.inv_freq.shape == (32,)
    assert float(neox.inv_freq[1]) == pytest.approx(1e4 ** (-2 / 32))
    assert float(p.inv_freq[1]) == pytest.approx(1e4 ** (-2 / 64))
    assert int((p.inv_freq == 0).sum()) == 16


# ----------------------------------------------------------------------------- Ministral 3: a query scaling
def _probe_queries(seen: list):
    def probe(module, query, key, value, attention_mask, **kwargs):
        seen.append(query)
        return torch.zeros(query.shape[0], query.shape[2], query.shape[1], value.shape[-1], dtype=query.dtype), None
    transformers.AttentionInterface.register("posenc_reader_probe", probe)
    return "posenc_reader_probe"


def test_ministral3_llama_4_scaling_beta_scales_queries_after_rope_as_transformers():
    """Ministral3Attention multiplies q, after RoPE, by 1 + beta ln(1 + floor(m / L0)) (get_llama_4_attn_scale,
    L0 = rope_parameters' original_max_position_embeddings); keys are not scaled and the rotation is YaRN's as
    usual. The reader reports it as the layer's query_scale, not as a change of the rotation."""
    rope = {"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0, "original_max_position_embeddings": 4,
            "max_position_embeddings": 64, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
            "llama_4_scaling_beta": 0.1}
    config = cfg_ministral3.Ministral3Config(hidden_size=64, num_attention_heads=2, num_key_value_heads=2, head_dim=32,
                                             num_hidden_layers=1, max_position_embeddings=64, rope_parameters=rope)
    seen = []
    config._attn_implementation = _probe_queries(seen)
    attention = hf_ministral3.Ministral3Attention(config, 0).double()
    rotary = hf_ministral3.Ministral3RotaryEmbedding(config)
    hidden = torch.randn(1, 7, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    positions = torch.tensor([[0, 1, 3, 4, 9, 20, 63]])
    cos, sin = rotary(hidden, positions)
    attention(hidden, (cos.double(), sin.double()), None, positions)
    q = attention.q_proj(hidden).view(1, 7, 2, 32).transpose(1, 2)
    layer = from_hf_config(config_json(config)).layer(0)
    scale = layer.query_scale(positions)
    expected = 1 + 0.1 * torch.log(1 + torch.floor(positions / 4.0))
    torch.testing.assert_close(scale, expected.double())
    assert float(scale.max()) > 1.2  # a real scaling at these positions
    torch.testing.assert_close(layer.apply(q, positions) * scale[:, None, :, None], seen[0], rtol=0, atol=1e-5)
    plain = from_hf_config({**config_json(config), "rope_parameters": {k: v for k, v in rope.items()
                                                                 if k != "llama_4_scaling_beta"}}).layer(0)
    torch.testing.assert_close(plain.inv_freq, layer.inv_freq)  # beta does not touch the rotation
    report = from_hf_config(config_json(config)).table()
    assert "query scaling" in report and "not a change of the rotation" in report


def test_ministral3_default_config_reads():
    read = from_hf_config(config_json(cfg_ministral3.Ministral3Config()))
    layer = read.layer(0)
    assert layer.rope_type == "yarn" and layer.temperature == {"floor_scale": 16384.0, "attn_scale": 0.1, "offset": 0}
    assert float(layer.query_scale(torch.tensor([16383]))) == 1.0
    assert float(layer.query_scale(torch.tensor([16384]))) == pytest.approx(1 + 0.1 * math.log(2))


# ----------------------------------------------------------------------------- M-RoPE on real position ids
SEGMENTS = [("text", 3), ("image", (1, 4, 6)), ("text", 2), ("video", (2, 4, 4)), ("text", 3)]


GLM4V_TEXT = {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}}


@pytest.mark.parametrize("config_cls,kwargs,rotary_cls,apply,interleaved,rotary_dims", [
    (cfg_qwen3.Qwen3VLTextConfig, {}, hf_qwen3.Qwen3VLTextRotaryEmbedding, hf_qwen3.apply_rotary_pos_emb, True,
     (0, 128)),
    (cfg_qwen2.Qwen2VLTextConfig, {}, hf_qwen2.Qwen2VLRotaryEmbedding, hf_qwen2.apply_rotary_pos_emb, False, (0, 128)),
    (cfg_qwen35.Qwen3_5TextConfig, {}, hf_qwen35.Qwen3_5TextRotaryEmbedding, hf_qwen35.apply_rotary_pos_emb, True,
     (0, 64)),
    (cfg_glm4v.Glm4vTextConfig, GLM4V_TEXT, hf_glm4v.Glm4vTextRotaryEmbedding, hf_glm4v.apply_rotary_pos_emb, False,
     (0, 64)),
    (cfg_glm4v_moe.Glm4vMoeTextConfig, {"head_dim": 128}, hf_glm4v_moe.Glm4vMoeTextRotaryEmbedding,
     hf_glm4v_moe.apply_rotary_pos_emb, False, (0, 64)),
], ids=["qwen3_vl", "qwen2_vl", "qwen3_5", "glm4v", "glm4v_moe"])
def test_mrope_layer_turns_like_transformers_on_image_and_video_positions(config_cls, kwargs, rotary_cls, apply,
                                                                          interleaved, rotary_dims):
    """The reader's layer, given (3, batch, seq) ids of text + image + text + video + text (multidim's
    mrope_position_ids, checked against get_rope_index in test_multidim.py), turns q as the family's rotary
    embedding and apply_rotary_pos_emb do: Qwen3-VL and Qwen3.5 interleave t, h, w pair by pair (Qwen3.5 on its
    first 64 of 256 dims), Qwen2-VL takes them in chunks, GLM-4V in chunks over interleaved pairs (2i, 2i+1) of
    its first 64 of 128 dims (GLM-4.1V's partial_rotary_factor 0.5; transformers' default config has none, and
    its default section [8, 12, 12] then does not fit), GLM-4V-MoE in the same chunks over half-split pairs (its
    transformers default has no head_dim and 4096 / 96 heads does not divide: head_dim 128 is given here)."""
    config = config_cls(**kwargs)
    read = from_hf_config(config_json(config))
    layer = read.layer(read.rope_layers[0])
    assert read.mrope_interleaved is interleaved and layer.mrope_interleaved is interleaved
    assert layer.rotary_dims == rotary_dims
    positions = mrope_position_ids(SEGMENTS)[:, None, :].expand(3, 2, -1)  # (3, batch, seq)
    seq, head_dim = positions.shape[-1], layer.head_dim
    q = torch.randn(2, 2, seq, head_dim, generator=torch.Generator().manual_seed(1))
    cos, sin = rotary_cls(config)(q, positions)
    expected, _ = apply(q, q, cos, sin)
    torch.testing.assert_close(layer.apply(q, positions), expected, rtol=0, atol=1e-4)
    text_only = torch.arange(seq)[None]
    torch.testing.assert_close(layer.apply(q, text_only), layer.apply(q, text_only.expand(3, 1, -1)), rtol=0, atol=1e-6)


def test_mrope_without_a_record_does_not_guess_the_interleaving():
    config = {"model_type": "my_vl", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1,
              "rope_parameters": {"rope_theta": 1e4, "rope_type": "default", "mrope_section": [6, 5, 5]}}
    read = from_hf_config(config)
    assert read.mrope_section == (6, 5, 5) and read.mrope_interleaved is None
    assert "unknown" in read.table()


# ----------------------------------------------------------------------------- DeepSeek-V3.2, Kimi
def _tiny_dsa(model_type="deepseek_v32", **rope):
    """A DSA family's transformers config at a tiny size (2 heads; an indexer of 2 heads of 32 dims)."""
    return transformers.CONFIG_MAPPING[model_type](
        hidden_size=64, num_attention_heads=2, num_key_value_heads=2, num_hidden_layers=2, q_lora_rank=32,
        kv_lora_rank=16, qk_rope_head_dim=16, qk_nope_head_dim=16, v_head_dim=16, index_n_heads=2, index_head_dim=32,
        index_topk=4, n_routed_experts=4, n_group=1, topk_group=1, num_experts_per_tok=2, moe_intermediate_size=16,
        intermediate_size=32, vocab_size=128, max_position_embeddings=1024, rope_parameters=rope or None)


def test_deepseek_v32_reads_mla_interleaved_on_every_indexed_attention_layer():
    """DeepSeek-V3.2's defaults: every layer 'indexed_attention' (full causal attention), MLA heads of
    qk_nope 128 + qk_rope 64 dims, RoPE on the last 64 in interleaved pairs (the code has no rope_interleave
    switch), q.k scaled as DeepseekV32Attention scales it; the indexer beside it half-split on the first 64 of its
    128-dim heads, stated in a note while the layout column stays the main attention's."""
    from transformers.models.deepseek_v32 import configuration_deepseek_v32 as cfg_v32, modeling_deepseek_v32 as hf_v32
    config = cfg_v32.DeepseekV32Config()
    read = from_hf_config(config_json(config))
    with torch.device("meta"):
        attention = hf_v32.DeepseekV32Attention(config, 0)
    assert read.family == "deepseek_v32" and read.num_layers == 61 and read.rope_layers == list(range(61))
    for layer in read.layers:
        assert layer.layer_type == "indexed_attention" and layer.attention == "full" and layer.window is None
        assert layer.head_dim == 192 and layer.rotary_dims == (128, 192) and layer.layout == "interleaved"
        assert math.isclose(layer.score_scale, attention.scaling, rel_tol=1e-12)
    indexer = read.indexer
    assert (indexer.head_dim, indexer.rotary_dims, indexer.layout) == (128, (0, 64), "half")
    row = read.rows()[0]
    assert row["layout"] == "interleaved" and row["rotary_dims"] == "128:192 of 192"
    assert "indexer" in read.table() and "in half pairs, not the interleaved pairs" in read.table()


@pytest.mark.parametrize("model_type,layout,where", [
    ("deepseek_v32", "half", "first"), ("axk2", "half", "first"), (("glm_moe_dsa", "interleaved", "first")),
    ("hy_v4", "half", "last"), ("hy_v4_vl_text", "interleaved", "last")])
def test_dsa_indexer_turns_its_q_and_k_as_transformers(model_type, layout, where):
    """What each DSA family's indexer does to its own q and k, recorded from its forward pass (q from wq_b, k from
    k_norm, and what its apply_rotary_pos_emb[_interleave] receives and returns): the slice it turns is the reader's
    indexer.rotary_dims, and the indexer's scores q.k between positions 0, 1, 2, 3, 700 equal those of the reader's
    indexer.apply, on a YaRN config (frequencies and attention factor from the family's rotary embedding, as the
    main attention's); the other layout would not give them. (DeepSeek's interleave function writes the turned
    slice as [first of every pair | second], for q and k alike: the scores do not see that.)"""
    sections = {"mrope_section": [4, 2, 2]} if model_type == "hy_v4_vl_text" else {}  # its M-RoPE, fitted
    config = _tiny_dsa(model_type, rope_type="yarn", factor=4.0, original_max_position_embeddings=256,
                       rope_theta=10000.0, mscale=1.0, mscale_all_dim=0.5, **sections)
    read = from_hf_config(config_json(config))
    indexer = read.indexer
    assert (indexer.layout, indexer.rotary_dims) == (layout, (0, 16) if where == "first" else (16, 32))
    module = importlib.import_module(type(config).__module__.replace(".configuration_", ".modeling_"))
    indexer_class = next(getattr(module, n) for n in dir(module) if n.endswith("Indexer"))
    rotary_class = next(getattr(module, n) for n in dir(module) if n.endswith("RotaryEmbedding") and "Vision" not in n)
    hf_indexer = indexer_class(config, 0).double().eval()
    seen, rotated, originals = {}, [], {}
    hooks = [hf_indexer.wq_b.register_forward_hook(lambda m, a, out: seen.__setitem__("q", out)),
             hf_indexer.k_norm.register_forward_hook(lambda m, a, out: seen.__setitem__("k", out))]

    def recording(name):
        def record(q, k, cos, sin, *args, **kwargs):
            out = originals[name](q, k, cos, sin, *args, **kwargs)
            rotated.append((q, k) + tuple(out))
            return out
        return record
    for name in ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave"):
        if hasattr(module, name):
            originals[name] = getattr(module, name)
            setattr(module, name, recording(name))
    generator = torch.Generator().manual_seed(7)
    positions = torch.tensor([[0, 1, 2, 3, 700]])
    hidden = torch.randn(1, 5, 64, dtype=torch.float64, generator=generator)
    q_resid = torch.randn(1, 5, 32, dtype=torch.float64, generator=generator)
    cos, sin = rotary_class(config)(hidden, positions)
    try:
        with torch.no_grad():
            hf_indexer(hidden, q_resid, (cos.double(), sin.double()), torch.zeros(1, 5, 5, dtype=torch.float64),
                       positions)
    finally:
        for name, function in originals.items():
            setattr(module, name, function)
        for hook in hooks:
            hook.remove()
    (q_in, k_in, q_out, k_out), = rotated
    q = seen["q"].view(1, 5, 2, 32)                       # (batch, seq, heads, index_head_dim)
    k = seen["k"].view(1, 5, 1, 32)
    start, stop = indexer.rotary_dims
    torch.testing.assert_close(q_in, q[..., start:stop], rtol=0, atol=0)  # the slice the code turns
    torch.testing.assert_close(k_in, k[..., start:stop], rtol=0, atol=0)
    theirs_q = torch.cat((q[..., :start], q_out, q[..., stop:]), dim=-1).transpose(1, 2)  # (batch, heads, seq, d)
    theirs_k = torch.cat((k[..., :start], k_out, k[..., stop:]), dim=-1).transpose(1, 2)
    theirs = theirs_q @ theirs_k.transpose(-1, -2)
    ours = (indexer.apply(q.transpose(1, 2), positions[0])
            @ indexer.apply(k.transpose(1, 2), positions[0]).transpose(-1, -2))
    # (1e-5: the rotary embedding computes its angles in float32, 700 * 2^-24 radians off at the far position)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5 * float(theirs.abs().max()))
    assert indexer.attention_factor != 1.0  # YaRN's factor on cos/sin reaches the indexer too
    fields = {f: getattr(indexer, f) for f in indexer.__dataclass_fields__}
    other = LayerPositions(**{**fields, "layout": "interleaved" if layout == "half" else "half"})
    others = (other.apply(q.transpose(1, 2), positions[0])
              @ other.apply(k.transpose(1, 2), positions[0]).transpose(-1, -2))
    assert (others - theirs).abs().max() > 1e-3 * float(theirs.abs().max())


def test_deepseek_v32_index_head_dim_must_hold_the_rope_slice():
    with pytest.raises(ValueError,
                       match=r"config\['index_head_dim'\] = 8 must be at least config\['qk_rope_head_dim'\]"):
        from_hf_config({**config_json(_tiny_dsa()), "index_head_dim": 8})


def test_kimi_linear_has_no_rope_and_its_layer_pattern_is_the_config_class_s():
    """Kimi Linear: its MLA layers take no position (KimiLinearAttention.forward has no position argument and the
    modeling file defines no rotary embedding), KDA linear attention between them; the layer pattern from the
    checkpoint's linear_attn_config (1-based lists) or the default, as KimiLinearConfig computes it."""
    from transformers.models.kimi_linear import configuration_kimi_linear as cfg_kl, modeling_kimi_linear as hf_kl
    assert not [name for name in dir(hf_kl) if name.endswith("RotaryEmbedding")]
    parameters = inspect.signature(hf_kl.KimiLinearAttention.forward).parameters
    assert not {"position_ids", "position_embeddings"} & set(parameters)
    for given in (None, {"full_attn_layers": [2, 8], "kda_layers": [1, 3, 4, 5, 6, 7]}):
        kwargs = {} if given is None else {"linear_attn_config": given}
        config = cfg_kl.KimiLinearConfig(num_hidden_layers=8, **kwargs)
        written = {k: v for k, v in config_json(config).items() if k != "layer_types"} | kwargs
        read = from_hf_config(written)
        assert [layer.layer_type for layer in read.layers] == config.layer_types
        assert read.rope_layers == [] and read.position_encoding == "none"
        assert {layer.mixer for layer in read.layers} == {"attention", "linear attention"}
        full = [layer for layer in read.layers if layer.mixer == "attention"]
        assert all(layer.head_dim == config.qk_head_dim and layer.score_scale == config.qk_head_dim ** -0.5
                   for layer in full)
    with pytest.raises(ValueError, match=r"config\['linear_attn_config'\]\['kda_layers'\] must list layer numbers"):
        from_hf_config({**written, "linear_attn_config": {"full_attn_layers": [1], "kda_layers": [0]}})


# ----------------------------------------------------------------------------- no record: unknown, never a guess
def test_a_family_without_a_record_reports_code_only_facts_as_unknown():
    """Which layers rotate, the layout and (without layer_types) the attention pattern are in a family's code:
    without a record the report shows them as unknown, says where they come from and points to configs.measure."""
    config = {"model_type": "my_llama", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 3,
              "rope_theta": 1e4, "sliding_window": 16}
    read = from_hf_config(config)
    row = read.rows()[0]
    assert row["rope"] == row["layout"] == row["attention"] == row["score_scale"] == row["temperature"] == "unknown"
    assert row["attention_factor"] == 1.0  # plain RoPE: no factor to cancel
    yarn = {**config, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}}
    assert from_hf_config(yarn).rows()[0]["attention_factor"] == "unknown"  # a q/k norm after RoPE would cancel it
    table = read.table()
    assert "True" not in table and "sliding" not in table
    assert "modeling_my_llama.py" in table and "configs.measure" in table
    typed = from_hf_config({**config, "layer_types": ["sliding_attention"] * 3}).rows()[0]
    assert typed["rope"] == "unknown" and typed["attention"] == "sliding 16"  # layer_types is read, not guessed
    assert from_hf_config({**config, "model_type": "llama"}).rows()[0]["rope"] is True
    assert read.layer(0).describe() == ("layer 0: RoPE if its code rotates (unknown), layout unknown, all dims, "
                                        "base 10000, default, attention unknown")


def test_a_family_without_a_record_and_mla_keys_does_not_state_rotated_dims():
    """With MLA keys (qk_rope_head_dim, kv_lora_rank ...) the head size and the rotated slice are the code's
    (DeepSeek: RoPE on the last qk_rope_head_dim of qk_nope + qk_rope; Kimi Linear: none), not hidden_size // heads:
    a model_type without a record shows them, and so the wavelengths, as unknown."""
    config = {"model_type": "my_mla", "hidden_size": 7168, "num_attention_heads": 128, "num_hidden_layers": 2,
              "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "kv_lora_rank": 512, "rope_theta": 1e4}
    read = from_hf_config(config)
    row = read.rows()[0]
    assert row["rotary_dims"] == row["longest_wavelength"] == "unknown"
    assert "56" not in read.table()  # 7168 // 128: what the generic rules would have said
    assert "dims unknown" in read.layer(0).describe()
    plain = from_hf_config({k: v for k, v in config.items() if k not in ("qk_nope_head_dim", "qk_rope_head_dim",
                                                                          "kv_lora_rank")})
    assert plain.rows()[0]["rotary_dims"] == "0:56 of 56"  # without MLA keys: transformers' shared rope functions


def test_unknown_model_type_states_no_layout():
    """The layout is in a family's code, not in config.json: without a record it is None, shown as unknown with
    where it would come from, and apply refuses rather than guess."""
    positions = from_hf_config({**SMALL_LLAMA, "model_type": "my_llama", "rope_theta": 5e5})
    assert positions.family == "generic" and "no family record" in positions.notes[0]
    assert positions.layer(0).base == 5e5 and positions.layer(0).layout is None
    table = positions.table()
    assert "unknown" in table and "modeling_my_llama.py" in table and "configs.measure" in table
    assert " half " not in table and "interleaved" not in table
    with pytest.raises(ValueError, match=r"layout is unknown"):
        positions.layer(0).apply(torch.randn(3, 32))


# ----------------------------------------------------------------------------- bad configs: the user's own key
LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2,
         "rope_theta": 10000.0}


QWEN3_VL = {**LLAMA, "model_type": "qwen3_vl_text", "head_dim": 32}


GEMMA4 = {**LLAMA, "model_type": "gemma4_text", "head_dim": 32, "layer_types": ["sliding_attention", "full_attention"],
          "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                              "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                 "rope_theta": 1e6}}}


BAD = [
    ("hidden_size not divisible by the heads", {**LLAMA, "hidden_size": 100, "num_attention_heads": 3}, ValueError,
     r"config\['hidden_size'\] = 100 must be divisible by config\['num_attention_heads'\] = 3"),
    ("GPT-J's n_embd not divisible by n_head", {"model_type": "gptj", "n_embd": 100, "n_head": 3, "n_layer": 1},
     ValueError, r"config\['n_embd'\] = 100 must be divisible by config\['n_head'\] = 3"),
    ("layer_types longer", {**LLAMA, "layer_types": ["full_attention"] * 3}, ValueError,
     r"config\['layer_types'\] must have one entry for each of the 2 layers \(num_hidden_layers\), got 3"),
    ("a layer type not read", {**LLAMA, "layer_types": ["full_attention", "heavily_compressed_attention"]}, ValueError,
     r"config\['layer_types'\]\[1\] is 'heavily_compressed_attention', a layer type this reader does not read"),
    ("layer_types shorter", {**LLAMA, "layer_types": ["full_attention"]}, ValueError,
     r"config\['layer_types'\] must have one entry for each of the 2 layers \(num_hidden_layers\), got 1"),
    ("mrope_section of two", {**QWEN3_VL, "rope_parameters": {"rope_theta": 1e4, "mrope_section": [8, 8]}}, ValueError,
     r"config\['rope_parameters'\]\['mrope_section'\] must be a list of 3 section sizes"),
    ("mrope_section negative", {**QWEN3_VL, "rope_parameters": {"rope_theta": 1e4, "mrope_section": [18, -1, -1]}},
     ValueError, r"config\['rope_parameters'\]\['mrope_section'\] must hold non-negative integers"),
    ("mrope_section not integers", {**QWEN3_VL, "rope_parameters": {"rope_theta": 1e4, "mrope_section": [6, 5.5, 4.5]}},
     ValueError, r"config\['rope_parameters'\]\['mrope_section'\] must hold non-negative integers"),
    ("mrope_section not adding up", {**QWEN3_VL, "rope_scaling": {"type": "mrope", "mrope_section": [6, 6, 6]}},
     ValueError, r"config\['rope_scaling'\]\['mrope_section'\] must add up to the number of pairs 16"),
    ("mrope_section absent, the code's default does not fit", QWEN3_VL, ValueError,
     r"config\['rope_parameters'\]\['mrope_section'\] \(absent: the qwen3_vl code's default \[24, 20, 20\]\) "
     r"must add up"),
    ("Ministral 3's beta without its L0", {**LLAMA, "model_type": "ministral3", "rope_scaling": {
        "type": "linear", "factor": 2.0, "llama_4_scaling_beta": 0.1}}, ValueError,
     r"config\['rope_scaling'\]\['llama_4_scaling_beta'\] needs "
     r"config\['rope_scaling'\]\['original_max_position_embed"),
    ("Gemma 4 bidirectional everywhere", {**GEMMA4, "use_bidirectional_attention": "all"}, ValueError,
     r"config\['use_bidirectional_attention'\] = 'all' is not read"),
    ("per_layer_config index past the layers", {**GEMMA4, "per_layer_config": {"07": {"head_dim": 64}}}, ValueError,
     r"config\['per_layer_config'\]\['07'\]: per_layer_config maps a layer index 0 .. 1"),
    ("per_layer_config rope parameters", {**LLAMA, "per_layer_config": {"1": {"rope_parameters": {}}}}, ValueError,
     r"config\['per_layer_config'\]\['1'\]\['rope_parameters'\]: a per-layer rope_parameters is not read"),
    ("per_layer_config head_dim not an int", {**GEMMA4, "per_layer_config": {"01": {"head_dim": "64"}}}, TypeError,
     r"config\['per_layer_config'\]\['01'\]\['head_dim'\]"),
    ("OLMo 3 flat rope_parameters (its class keeps them unused)", {**LLAMA, "model_type": "olmo3", "rope_parameters": {
        "rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}, ValueError,
     r"config\['rope_parameters'\] is flat, but transformers' olmo3 config class converts only a legacy"),
    ("dynamic NTK without max_position_embeddings", {**LLAMA, "model_type": "my_llama",  # no family default either
                                                     "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
     ValueError, r"dynamic NTK starts from config\['max_position_embeddings'\], which is missing"),
    ("p-RoPE fraction over 1", {**GEMMA4, "rope_parameters": {**GEMMA4["rope_parameters"], "full_attention": {
        "rope_type": "proportional", "partial_rotary_factor": 1.5, "rope_theta": 1e6}}}, ValueError,
     r"config\['rope_parameters'\]\['full_attention'\].*partial_rotary_factor'\] must be in \(0, 1\]"),
]


@pytest.mark.parametrize("config,exc,pattern", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config_is_named_by_the_users_key(config, exc, pattern):
    with pytest.raises(exc, match=pattern):
        from_hf_config(config)


# a Llama without rope_theta (LlamaConfig's default base applies)
SMALL_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2}


BAD_READS = [
    ("not a dict", "config", TypeError, r"config must be a dict"),
    ("text_config not a dict", {"model_type": "gemma3", "text_config": [1]}, TypeError,
     r"config\['text_config'\] must be a dict"),
    ("unknown rope_type", {**SMALL_LLAMA, "rope_scaling": {"rope_type": "su", "factor": 2.0}}, ValueError,
     r"config\['rope_scaling'\]: scaling\['rope_type'\] must be one of .*got 'su'"),
    ("unknown key in rope_parameters", {**SMALL_LLAMA, "rope_parameters": {"rope_type": "linear", "factr": 2.0}},
     ValueError, r"config\['rope_parameters'\]: .*unknown keys \['factr'\]"),
    ("rope_scaling a list", {**SMALL_LLAMA, "rope_scaling": [2.0]}, TypeError,
     r"config\['rope_scaling'\] must be a dict"),
    ("hidden_size a string", {**SMALL_LLAMA, "hidden_size": "64"}, TypeError,
     r"config\['hidden_size'\] must be an int"),
    ("num_hidden_layers missing", {k: v for k, v in {**SMALL_LLAMA, "model_type": "mistral"}.items()
                                   if k != "num_hidden_layers"}, ValueError,
     r"config\['num_hidden_layers'\] is missing"),
    ("head_dim float", {**SMALL_LLAMA, "head_dim": 32.0}, TypeError, r"config\['head_dim'\] must be an int"),
    ("rope_theta string", {**SMALL_LLAMA, "rope_theta": "1e4"}, TypeError, r"config\['rope_theta'\] must be a number"),
    ("partial_rotary_factor too big", {**SMALL_LLAMA, "partial_rotary_factor": 1.5}, ValueError,
     r"partial_rotary_factor.* must be in \(0, 1\]"),
    ("no_rope_layers entry 2", {**SMALL_LLAMA, "model_type": "smollm3", "no_rope_layers": [1, 2]}, ValueError,
     r"config\['no_rope_layers'\]\[1\] must be one of \[0, 1\]"),
    ("no_rope_layers a bool entry", {**SMALL_LLAMA, "model_type": "smollm3", "no_rope_layers": [1, True]}, ValueError,
     r"config\['no_rope_layers'\]\[1\] must be one of \[0, 1\]"),
    ("no_rope_layers a float entry", {**SMALL_LLAMA, "model_type": "smollm3", "no_rope_layers": [1.0, 1]}, ValueError,
     r"config\['no_rope_layers'\]\[0\] must be one of \[0, 1\]"),
    ("layer_types a list entry", {**SMALL_LLAMA, "layer_types": ["full_attention", ["full_attention"]]}, ValueError,
     r"config\['layer_types'\]\[1\] must be one of"),
    ("no_rope_layers too short", {**SMALL_LLAMA, "model_type": "smollm3", "no_rope_layers": [1]}, ValueError,
     r"config\['no_rope_layers'\] must have one entry for each of the 2 layers"),
    ("layer_types unknown", {**SMALL_LLAMA, "layer_types": ["full_attention", "linear_attn"]}, ValueError,
     r"config\['layer_types'\]\[1\] is 'linear_attn', a layer type this reader does not read"),
    ("layer_types a string", {**SMALL_LLAMA, "layer_types": "full_attention"}, TypeError,
     r"config\['layer_types'\] must be a list, got str"),
    ("no_rope_layers a dict", {**SMALL_LLAMA, "model_type": "llama4_text", "head_dim": 32, "no_rope_layers": {"0": 1}},
     TypeError, r"config\['no_rope_layers'\] must be a list"),
    ("gemma3 legacy rope_scaling of unknown type", {**SMALL_LLAMA, "model_type": "gemma3_text",
                                                    "rope_scaling": {"rope_type": "su", "factor": 8.0}},
     ValueError, r"config\['rope_scaling'\]: scaling\['rope_type'\] must be one of"),
    ("gemma3 wrapper, a text_config key of the wrong type", {"model_type": "gemma3", "text_config": {
        **SMALL_LLAMA, "model_type": "gemma3_text", "rope_local_base_freq": "1e4"}},
     TypeError, r"config\['text_config'\]\['rope_local_base_freq'\] must be a number"),
    ("longrope factors of the wrong length", {**SMALL_LLAMA, "model_type": "phi3", "max_position_embeddings": 8192,
                                             "original_max_position_embeddings": 4096,
                                             "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 15,
                                                              "long_factor": [2.0] * 16}},
     ValueError, r"config\['rope_scaling'\]: scaling\['short_factor'\] must have one factor per pair, "
                 r"rotary_dim/2 = 16"),
    ("mrope sections not adding up", {**SMALL_LLAMA, "model_type": "qwen2_5_vl",
                                      "rope_scaling": {"type": "mrope", "mrope_section": [4, 4, 4]}},
     ValueError, r"\['mrope_section'\] must add up to the number of pairs 16"),
    ("attn_temperature_tuning a string", {**SMALL_LLAMA, "model_type": "llama4_text", "head_dim": 32,
                                          "attn_temperature_tuning": "yes"},
     TypeError, r"config\['attn_temperature_tuning'\] must be true or false"),
    ("model_type not a string", {**SMALL_LLAMA, "model_type": 3}, TypeError,
     r"config\['model_type'\] must be a string"),
    ("gpt-j rotary_dim odd", {"model_type": "gptj", "n_embd": 64, "n_head": 2, "n_layer": 1, "rotary_dim": 7},
     ValueError, r"config\['rotary_dim'\] must be even"),
    ("hidden_size not divisible by the heads", {**SMALL_LLAMA, "hidden_size": 65}, ValueError,
     r"config\['hidden_size'\] = 65 must be divisible by config\['num_attention_heads'\] = 2"),
    ("n_embd not divisible by n_head (GPT-J's names)", {"model_type": "gptj", "n_embd": 65, "n_head": 2, "n_layer": 1},
     ValueError, r"config\['n_embd'\] = 65 must be divisible by config\['n_head'\] = 2"),
    ("layer_types longer than num_hidden_layers", {**SMALL_LLAMA, "layer_types": ["full_attention"] * 3}, ValueError,
     r"config\['layer_types'\] must have one entry for each of the 2 layers \(num_hidden_layers\), got 3"),
    ("layer_types shorter than num_hidden_layers", {**SMALL_LLAMA, "layer_types": ["full_attention"]}, ValueError,
     r"config\['layer_types'\] must have one entry for each of the 2 layers \(num_hidden_layers\), got 1"),
    ("mrope_section of two sections", {**SMALL_LLAMA, "model_type": "qwen2_5_vl",
                                       "rope_scaling": {"type": "mrope", "mrope_section": [8, 8]}},
     ValueError, r"\['mrope_section'\] must be a list of 3 section sizes"),
    ("mrope_section negative", {**SMALL_LLAMA, "model_type": "qwen2_5_vl",
                                "rope_scaling": {"type": "mrope", "mrope_section": [20, -2, -2]}},
     ValueError, r"\['mrope_section'\] must hold non-negative integers"),
    ("mrope_section not integers", {**SMALL_LLAMA, "model_type": "qwen2_5_vl",
                                    "rope_scaling": {"type": "mrope", "mrope_section": [8.0, 4, 4]}},
     ValueError, r"\['mrope_section'\] must hold non-negative integers"),
    ("rotary_pct too big names rotary_pct", {**SMALL_LLAMA, "model_type": "gpt_neox", "rotary_pct": 2.0}, ValueError,
     r"config\['rotary_pct'\]"),
    ("qk_rope_head_dim missing names it", {**SMALL_LLAMA, "model_type": "deepseek_v3", "qk_rope_head_dim": None,
                                           "qk_nope_head_dim": 16}, ValueError,
     r"config\['qk_rope_head_dim'\] is missing"),
    ("n_positions a string names n_positions", {"model_type": "gpt2", "n_embd": 64, "n_head": 2, "n_layer": 1,
                                                "n_positions": "1024"}, TypeError, r"config\['n_positions'\]"),
    ("nested rope_parameters missing a layer type", {**SMALL_LLAMA, "model_type": "gemma3_text",
                                                     "rope_parameters": {"full_attention": {"rope_type": "default"}}},
     ValueError, r"has no entry for the layer type 'sliding_attention'"),
]


@pytest.mark.parametrize("config,exc,pattern", [b[1:] for b in BAD_READS], ids=[b[0] for b in BAD_READS])
def test_bad_config_is_named(config, exc, pattern):
    with pytest.raises(exc, match=pattern):
        from_hf_config(config)


def test_dynamic_ntk_starts_from_max_position_embeddings_as_transformers():
    """transformers 5's dynamic NTK rescales from config.max_position_embeddings; an
    original_max_position_embeddings in the rope dict is not read (transformers warns of an unrecognised key)."""
    config = {**LLAMA, "max_position_embeddings": 1024,
              "rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4,
                                  "original_max_position_embeddings": 256}}
    read = from_hf_config(config)
    assert read.layer(0).scaling["original_max_position_embeddings"] == 1024
    assert any("not read by transformers' dynamic NTK" in note for note in read.notes)


def test_dynamic_ntk_past_the_length_turns_like_transformers():
    """Past max_position_embeddings, transformers' dynamic_rope_update recomputes the frequencies for the call's
    length max(position_ids) + 1; the reader's layer does the same (the sweep's positions stay below the length)."""
    from transformers.models.llama import configuration_llama, modeling_llama
    config = configuration_llama.LlamaConfig(hidden_size=64, num_attention_heads=2, num_hidden_layers=1,
                                             max_position_embeddings=64,
                                             rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4})
    rotary = modeling_llama.LlamaRotaryEmbedding(config)
    positions = torch.arange(200)[None]
    q = torch.randn(1, 2, 200, 32, generator=torch.Generator().manual_seed(3))
    cos, sin = rotary(q, positions)
    expected, _ = modeling_llama.apply_rotary_pos_emb(q, q, cos, sin)
    layer = from_hf_config(config_json(config)).layer(0)
    torch.testing.assert_close(layer.apply(q, positions), expected, rtol=0, atol=1e-4)
    plain = from_hf_config({**config_json(config), "rope_parameters": {"rope_theta": 1e4}}).layer(0)
    assert (layer.apply(q, positions) - plain.apply(q, positions)).abs().max() > 0.1  # the rescaling is visible


def test_mistral4_reads_mla_with_the_same_query_scaling():
    """Mistral 4: DeepSeek's MLA (RoPE on the last qk_rope_head_dim = int(head_dim 128 x partial 0.5) = 64 dims,
    interleaved pairs) and Ministral 3's query scaling, by the same function in both modeling files."""
    from transformers.models.mistral4 import configuration_mistral4, modeling_mistral4
    assert inspect.getsource(modeling_mistral4.get_llama_4_attn_scale) == inspect.getsource(
        hf_ministral3.get_llama_4_attn_scale)
    layer = from_hf_config(config_json(configuration_mistral4.Mistral4Config())).layer(0)
    assert layer.rotary_dims == (64, 128) and layer.layout == "interleaved" and layer.rope_type == "yarn"
    assert layer.temperature == {"floor_scale": 8192.0, "attn_scale": 0.1, "offset": 0}


# ------------------------------------------------------------------ what a config class does with a published config
YARN_L0 = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512, "truncate": False}


def hf_text_config(config: dict):
    fields = dict(config)
    return AutoConfig.for_model(fields.pop("model_type"), **fields).get_text_config()


def _hf_frequencies(text, layer_type: str) -> torch.Tensor:
    """inv_freq of transformers' own rope function for one layer type's rope parameters, float64."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    params = text.rope_parameters[layer_type]
    if params["rope_type"] == "default":
        dim = text.head_dim
        return 1.0 / params["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    inv_freq, _ = ROPE_INIT_FUNCTIONS[params["rope_type"]](text, "cpu", layer_type=layer_type)
    return inv_freq.double()


@pytest.mark.parametrize("model_type", ["olmo3", "gemma3_text"])
def test_legacy_rope_scaling_goes_to_the_full_attention_layers_only_as_the_config_class_puts_it(model_type):
    """OLMo 3 and Gemma 3 convert a legacy rope_scaling into rope_parameters['full_attention'] only; the sliding
    layers keep plain RoPE, at rope_local_base_freq (Gemma 3) or at the class's default base whatever rope_theta
    says (OLMo 3: 500000). YaRN's truncate, now inside a layer type's dict, is not read (truncate stays true)."""
    config = {**LLAMA, "model_type": model_type, "head_dim": 32, "num_hidden_layers": 4, "sliding_window": 64,
              "max_position_embeddings": 4096, "rope_theta": 1e5, "rope_scaling": YARN_L0,
              "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    read, text = from_hf_config(config), hf_text_config(config)
    assert text.rope_parameters["sliding_attention"]["rope_type"] == "default"
    for layer in (read.layer(0), read.layer(3)):
        assert layer.rope_type == text.rope_parameters[layer.layer_type]["rope_type"]
        assert layer.base == text.rope_parameters[layer.layer_type]["rope_theta"]
        torch.testing.assert_close(layer.inv_freq, _hf_frequencies(text, layer.layer_type), rtol=1e-6, atol=0)
    assert read.layer(0).rope_type == "default" and read.layer(3).rope_type == "yarn"
    assert any("truncate" in note and "not read" in note for note in read.notes)
    kept = from_hf_config({**config, "rope_scaling": {k: v for k, v in YARN_L0.items() if k != "truncate"}})
    torch.testing.assert_close(read.layer(3).inv_freq, kept.layer(3).inv_freq, rtol=0, atol=0)
    if model_type == "olmo3":
        assert read.layer(0).base == 500000.0 != config["rope_theta"]


@pytest.mark.parametrize("model_type", ["starcoder2", "mixtral", "olmoe"])
def test_one_sliding_window_for_every_layer(model_type):
    """These families hand config.sliding_window to every layer's attention: every layer slides."""
    config = {**LLAMA, "model_type": model_type, "sliding_window": 96}
    read = from_hf_config(config)
    assert [(layer.attention, layer.window) for layer in read.layers] == [("sliding", 96)] * 2
    assert from_hf_config({**config, "sliding_window": None}).layer(0).window is None


@pytest.mark.parametrize("model_type,config", [
    ("gpt_bigcode", {"n_embd": 64, "n_head": 2, "n_layer": 2, "n_positions": 8192}),
    ("opt", {"hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2, "max_position_embeddings": 2048}),
])
def test_learned_absolute_families_are_reported_as_such(model_type, config):
    """StarCoder (GPT-BigCode) and OPT add a learned table of positions to the input; their attention has none."""
    module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    assert "RotaryEmbedding(nn.Module)" not in Path(module.__file__).read_text(encoding="utf-8")
    read = from_hf_config({"model_type": model_type, **config})
    assert read.position_encoding == "learned absolute" and read.rope_layers == []


def test_class_defaults_fill_what_a_multimodal_config_leaves_out():
    """Gemma 3's and LLaVA's published configs leave the text model's head count (and more) to the config class:
    read as transformers fills them in, and marked as defaults in the report."""
    gemma = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "hidden_size": 2560,
                                                     "num_hidden_layers": 34, "sliding_window": 1024,
                                                     "rope_scaling": {"rope_type": "linear", "factor": 8.0}}}
    llava = {"model_type": "llava", "text_config": {"model_type": "llama", "max_position_embeddings": 4096}}
    for config in (gemma, llava):
        read, text = from_hf_config(config), hf_text_config(config)
        assert read.num_layers == text.num_hidden_layers and read.layer(0).head_dim == text.head_dim
        assert "num_attention_heads" in read.defaults_used and "defaults" in read.table()


def test_short_convolution_layers_have_no_positions():
    """LFM2's 'conv' layers mix tokens by a short convolution: no q and k, named by their kind."""
    read = from_hf_config({**LLAMA, "model_type": "lfm2", "num_hidden_layers": 3,
                           "layer_types": ["conv", "full_attention", "conv"]})
    assert read.rope_layers == [1] and read.layer(0).mixer == "convolution"
    assert "short convolution" in read.table()


# ------------------------------------------------------------------ pasted text
def test_pasted_text_that_is_not_json_is_one_line():
    from posenc_lib.configs import read_pasted
    assert read_pasted('{"model_type": "llama"}') == {"model_type": "llama"}
    with pytest.raises(ValueError, match=r"not JSON: .* at line 1, column 24") as info:
        read_pasted('{"model_type": "llama",}')
    assert "\n" not in str(info.value) and info.value.__cause__ is None
    with pytest.raises(TypeError, match=r"must be an object"):
        read_pasted("[1, 2]")


@pytest.mark.parametrize("extra, expected", [({}, (0, 32)), ({"partial_rotary_factor": 0.25}, (0, 16)),
                                             ({"rotary_dim": None}, (0, 64))])
def test_minimax_m2_reads_its_legacy_rotary_dim_as_its_config_class(extra, expected):
    """MiniMax-M2's checkpoints state partial RoPE as rotary_dim (dims); MiniMaxM2Config divides it by head_dim
    into partial_rotary_factor unless a factor is given; the reader turns the dims transformers' config says."""
    from transformers.models.minimax_m2 import configuration_minimax_m2 as cfg
    config = {"model_type": "minimax_m2", "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 2,
              "head_dim": 64, "rotary_dim": 32, "rope_theta": 5000000.0, **extra}
    hf = cfg.MiniMaxM2Config(**{k: v for k, v in config.items() if k != "model_type"})
    turned = int(64 * hf.rope_parameters.get("partial_rotary_factor", 1.0))
    assert from_hf_config(config).layer(0).rotary_dims == expected == (0, turned)


def test_minimax_m2_rotary_dim_without_a_head_dim_is_refused_by_name():
    config = {"model_type": "minimax_m2", "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 2,
              "head_dim": None, "rotary_dim": 32}
    with pytest.raises(ValueError, match=r"config\['rotary_dim'\] = 32 is divided by config\['head_dim'\]"):
        from_hf_config(config)


@pytest.mark.parametrize("model_type", ["hunyuan_vl_text", "hunyuan_v1_dense"])
def test_hunyuan_dynamic_with_alpha_is_its_fixed_ntk_alpha(model_type):
    """HunYuan's rotary embedding turns a 'dynamic' dict with alpha into ntk_alpha (fixed frequencies at base
    rope_theta * alpha ** (d / (d - 2))); HunYuan-VL's config class reads the legacy type 'xdrope' as 'dynamic' and
    xdrope_section as mrope_section. The reader's frequencies are the code's."""
    module = importlib.import_module(f"transformers.models.{model_type.removesuffix('_text')}."
                                     f"modeling_{model_type.removesuffix('_text')}")
    rotary = next(getattr(module, n) for n in dir(module) if n.endswith("RotaryEmbedding") and "Vision" not in n)
    scaling = {"type": "dynamic", "alpha": 1000.0, "factor": 1.0, "beta_fast": 32}
    if model_type == "hunyuan_vl_text":
        scaling = {**scaling, "type": "xdrope", "xdrope_section": [8, 8, 8, 8]}
    config = {"model_type": model_type, "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 1,
              "head_dim": 64, "rope_theta": 10000.0, "rope_scaling": scaling}
    layer = from_hf_config(config).layer(0)
    hf = transformers.CONFIG_MAPPING[model_type](**{k: v for k, v in config.items() if k != "model_type"})
    torch.testing.assert_close(layer.inv_freq.float(), rotary(hf).inv_freq, rtol=1e-5, atol=0)
    assert (layer.rope_type, layer.rotary_dims, layer.layout) == ("ntk", (0, 64), "half")
    if model_type == "hunyuan_vl_text":
        assert layer.mrope_section == (8, 8, 8, 8)
        with pytest.raises(ValueError, match="XD-RoPE"):
            layer.apply(torch.randn(1, 3, 64), torch.zeros(4, 1, 3, dtype=torch.long))


def test_qwen3_omni_talker_code_predictor_turns_plain_rope_and_reads_its_layer_types():
    """Its rotary embedding reads no mrope_section (plain cat(freqs, freqs)); its config class makes layers sliding
    from sliding_window alone, so without layer_types the reader refuses by name rather than guess the pattern."""
    config = {"model_type": "qwen3_omni_moe_talker_code_predictor", "hidden_size": 64, "num_attention_heads": 2,
              "num_hidden_layers": 2, "head_dim": 32, "layer_types": ["full_attention"] * 2,
              "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [6, 5, 5]}}
    read = from_hf_config(config)
    assert read.mrope_section is None and read.layer(0).rotary_dims == (0, 32)
    with pytest.raises(ValueError, match=r"config\['layer_types'\] is missing"):
        from_hf_config({k: v for k, v in config.items() if k != "layer_types"})


def test_hunyuan_turns_the_whole_head_whatever_partial_rotary_factor_says():
    """HunYuan's compute_default_rope_parameters sizes its frequencies by head_dim alone; a partial_rotary_factor in
    the config changes nothing there, and the reader states the whole head, as the code turns it."""
    from transformers.models.hunyuan_v1_dense import modeling_hunyuan_v1_dense as hf
    config = {"model_type": "hunyuan_v1_dense", "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 1,
              "head_dim": 64, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                  "partial_rotary_factor": 0.5}}
    hf_config = transformers.CONFIG_MAPPING["hunyuan_v1_dense"](**{k: v for k, v in config.items()
                                                                  if k != "model_type"})
    layer = from_hf_config(config).layer(0)
    assert layer.rotary_dims == (0, 64) and hf.HunYuanDenseV1RotaryEmbedding(hf_config).inv_freq.numel() == 32
