"""posenc_lib.configs.from_hf_config against transformers itself, for every entry of data/model_configs.json
and for synthetic configs that exercise the other paths (new-format rope_parameters, family defaults,
sliding windows by rule, NoPE patterns, legacy rope type names).

For each config, transformers builds its own config object from the same fields (AutoConfig.for_model),
then: its model's rotary-embedding module, called at positions 0 and 1, gives the frequencies and the
attention factor per layer type (read from the cos/sin it returns, never from its buffers); its
attention module (built on the meta device: no weights) gives the score scale, the sliding window and
whether the layer uses RoPE; its own apply function rotates random q and k, which the layer's
`apply` must reproduce. HF computes frequencies in float32, posenc_lib in float64: they agree to a
few float32 ulps, as in test_scaling.py.
"""
import copy
import importlib
import inspect
import json
import math

import pytest
import torch
from transformers import AutoConfig
from transformers import masking_utils as hf_masks
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS as HF_ROPE_INIT

from conftest import float32_ulp, measured_rope_frequencies
from posenc_lib import from_hf_config
from posenc_lib.configs import (FAMILIES, FAMILY_DEFAULTS, REGISTRY, LayerPositions, ModelPositions,
                                attention_temperature)
from posenc_lib.experiments.results import load_model_configs

MODELS = load_model_configs()
# Entries configs.measure cannot run (checked against transformers by check_against_hf, or not at all).
NOT_MEASURED = {
    "Kimi K2 Instruct 0905": "transformers 5.24 has no kimi_k2 model_type (read below as deepseek_v3)",
}
READ = MODELS  # every entry is read (test_every_entry_is_read_with_a_family_record)
ATTENTION_CLASS = {  # model_type -> (modeling module, attention class)
    "llama": ("llama", "LlamaAttention"), "mistral": ("mistral", "MistralAttention"),
    "qwen2": ("qwen2", "Qwen2Attention"), "qwen3": ("qwen3", "Qwen3Attention"), "qwen2_5_vl": ("qwen2_5_vl", "Qwen2_5_VLAttention"),
    "gemma2": ("gemma2", "Gemma2Attention"), "gemma3": ("gemma3", "Gemma3Attention"),
    "gemma3_text": ("gemma3", "Gemma3Attention"), "phi3": ("phi3", "Phi3Attention"), "phi": ("phi", "PhiAttention"),
    "llama4": ("llama4", "Llama4TextAttention"), "llama4_text": ("llama4", "Llama4TextAttention"),
    "smollm3": ("smollm3", "SmolLM3Attention"), "deepseek_v3": ("deepseek_v3", "DeepseekV3Attention"),
    "gpt_neox": ("gpt_neox", "GPTNeoXAttention"), "gptj": ("gptj", "GPTJAttention"),
}


def hf_config(config: dict):
    """transformers' text config built from the same fields. Llama 4 Scout's file says
    attn_temperature_tuning: 4, which transformers 5's strict config refuses; it is passed as bool(4)."""
    config = copy.deepcopy(config)
    model_type = config.pop("model_type")
    for part in (config, config.get("text_config") or {}):
        if isinstance(part.get("attn_temperature_tuning"), (int, float)):
            part["attn_temperature_tuning"] = bool(part["attn_temperature_tuning"])
    return AutoConfig.for_model(model_type, **config).get_text_config()


def modeling(model_type):
    return importlib.import_module(f"transformers.models.{ATTENTION_CLASS[model_type][0]}."
                                   f"modeling_{ATTENTION_CLASS[model_type][0]}")


def hf_rotary(model_type, text):
    """The model's text rotary-embedding module (GPT-J's returns (sin, cos) from a table; the measurement
    below tells the two apart)."""
    module = modeling(model_type)
    names = [n for n in dir(module) if n.endswith("RotaryEmbedding") and "Vision" not in n]
    return getattr(module, names[0])(text) if names else None


def hf_frequencies(rotary, layer, longest=None):
    """(inv_freq, attention factor) that HF's rotary module computes for this layer's type (Gemma 3's
    forward takes the layer type), measured from its output."""
    kwargs = {"layer_type": layer.layer_type} if "layer_type" in inspect.signature(rotary.forward).parameters else {}
    return measured_rope_frequencies(rotary, layer.head_dim, longest=longest, **kwargs)


def hf_attention(model_type, text, index):
    with torch.device("meta"):
        return getattr(modeling(model_type), ATTENTION_CLASS[model_type][1])(text, index)


def assert_close_to_hf(ours: torch.Tensor, hf: torch.Tensor, base: float, amplification: float = 1.0):
    """HF's float32 frequencies lie within (3 + ln(base)) float32 ulps of ours (see test_scaling.py)."""
    assert hf.shape == ours.shape, (hf.shape, ours.shape)
    ulps = (hf.double() - ours).abs() / float32_ulp(ours)
    assert ulps.max() <= (3 + math.log(base)) * amplification, f"{ulps.max().item():.1f} float32 ulps apart"


