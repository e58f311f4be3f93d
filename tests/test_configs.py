"""The course's model entries (data/model_configs.json) against transformers itself: posenc_lib.configs reads
each entry (from_hf_config), and transformers builds its own config object from the same fields
(AutoConfig.for_model). Then: its model's rotary-embedding module, called at positions 0 and 1, gives the
frequencies and the attention factor per layer type (read from the cos/sin it returns, never from its buffers);
its attention module (built on the meta device: no weights) gives the score scale, the sliding window and
whether the layer uses RoPE. HF computes frequencies in float32, posenc_lib in float64: they agree to a few
float32 ulps, as in test_scaling.py. Also the facts of the entries that notebooks 09-10 show.

The other configs tests, by the module they test: test_configs_reader.py (from_hf_config's paths),
test_configs_families.py (the records), test_configs_layers.py (LayerPositions / ModelPositions),
test_configs_measure.py, test_configs_report.py, test_configs_limits.py.
"""
import copy
import importlib
import inspect
import json
import math

import pytest
import torch
from conftest import float32_ulp, measured_rope_frequencies

from posenc_lib.configs import ModelPositions, from_hf_config
from posenc_lib.experiments.results import load_model_configs

transformers = pytest.importorskip("transformers")

from transformers import AutoConfig  # noqa: E402

MODELS = load_model_configs()


# Entries configs.measure cannot run (checked against transformers by check_against_hf, or not at all).
NOT_MEASURED = {
    "Kimi K2 Instruct 0905": "transformers 5.24 has no kimi_k2 model_type (read below as deepseek_v3)",
}


READ = MODELS  # every entry is read (test_every_entry_is_read_with_a_family_record)


ATTENTION_CLASS = {  # model_type -> (modeling module, attention class)
    "llama": ("llama", "LlamaAttention"), "mistral": ("mistral", "MistralAttention"),
    "qwen2": ("qwen2", "Qwen2Attention"), "qwen3": ("qwen3", "Qwen3Attention"),
    "qwen2_5_vl": ("qwen2_5_vl", "Qwen2_5_VLAttention"),
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


# ------------------------------------------------------------------ every entry: read with a record
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


# ------------------------------------------------------------------ what the entries show (facts notebook 10 uses)
def entries_named(prefix):
    return from_hf_config(next(m for m in MODELS if m["name"].startswith(prefix))["config"])


def test_per_layer_facts_of_the_newer_entries():
    """What notebook 10 says of the entries added for issue 23 (their dims and layouts are also measured above)."""
    from posenc_lib.scaling import yarn_attention_factor
    oss = entries_named("gpt-oss-20b")
    assert [(oss.layer(i).attention, oss.layer(i).window) for i in (0, 1)] == [("sliding", 128), ("full", None)]
    assert {oss.layer(i).rope_type for i in range(24)} == {"yarn"} and oss.layer(0).base == 150000
    assert oss.layer(1).attention_factor == pytest.approx(float(yarn_attention_factor(32.0)))
    nxt = entries_named("Qwen3-Next")
    assert nxt.rope_layers == list(range(3, 48, 4)) and nxt.layer(3).rotary_dims == (0, 64)
    assert {nxt.layer(i).mixer for i in range(48) if i % 4 != 3} == {"linear attention"}
    minimax = entries_named("MiniMax")
    assert minimax.rope_layers == list(range(7, 80, 8)) and minimax.layer(0).mixer == "linear attention"
    r7b = entries_named("Command R7B")
    assert r7b.nope_layers == list(range(3, 32, 4)) and r7b.layer(0).layout == "interleaved"
    assert {r7b.layer(i).attention for i in r7b.rope_layers} == {"sliding"}
    glm = entries_named("GLM-4").layer(0)
    assert (glm.rotary_dims, glm.head_dim, glm.layout) == ((0, 64), 128, "interleaved")
    phi4 = entries_named("Phi-4-mini")
    assert (phi4.layer(0).rotary_dims, phi4.layer(0).rope_type) == ((0, 96), "longrope")
    assert phi4.layer(0).window > phi4.max_position_embeddings


def test_per_layer_facts_of_the_entries():
    gemma = entries_named("Gemma 3")
    assert [layer.base for layer in gemma.layers[:6]] == [1e4] * 5 + [1e6]
    assert gemma.layer(5).rope_type == "linear" and gemma.layer(0).rope_type == "default"
    assert gemma.layer(0).attention == "sliding" and gemma.layer(0).window == 1024
    scout = entries_named("Llama 4")
    assert scout.nope_layers == list(range(3, 48, 4))
    assert {scout.layer(i).attention for i in scout.rope_layers} == {"chunked"}
    assert scout.layer(3).attention == "full" and scout.layer(3).temperature is not None
    assert scout.layer(0).layout == "interleaved"
    assert entries_named("SmolLM3").nope_layers == list(range(3, 36, 4))
    deepseek = entries_named("DeepSeek")
    assert deepseek.layer(0).rotary_dims == (128, 192) and deepseek.layer(0).layout == "interleaved"
    assert entries_named("GPT-NeoX").layer(0).rotary_dims == (0, 24)
    assert (entries_named("GPT-J").layer(0).rotary_dims == (0, 64)
            and entries_named("GPT-J").layer(0).layout == "interleaved")
    phi3 = entries_named("Phi-3").layer(0)
    assert phi3.rope_type == "longrope" and phi3.attention_factor == pytest.approx(
        math.sqrt(1 + math.log(32) / math.log(4096)))
    assert entries_named("Qwen2.5-VL").mrope_section == (16, 24, 24)
    bert = entries_named("BERT")
    assert bert.position_encoding == "learned absolute" and bert.rope_layers == []
    assert not bert.layer(0).causal and bool(bert.layer(0).visible_keys(5).all())


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