def check_against_hf(config: dict) -> ModelPositions:
    """Every per-layer fact from_hf_config reports, against transformers' objects for the same fields."""
    ours, text = from_hf_config(config), hf_config(config)
    model_type = config["model_type"]
    assert ours.num_layers == len(ours.layers) == text.num_hidden_layers
    assert ours.max_position_embeddings == text.max_position_embeddings
    if model_type == "bert":  # a learned table of max_position_embeddings rows; nothing in attention
        from transformers.models.bert import modeling_bert
        with torch.device("meta"):
            embeddings, attention = modeling_bert.BertEmbeddings(text), modeling_bert.BertSelfAttention(text)
        assert embeddings.position_embeddings.num_embeddings == ours.max_position_embeddings
        assert ours.position_encoding == "learned absolute" and ours.rope_layers == []
        assert {layer.score_scale for layer in ours.layers} == {attention.scaling}
        assert not attention.is_causal and not any(layer.causal for layer in ours.layers)
        return ours
    if model_type == "gpt2":
        from transformers.models.gpt2 import modeling_gpt2
        with torch.device("meta"):
            model = modeling_gpt2.GPT2Model(text)
        assert model.wpe.num_embeddings == ours.max_position_embeddings and ours.rope_layers == []
        assert all(layer.causal and layer.attention == "full" for layer in ours.layers)
        return ours
    rotary = hf_rotary(model_type, text)
    for layer in ours.layers:
        attention = hf_attention(model_type, text, layer.index)
        assert layer.rope == bool(getattr(attention, "use_rope", True)), layer.index
        hf_window = getattr(attention, "sliding_window", None)
        if hf_window is None and model_type in ("mistral", "phi3"):  # one window for all layers, in the mask
            hf_window = text.sliding_window
        hf_type = (getattr(text, "layer_types", None) or  # Mistral, Phi-3: no layer_types, a window or none
                   ["full_attention" if hf_window is None else "sliding_attention"] * ours.num_layers)[layer.index]
        assert layer.layer_type == hf_type
        if layer.attention == "chunked":
            assert hf_type == "chunked_attention" and layer.window == text.attention_chunk_size
        else:
            assert layer.window == hf_window and layer.attention == ("full" if hf_window is None else "sliding")
        scale = getattr(attention, "scaling", None) or 1 / attention.scale_attn  # GPT-J divides by sqrt(d)
        assert layer.score_scale == pytest.approx(float(scale), rel=1e-12)
        tuned = bool(getattr(attention, "attn_temperature_tuning", False)) and not layer.rope
        assert (layer.temperature is not None) == tuned
        if tuned:
            assert layer.temperature == {"floor_scale": attention.floor_scale, "attn_scale": attention.attn_scale}
        if not layer.rope:
            assert layer.inv_freq is None and layer.rotary_dim == 0
            continue
        hf_inv, hf_factor = hf_frequencies(rotary, layer)
        amplification = layer.scaling["factor"] if layer.rope_type == "llama3" else 1.0
        assert_close_to_hf(layer.inv_freq, hf_inv, layer.base, amplification)
        # measured from HF's float32 cos/sin: a few float32 ulps, far below any formula's difference
        assert layer.attention_factor == pytest.approx(hf_factor, rel=1e-6)
    return ours


KNOWN = [m for m in READ  # the families check_against_hf knows (its text model's type)
         if (m["config"].get("text_config") or m["config"])["model_type"] in {*ATTENTION_CLASS, "bert", "gpt2"}]


@pytest.mark.parametrize("entry", KNOWN, ids=[m["name"] for m in KNOWN])
def test_every_entry_matches_transformers(entry):
    ours = check_against_hf(entry["config"])
    assert ours.model_type == (entry["config"].get("text_config") or entry["config"])["model_type"]


def test_the_file_has_the_models_the_course_needs_with_their_sources():
    names = {m["name"] for m in MODELS}
    assert len(MODELS) >= 30 and len(names) == len(MODELS)
    for needed in ("Llama 2", "Llama 3.1", "Llama 4", "Mistral", "Qwen2.5 7B", "Qwen2.5-VL", "Gemma 3", "Phi-3",
                   "DeepSeek-V3", "GPT-NeoX", "SmolLM3", "BERT", "GLM-4", "Command R7B", "EXAONE 4", "Qwen3-Next",
                   "gpt-oss", "Gemma 4", "MiniMax", "Kimi K2", "DeepSeek-V3.2", "Phi-4-mini", "Ministral 3"):
        assert any(name.startswith(needed) for name in names), needed
    for m in MODELS:
        assert set(m) == {"name", "repo", "source", "unverified", "config"}, m["name"]
        assert m["source"] and m["unverified"] and "/" in m["repo"], m["name"]
    assert set(NOT_MEASURED) <= names  # the list names real entries


# ------------------------------------------------------------------ every entry: read and measured
@pytest.mark.parametrize("entry", MODELS, ids=[m["name"] for m in MODELS])
def test_every_entry_is_read_with_a_family_record(entry):
    """No entry is refused, and none is read with the generic rules (which leave the layout, the rotated layers
    and more unknown): each model_type has a family record. A new entry that breaks this either needs a record
    (families.py, measured by the sweep) or belongs elsewhere."""
    positions = from_hf_config(entry["config"])
    assert positions.family != "generic" and not positions.unknown, (positions.family, positions.unknown)
    assert all(positions.layer(i).layout in ("half", "interleaved") for i in positions.rope_layers)


def first_layers(config: dict, count: int) -> dict:
    """The same config cut to its first `count` layers (the per-layer lists cut too), so that transformers can run
    it at measure's tiny size. Llama 4 Scout's attn_temperature_tuning: 4 goes in as true (see hf_config)."""
    config = copy.deepcopy(config)
    text = config.get("text_config") or config
    text["n_layer" if "n_layer" in text else "num_hidden_layers"] = count
    for key in ("layer_types", "no_rope_layers", "mlp_layer_types"):
        if isinstance(text.get(key), list):
            text[key] = text[key][:count]
    if isinstance(text.get("attn_temperature_tuning"), (int, float)):
        text["attn_temperature_tuning"] = bool(text["attn_temperature_tuning"])
    return config


def layer_facts(layer) -> tuple:
    return (layer.rope, layer.rotary_dims, layer.layout, layer.direction, layer.base, layer.rope_type,
            layer.attention, layer.window, layer.layer_type)


MEASURED = [m for m in READ if m["name"] not in NOT_MEASURED and from_hf_config(m["config"]).rope_layers]


@pytest.mark.parametrize("entry", MEASURED, ids=[m["name"] for m in MEASURED])
def test_every_read_entry_matches_what_its_familys_code_does(entry):
    """Each entry the reader accepts, against transformers' own code (configs.measure, through the sweep's check:
    which layers turn q and k, the dims, the layout, the direction and the q.q, k.k scores). The model is cut to
    the shortest prefix of layers that holds every kind of layer the full model has; the reader must say the same
    of those layers in the cut config as in the full one. Real head sizes (256 for Gemma) leave more parameters
    than the sweep's tiny defaults: measure may build up to 20M here."""
    from test_configs_sweep import check
    full = from_hf_config(entry["config"])
    count = max(indices[0] for _, indices in full.kinds()) + 1
    cut = first_layers(entry["config"], count)
    for a, b in zip(full.layers[:count], from_hf_config(cut).layers):
        assert layer_facts(a) == layer_facts(b), a.index
        if a.rope:
            torch.testing.assert_close(a.inv_freq, b.inv_freq, atol=0, rtol=0)
    assert check(cut, max_params=20_000_000) == {"to_dict": ("matched", "")}


def test_kimi_k2_read_as_deepseek_v3_matches_transformers():
    """Moonshot's deployment guide: Kimi K2 is DeepSeek-V3's architecture under model_type kimi_k2, and engines
    that do not know the name run it as deepseek_v3. Read that way, the reader states DeepSeek's interleaved
    decoupled RoPE, and transformers' DeepSeek-V3 code agrees (layers cut as above)."""
    from test_configs_sweep import check
    config = {**next(m for m in MODELS if m["name"].startswith("Kimi K2"))["config"], "model_type": "deepseek_v3"}
    layer = from_hf_config(config).layer(0)
    assert (layer.rotary_dims, layer.layout) == ((128, 192), "interleaved")
    assert check(first_layers(config, 1)) == {"to_dict": ("matched", "")}


# ------------------------------------------------------------------ what the entries show (facts notebook 10 uses)
def _by_name(prefix):
    return from_hf_config(next(m for m in MODELS if m["name"].startswith(prefix))["config"])


def test_per_layer_facts_of_the_newer_entries():
    """What notebook 10 says of the entries added for issue 23 (their dims and layouts are also measured above)."""
    from posenc_lib.scaling import yarn_attention_factor
    oss = _by_name("gpt-oss-20b")
    assert [(oss.layer(i).attention, oss.layer(i).window) for i in (0, 1)] == [("sliding", 128), ("full", None)]
    assert {oss.layer(i).rope_type for i in range(24)} == {"yarn"} and oss.layer(0).base == 150000
    assert oss.layer(1).attention_factor == pytest.approx(float(yarn_attention_factor(32.0)))
    nxt = _by_name("Qwen3-Next")
    assert nxt.rope_layers == list(range(3, 48, 4)) and nxt.layer(3).rotary_dims == (0, 64)
    assert {nxt.layer(i).mixer for i in range(48) if i % 4 != 3} == {"linear attention"}
    minimax = _by_name("MiniMax")
    assert minimax.rope_layers == list(range(7, 80, 8)) and minimax.layer(0).mixer == "linear attention"
    r7b = _by_name("Command R7B")
    assert r7b.nope_layers == list(range(3, 32, 4)) and r7b.layer(0).layout == "interleaved"
    assert {r7b.layer(i).attention for i in r7b.rope_layers} == {"sliding"}
    glm = _by_name("GLM-4").layer(0)
    assert (glm.rotary_dims, glm.head_dim, glm.layout) == ((0, 64), 128, "interleaved")
    phi4 = _by_name("Phi-4-mini")
    assert (phi4.layer(0).rotary_dims, phi4.layer(0).rope_type) == ((0, 96), "longrope")
    assert phi4.layer(0).window > phi4.max_position_embeddings


def test_per_layer_facts_of_the_entries():
    gemma = _by_name("Gemma 3")
    assert [layer.base for layer in gemma.layers[:6]] == [1e4] * 5 + [1e6]
    assert gemma.layer(5).rope_type == "linear" and gemma.layer(0).rope_type == "default"
    assert gemma.layer(0).attention == "sliding" and gemma.layer(0).window == 1024
    scout = _by_name("Llama 4")
    assert scout.nope_layers == list(range(3, 48, 4))
    assert {scout.layer(i).attention for i in scout.rope_layers} == {"chunked"}
    assert scout.layer(3).attention == "full" and scout.layer(3).temperature is not None
    assert scout.layer(0).layout == "interleaved"
    assert _by_name("SmolLM3").nope_layers == list(range(3, 36, 4))
    deepseek = _by_name("DeepSeek")
    assert deepseek.layer(0).rotary_dims == (128, 192) and deepseek.layer(0).layout == "interleaved"
    assert _by_name("GPT-NeoX").layer(0).rotary_dims == (0, 24)
    assert _by_name("GPT-J").layer(0).rotary_dims == (0, 64) and _by_name("GPT-J").layer(0).layout == "interleaved"
    phi3 = _by_name("Phi-3").layer(0)
    assert phi3.rope_type == "longrope" and phi3.attention_factor == pytest.approx(
        math.sqrt(1 + math.log(32) / math.log(4096)))
    assert _by_name("Qwen2.5-VL").mrope_section == (16, 24, 24)
    bert = _by_name("BERT")
    assert bert.position_encoding == "learned absolute" and bert.rope_layers == []
    assert not bert.layer(0).causal and bool(bert.layer(0).visible_keys(5).all())


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


# ------------------------------------------------------------------ other paths of the reader, against HF too
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


SAVED = [m for m in READ if m["config"]["model_type"] != "kimi_k2"]  # transformers cannot build kimi_k2


@pytest.mark.parametrize("entry", SAVED, ids=[m["name"] for m in SAVED])
def test_transformers_own_saved_form_reads_the_same(entry):
    """transformers 5 writes rope_parameters (and its other keys) back; reading that gives the same layers."""
    config = entry["config"]
    saved = json.loads(json.dumps(hf_config(config).to_dict()))
    saved.pop("rope_scaling", None)  # 5.x writes rope_parameters only
    a, b = from_hf_config(config), from_hf_config(saved)
    assert a.num_layers == b.num_layers
    for x, y in zip(a.layers, b.layers):
        assert (x.rope, x.rotary_dims, x.layout, x.base, x.rope_type, x.attention, x.window, x.causal) == (
            y.rope, y.rotary_dims, y.layout, y.base, y.rope_type, y.attention, y.window, y.causal), x.index
        assert x.attention_factor == pytest.approx(y.attention_factor, rel=1e-12)
        if x.rope:
            torch.testing.assert_close(x.inv_freq, y.inv_freq, atol=0, rtol=1e-12)


FAMILY_CLASS = {"llama": "LlamaConfig", "mistral": "MistralConfig", "qwen2": "Qwen2Config", "qwen3": "Qwen3Config",
                "qwen2_5_vl": "Qwen2_5_VLTextConfig", "phi": "PhiConfig", "phi3": "Phi3Config",
                "gemma2": "Gemma2Config", "gemma3_text": "Gemma3TextConfig", "llama4_text": "Llama4TextConfig",
                "smollm3": "SmolLM3Config", "deepseek_v3": "DeepseekV3Config", "gpt_neox": "GPTNeoXConfig",
                "gptj": "GPTJConfig", "absolute": "BertConfig", "gpt2": "GPT2Config"}


@pytest.mark.parametrize("family", FAMILY_CLASS)
def test_family_defaults_are_transformers_defaults(family):
    import transformers
    cls = getattr(transformers, FAMILY_CLASS[family])
    hf = {"rope_theta": cls.default_theta, "rope_local_base_freq": None, "rotary_emb_base": cls.default_theta,
          "rotary_pct": 0.25 if family == "gpt_neox" else None}
    if isinstance(cls.default_theta, dict):  # Gemma 3: {"global": 1e6, "local": 1e4}
        hf["rope_theta"], hf["rope_local_base_freq"] = cls.default_theta["global"], cls.default_theta["local"]
    instance = cls()
    for key, value in FAMILY_DEFAULTS[family].items():
        if key == "sliding_window_pattern":
            types = instance.layer_types  # what the pattern does: every value-th layer is full, the rest slide
            assert types == ["full_attention" if (i + 1) % value == 0 else "sliding_attention"
                             for i in range(len(types))]
        elif key == "partial_rotary_factor":
            assert instance.rope_parameters["partial_rotary_factor"] == value
        elif key == "rotary_pct":
            assert instance.rope_parameters["partial_rotary_factor"] == value
        elif key in hf and hf[key] is not None:
            assert hf[key] == value, key
        else:
            assert getattr(cls, key) == value, key


def _class_default(text_cls, key):
    """A config class's default for a key the reader reads: rope keys from a default instance's rope_parameters
    (its full-attention entry when per layer type), the others from the class's field (before __post_init__: Qwen2
    keeps its 4096 window there, and transformers takes it when use_sliding_window is set)."""
    instance = text_cls()
    params = getattr(instance, "rope_parameters", None) or {}
    nested = bool(params) and all(isinstance(v, dict) for v in params.values())
    full = params.get("full_attention", {}) if nested else params
    if key in ("rope_theta", "rotary_emb_base"):
        return full.get("rope_theta")
    if key in ("partial_rotary_factor", "rotary_pct"):
        return full.get("partial_rotary_factor", 1.0)
    if key == "rope_local_base_freq":
        return params["sliding_attention"]["rope_theta"]
    named = getattr(text_cls, "attribute_map", {})
    value = getattr(text_cls, named.get(key, key))
    return list(value) if isinstance(value, tuple) else value


RECORDED = sorted({(family.name, model_type) for family in REGISTRY for model_type in family.model_types
                   if family.defaults and model_type in CONFIG_MAPPING})


@pytest.mark.parametrize("family,model_type", RECORDED)
def test_every_record_holds_its_config_class_defaults(family, model_type):
    """What a published config leaves out, transformers fills in from the config class: every family record's
    defaults (each model_type it covers) are that class's."""
    text_cls = type(CONFIG_MAPPING[model_type]().get_text_config())
    for key, value in FAMILIES[model_type].defaults.items():
        if key == "sliding_window_pattern":  # a rule, checked above (test_family_defaults_are_transformers_defaults)
            continue
        assert _class_default(text_cls, key) == value, (model_type, key)


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


def test_attention_temperature_is_what_llama4_multiplies_its_nope_queries_by(monkeypatch):
    """Capture the query states Llama4TextAttention hands to its attention function on a NoPE layer."""
    from transformers import Llama4TextConfig
    from transformers.models.llama4 import modeling_llama4 as hf
    torch.manual_seed(0)
    config = Llama4TextConfig(hidden_size=32, num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                              num_hidden_layers=4, floor_scale=4, attn_scale=0.3, intermediate_size=8,
                              intermediate_size_mlp=8, attn_implementation="eager")
    attention = hf.Llama4TextAttention(config, 3)  # layer 3: NoPE by the default pattern
    assert not attention.use_rope
    seen = {}

    def capture(module, query, key, value, mask, **kwargs):
        seen["q"] = query
        return torch.zeros(query.shape[0], query.shape[2], query.shape[1], query.shape[3]), None
    monkeypatch.setattr(hf, "eager_attention_forward", capture)
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
    layer = _by_name("Phi-3").layer(0)
    x = torch.randn(2, 3, 5, layer.head_dim, device=device)
    out = layer.apply(x, torch.arange(5, device=device))
    assert out.device.type == device.type and out.shape == x.shape and out.dtype == x.dtype
    inv, _ = layer.frequencies(device=device)
    assert inv.device.type == device.type
    assert attention_temperature(torch.arange(3, device=device)).device.type == device.type
    assert layer.visible_keys(4, device=device).device.type == device.type


def test_report_and_helpers():
    gemma = _by_name("Gemma 3")
    rows = gemma.rows()
    assert [r["count"] for r in rows] == [29, 5] and rows[1]["base"] == 1e6 and rows[0]["attention"] == "sliding 1024"
    assert rows[1]["longest_wavelength"] == pytest.approx(2 * math.pi * 8 * 1e6 ** (254 / 256), rel=1e-12)
    text = gemma.table()
    assert "sliding 1024" in text and "linear" in text and str(gemma) == text
    assert "every 4" in _by_name("SmolLM3").table()
    assert gemma.layer(-1).index == 33
    torch.testing.assert_close(gemma.layer(5).wavelengths, 2 * math.pi / gemma.layer(5).inv_freq)
    assert gemma.layer(0).describe().startswith("layer 0: RoPE half")
    nope = _by_name("Llama 4").layer(3)
    assert "NoPE" in nope.describe() and "temperature" in nope.describe()
    assert torch.equal(nope.apply(torch.ones(1, 2, 128)), torch.ones(1, 2, 128))
    with pytest.raises(ValueError, match=r"layer 3 has no RoPE"):
        nope.frequencies()


# ------------------------------------------------------------------ bad configs: errors naming the key
LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2}
BAD = [
    ("not a dict", "config", TypeError, r"config must be a dict"),
    ("text_config not a dict", {"model_type": "gemma3", "text_config": [1]}, TypeError,
     r"config\['text_config'\] must be a dict"),
    ("unknown rope_type", {**LLAMA, "rope_scaling": {"rope_type": "su", "factor": 2.0}}, ValueError,
     r"config\['rope_scaling'\]: scaling\['rope_type'\] must be one of .*got 'su'"),
    ("unknown key in rope_parameters", {**LLAMA, "rope_parameters": {"rope_type": "linear", "factr": 2.0}},
     ValueError, r"config\['rope_parameters'\]: .*unknown keys \['factr'\]"),
    ("rope_scaling a list", {**LLAMA, "rope_scaling": [2.0]}, TypeError, r"config\['rope_scaling'\] must be a dict"),
    ("hidden_size a string", {**LLAMA, "hidden_size": "64"}, TypeError, r"config\['hidden_size'\] must be an int"),
    ("num_hidden_layers missing", {k: v for k, v in {**LLAMA, "model_type": "mistral"}.items()
                                   if k != "num_hidden_layers"}, ValueError,
     r"config\['num_hidden_layers'\] is missing"),
    ("head_dim float", {**LLAMA, "head_dim": 32.0}, TypeError, r"config\['head_dim'\] must be an int"),
    ("rope_theta string", {**LLAMA, "rope_theta": "1e4"}, TypeError, r"config\['rope_theta'\] must be a number"),
    ("partial_rotary_factor too big", {**LLAMA, "partial_rotary_factor": 1.5}, ValueError,
     r"partial_rotary_factor.* must be in \(0, 1\]"),
    ("no_rope_layers entry 2", {**LLAMA, "model_type": "smollm3", "no_rope_layers": [1, 2]}, ValueError,
     r"config\['no_rope_layers'\]\[1\] must be one of \[0, 1\]"),
    ("no_rope_layers a bool entry", {**LLAMA, "model_type": "smollm3", "no_rope_layers": [1, True]}, ValueError,
     r"config\['no_rope_layers'\]\[1\] must be one of \[0, 1\]"),
    ("no_rope_layers a float entry", {**LLAMA, "model_type": "smollm3", "no_rope_layers": [1.0, 1]}, ValueError,
     r"config\['no_rope_layers'\]\[0\] must be one of \[0, 1\]"),
    ("layer_types a list entry", {**LLAMA, "layer_types": ["full_attention", ["full_attention"]]}, ValueError,
     r"config\['layer_types'\]\[1\] must be one of"),
    ("no_rope_layers too short", {**LLAMA, "model_type": "smollm3", "no_rope_layers": [1]}, ValueError,
     r"config\['no_rope_layers'\] must have one entry for each of the 2 layers"),
    ("layer_types unknown", {**LLAMA, "layer_types": ["full_attention", "linear_attn"]}, ValueError,
     r"config\['layer_types'\]\[1\] is 'linear_attn', a layer type this reader does not read"),
    ("layer_types a string", {**LLAMA, "layer_types": "full_attention"}, TypeError,
     r"config\['layer_types'\] must be a list, got str"),
    ("no_rope_layers a dict", {**LLAMA, "model_type": "llama4_text", "head_dim": 32, "no_rope_layers": {"0": 1}},
     TypeError, r"config\['no_rope_layers'\] must be a list"),
    ("gemma3 legacy rope_scaling of unknown type", {**LLAMA, "model_type": "gemma3_text",
                                                    "rope_scaling": {"rope_type": "su", "factor": 8.0}},
     ValueError, r"config\['rope_scaling'\]: scaling\['rope_type'\] must be one of"),
    ("gemma3 wrapper, a text_config key of the wrong type", {"model_type": "gemma3", "text_config": {
        **LLAMA, "model_type": "gemma3_text", "rope_local_base_freq": "1e4"}},
     TypeError, r"config\['text_config'\]\['rope_local_base_freq'\] must be a number"),
    ("longrope factors of the wrong length", {**LLAMA, "model_type": "phi3", "max_position_embeddings": 8192,
                                             "original_max_position_embeddings": 4096,
                                             "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 15,
                                                              "long_factor": [2.0] * 16}},
     ValueError, r"config\['rope_scaling'\]: scaling\['short_factor'\] must have one factor per pair, "
                 r"rotary_dim/2 = 16"),
    ("mrope sections not adding up", {**LLAMA, "model_type": "qwen2_5_vl",
                                      "rope_scaling": {"type": "mrope", "mrope_section": [4, 4, 4]}},
     ValueError, r"\['mrope_section'\] must add up to the number of pairs 16"),
    ("attn_temperature_tuning a string", {**LLAMA, "model_type": "llama4_text", "head_dim": 32,
                                          "attn_temperature_tuning": "yes"},
     TypeError, r"config\['attn_temperature_tuning'\] must be true or false"),
    ("model_type not a string", {**LLAMA, "model_type": 3}, TypeError, r"config\['model_type'\] must be a string"),
    ("gpt-j rotary_dim odd", {"model_type": "gptj", "n_embd": 64, "n_head": 2, "n_layer": 1, "rotary_dim": 7},
     ValueError, r"config\['rotary_dim'\] must be even"),
    ("hidden_size not divisible by the heads", {**LLAMA, "hidden_size": 65}, ValueError,
     r"config\['hidden_size'\] = 65 must be divisible by config\['num_attention_heads'\] = 2"),
    ("n_embd not divisible by n_head (GPT-J's names)", {"model_type": "gptj", "n_embd": 65, "n_head": 2, "n_layer": 1},
     ValueError, r"config\['n_embd'\] = 65 must be divisible by config\['n_head'\] = 2"),
    ("layer_types longer than num_hidden_layers", {**LLAMA, "layer_types": ["full_attention"] * 3}, ValueError,
     r"config\['layer_types'\] must have one entry for each of the 2 layers \(num_hidden_layers\), got 3"),
    ("layer_types shorter than num_hidden_layers", {**LLAMA, "layer_types": ["full_attention"]}, ValueError,
     r"config\['layer_types'\] must have one entry for each of the 2 layers \(num_hidden_layers\), got 1"),
    ("mrope_section of two sections", {**LLAMA, "model_type": "qwen2_5_vl",
                                       "rope_scaling": {"type": "mrope", "mrope_section": [8, 8]}},
     ValueError, r"\['mrope_section'\] must be a list of 3 section sizes"),
    ("mrope_section negative", {**LLAMA, "model_type": "qwen2_5_vl",
                                "rope_scaling": {"type": "mrope", "mrope_section": [20, -2, -2]}},
     ValueError, r"\['mrope_section'\] must hold non-negative integers"),
    ("mrope_section not integers", {**LLAMA, "model_type": "qwen2_5_vl",
                                    "rope_scaling": {"type": "mrope", "mrope_section": [8.0, 4, 4]}},
     ValueError, r"\['mrope_section'\] must hold non-negative integers"),
    ("rotary_pct too big names rotary_pct", {**LLAMA, "model_type": "gpt_neox", "rotary_pct": 2.0}, ValueError,
     r"config\['rotary_pct'\]"),
    ("qk_rope_head_dim missing names it", {**LLAMA, "model_type": "deepseek_v3", "qk_rope_head_dim": None,
                                           "qk_nope_head_dim": 16}, ValueError, r"config\['qk_rope_head_dim'\] is missing"),
    ("n_positions a string names n_positions", {"model_type": "gpt2", "n_embd": 64, "n_head": 2, "n_layer": 1,
                                                "n_positions": "1024"}, TypeError, r"config\['n_positions'\]"),
    ("nested rope_parameters missing a layer type", {**LLAMA, "model_type": "gemma3_text",
                                                     "rope_parameters": {"full_attention": {"rope_type": "default"}}},
     ValueError, r"has no entry for the layer type 'sliding_attention'"),
]


@pytest.mark.parametrize("config,exc,pattern", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config_is_named(config, exc, pattern):
    with pytest.raises(exc, match=pattern):
        from_hf_config(config)


def test_bad_arguments_of_the_report_objects():
    positions = from_hf_config(LLAMA)
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


def test_unknown_model_type_states_no_layout():
    """The layout is in a family's code, not in config.json: without a record it is None, shown as unknown with
    where it would come from, and apply refuses rather than guess."""
    positions = from_hf_config({**LLAMA, "model_type": "my_llama", "rope_theta": 5e5})
    assert positions.family == "generic" and "no family record" in positions.notes[0]
    assert positions.layer(0).base == 5e5 and positions.layer(0).layout is None
    table = positions.table()
    assert "unknown" in table and "modeling_my_llama.py" in table and "configs.measure" in table
    assert " half " not in table and "interleaved" not in table
    with pytest.raises(ValueError, match=r"layout is unknown"):
        positions.layer(0).apply(torch.randn(3, 32))


def test_defaults_are_marked_and_the_scaling_start_is_named_for_what_it_is():
    positions = from_hf_config({"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 2,
                                "num_hidden_layers": 6, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                                         "original_max_position_embeddings": 1024}})
    assert "rope_theta" in positions.defaults_used and "head_dim" in positions.defaults_used
    table = positions.table()
    assert "defaults" in table and "rope_local_base_freq" in table
    assert "the scaling starts from length 1024" in table and "pretrained" not in table


def test_load_model_configs_names_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"model_configs.json is missing"):
        load_model_configs(tmp_path)


# ------------------------------------------------------------------ variants (notebook 09's second table)
VARIANTS = {  # what each model's config.json makes it use, as notebooks 10-11 tell it
    "Llama 2 7B": [],
    "Llama 3.1 8B": ["base > 10k", "llama3"],
    "Llama 4 Scout 17B-16E Instruct": ["base > 10k", "llama3", "NoPE layers", "chunked layers"],
    "Mistral 7B v0.1": ["sliding-window layers"],
    "Qwen2.5-VL 7B Instruct": ["base > 10k", "M-RoPE"],
    "Gemma 3 4B (instruction-tuned)": ["base > 10k", "linear", "local/global bases", "sliding-window layers"],
    "Phi-3 mini 128k instruct": ["longrope"],  # its sliding_window 262144 exceeds its 131072 positions
    "Qwen3-Next 80B-A3B Instruct": ["base > 10k", "partial rotary", "linear attention layers"],
    "MiniMax-Text-01 (HF format)": ["base > 10k", "linear attention layers"],
    "DeepSeek-V3": ["decoupled RoPE", "yarn"],
    "GPT-NeoX-20B": ["partial rotary"],
    "SmolLM3 3B": ["base > 10k", "NoPE layers"],
    "BERT base uncased": ["learned absolute"],
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variants_of_the_shipped_models(name):
    entry = {m["name"]: m for m in MODELS}[name]
    assert from_hf_config(entry["config"]).variants() == VARIANTS[name]


# ------------------------------------------------------------------ pasted text, and the code's own answer
def test_pasted_text_that_is_not_json_is_one_line():
    from posenc_lib.configs import read_pasted
    assert read_pasted('{"model_type": "llama"}') == {"model_type": "llama"}
    with pytest.raises(ValueError, match=r"not JSON: .* at line 1, column 24") as info:
        read_pasted('{"model_type": "llama",}')
    assert "\n" not in str(info.value) and info.value.__cause__ is None
    with pytest.raises(TypeError, match=r"must be an object"):
        read_pasted("[1, 2]")


GLM_LIKE = {"model_type": "glm4", "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "hidden_size": 128, "head_dim": 32, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                                     "partial_rotary_factor": 0.5}}


def test_measure_reads_glms_interleaved_pairs_and_nanochats_direction_from_the_code():
    """configs.measure on transformers' own code: GLM-4 pairs (2i, 2i+1) in the first half of the head (the
    reader's record says so too); a half-split family pairs (i, i + r/2); NanoChat turns the other way."""
    from posenc_lib.configs import measure
    glm = measure(GLM_LIKE).layers[0]
    assert (glm.rope, glm.layout, glm.rotary_dims, glm.direction) == (True, "interleaved", (0, 16), 1)
    torch.testing.assert_close(glm.inv_freq, from_hf_config(GLM_LIKE).layer(0).inv_freq, atol=1e-6, rtol=1e-5)
    assert glm.attention_factor == pytest.approx(1.0, abs=1e-6)
    llama = measure({**GLM_LIKE, "model_type": "llama", "rope_parameters": {"rope_type": "default",
                                                                            "rope_theta": 10000.0}}).layers[1]
    assert (llama.layout, llama.rotary_dims, llama.direction) == ("half", (0, 32), 1)
    nanochat = measure({**GLM_LIKE, "model_type": "nanochat", "rope_parameters": {"rope_type": "default",
                                                                                  "rope_theta": 10000.0}})
    assert nanochat.layers[0].direction == -1 and from_hf_config(
        {**GLM_LIKE, "model_type": "nanochat"}).layer(0).direction == -1


def test_measure_sees_which_layers_rotate():
    """Cohere2 turns q and k only on its sliding layers; a Qwen3-Next linear-attention layer has no q and k."""
    from posenc_lib.configs import measure
    cohere2 = {**GLM_LIKE, "model_type": "cohere2", "num_hidden_layers": 4, "sliding_window": 16,
               "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
    measured, read = measure(cohere2), from_hf_config(cohere2)
    assert [layer.rope for layer in measured.layers] == [True, True, True, False]
    assert [layer.rope for layer in read.layers] == [True, True, True, False]
    assert read.layer(0).layout == measured.layers[0].layout == "interleaved"


def _default(model_type):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    return CONFIG_MAPPING[model_type]().to_dict()


def test_families_the_issue_names_read_from_their_defaults():
    """Facts of transformers 5.24's default configs, each from the family's code (see families.py's sources;
    test_configs_sweep.py measures them): layers without positions are named by kind, never called RoPE."""
    esm = from_hf_config(_default("esm"))
    assert esm.position_encoding == "learned absolute" and not esm.layer(0).causal
    nxt = from_hf_config(_default("qwen3_next"))
    assert nxt.rope_layers == list(range(3, 48, 4)) and nxt.layer(0).mixer == "linear attention"
    assert nxt.layer(3).rotary_dims == (0, 64) and "linear attention" in nxt.table()
    mllama = from_hf_config(_default("mllama_text_model"))
    assert mllama.layer(3).mixer == "cross-attention" and not mllama.layer(3).rope and mllama.layer(0).rope
    gemma = from_hf_config(_default("recurrent_gemma"))
    assert [gemma.layer(i).mixer for i in range(3)] == ["recurrent", "recurrent", "attention"]
    assert gemma.layer(2).window == 2048 and gemma.layer(2).rotary_dims == (0, 128)
    cohere2 = from_hf_config(_default("cohere2"))
    assert cohere2.layer(0).layout == "interleaved" and cohere2.nope_layers == list(range(3, 40, 4))
    assert from_hf_config(_default("glm4")).layer(0).layout == "interleaved"
    assert from_hf_config(_default("codegen")).layer(0).rotary_dims == (0, 64)
    lite = from_hf_config(_default("glm4_moe_lite")).layer(0)
    assert lite.rotary_dims == (192, 256) and lite.layout == "interleaved"
    assert from_hf_config(_default("gemma4_text")).layer(5).rope_type == "proportional"
    assert from_hf_config(_default("ministral3")).layer(0).temperature["attn_scale"] == 0.1
