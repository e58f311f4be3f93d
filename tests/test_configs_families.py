"""posenc_lib.configs.families: each record against transformers' config classes (the defaults it states, the
model_types it covers, how a config class renames or fills what a published config leaves out), and the shape of
the registry itself (named records, no field that only one record uses)."""
from dataclasses import fields, is_dataclass

import pytest

from posenc_lib.configs import FAMILIES, FAMILY_DEFAULTS, REGISTRY, Family, from_hf_config
from posenc_lib.configs.families import Indexer, MRope, QueryScale

transformers = pytest.importorskip("transformers")

from test_configs import MODELS, first_layers  # noqa: E402
from test_configs_reader import LLAMA, hf_text_config  # noqa: E402
from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # noqa: E402


# ------------------------------------------------------------------ records against transformers' config classes
def test_kimi_k2_read_as_deepseek_v3_matches_transformers():
    """Moonshot's deployment guide: Kimi K2 is DeepSeek-V3's architecture under model_type kimi_k2, and engines
    that do not know the name run it as deepseek_v3. Read that way, the reader states DeepSeek's interleaved
    decoupled RoPE, and transformers' DeepSeek-V3 code agrees (layers cut by test_configs.first_layers)."""
    from test_configs_sweep import check
    config = {**next(m for m in MODELS if m["name"].startswith("Kimi K2"))["config"], "model_type": "deepseek_v3"}
    layer = from_hf_config(config).layer(0)
    assert (layer.rotary_dims, layer.layout) == ((128, 192), "interleaved")
    assert check(first_layers(config, 1)) == {"to_dict": ("matched", "")}


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


def test_kimi_k2_and_k25_are_read_with_deepseek_v3_s_record():
    """Kimi K2's config.json says model_type kimi_k2 (Moonshot's name for DeepSeek-V3's architecture; transformers
    has no such type). transformers' own Kimi K2.5 config reads a text_config of model_type kimi_k2 as deepseek_v3;
    the reader reads both names with DeepSeek-V3's record, the same numbers as model_type deepseek_v3."""
    from transformers.models.kimi_k25 import configuration_kimi_k25 as cfg_k25
    assert cfg_k25.Kimi_K25Config(text_config={"model_type": "kimi_k2"}).text_config.model_type == "deepseek_v3"
    v3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 64, "num_hidden_layers": 4,
          "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "kv_lora_rank": 512, "rope_theta": 50000.0,
          "rope_scaling": {"type": "yarn", "factor": 64.0, "original_max_position_embeddings": 4096,
                           "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}}
    expected = from_hf_config(v3)
    for read in (from_hf_config({**v3, "model_type": "kimi_k2"}),
                 from_hf_config({"model_type": "kimi_k25", "text_config": {**v3, "model_type": "kimi_k2"}}),
                 from_hf_config({"model_type": "kimi_k25", "text_config": {k: v for k, v in v3.items()
                                                                          if k != "model_type"}})):
        assert read.family == "deepseek_v3" and not read.unknown
        assert [layer.describe() for layer in read.layers] == [layer.describe() for layer in expected.layers]
        assert read.layer(0).rotary_dims == (128, 192) and read.layer(0).layout == "interleaved"


@pytest.mark.parametrize("family,model_type", [("qwen3_vl", "qwen3_vl_text"), ("qwen3_5", "qwen3_5_text"),
                                               ("glm4v", "glm4v_text"), ("glm4v_moe", "glm4v_moe_text"),
                                               ("gemma4_text", "gemma4_text"), ("qwen2_5_vl", "qwen2_vl_text"),
                                               ("qwen2_5_vl", "qwen2_5_vl_text"), ("deepseek_v32", "deepseek_v32"),
                                               ("axk2", "axk2"), ("glm_moe_dsa", "glm_moe_dsa"), ("hy_v4", "hy_v4"),
                                               ("kimi_linear", "kimi_linear")])
def test_new_records_defaults_are_their_config_classes(family, model_type):
    """The defaults a record fills in for absent keys are the family's transformers config class's."""
    from posenc_lib.configs import FAMILY_DEFAULTS
    cls = type(transformers.CONFIG_MAPPING[model_type]())
    for key, value in FAMILY_DEFAULTS[family].items():
        if key == "rope_theta":
            assert cls.default_theta == value
        elif key == "partial_rotary_factor":
            assert cls().rope_parameters["partial_rotary_factor"] == value
        else:
            assert getattr(cls, key) == value, key


def test_model_type_aliases_are_read_with_the_family_transformers_maps_them_to():
    """A model_type transformers maps to another family's config class reads with that family's record, for every
    alias of its CONFIG_MAPPING (gpt-sw3 -> GPT2Config ...) and its text configs' renames (EXAONE 4.5's text model
    is EXAONE 4's)."""
    from posenc_lib.configs import FAMILIES
    for alias, cls in CONFIG_MAPPING.items():
        if cls.model_type != alias and cls.model_type in FAMILIES:
            assert FAMILIES.get(alias) is FAMILIES[cls.model_type], alias
    sw3 = from_hf_config({"model_type": "gpt-sw3", "n_embd": 64, "n_head": 2, "n_layer": 2, "n_positions": 2048})
    assert sw3.family == "gpt2" and sw3.position_encoding == "learned absolute"
    exaone = from_hf_config({"model_type": "exaone4_5", "text_config": {
        **LLAMA, "model_type": "exaone4_5_text", "num_hidden_layers": 4, "sliding_window": 64,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}})
    assert exaone.family == "exaone4" and exaone.rope_layers == [0, 1, 2]
    wrapped = hf_text_config({"model_type": "exaone4_5", "text_config": {"model_type": "exaone4_5_text"}})
    assert wrapped.model_type == "exaone4"


# ------------------------------------------------------------------ the registry's own shape
def test_every_field_states_a_rule_that_several_records_use():
    """A Family field is a general rule: a fact only one record needs is stated through a field others use too
    (keys, fixed, a named record), not a field of its own with a branch of its own in the reader."""
    plain = Family("plain", ())
    for name in (f.name for f in fields(Family)):
        users = [family.name for family in REGISTRY if getattr(family, name) != getattr(plain, name)]
        assert len(users) >= 2, f"Family.{name} is used by {users} only"


def test_records_hold_named_records_not_tuples_of_facts():
    """What a record states with parts is a named record (Switch, Pattern, Refusal ...): a tuple in a record holds
    names (model_types, layer types, keys) or such records, never a tuple of facts read by position."""
    def check(where, value):
        if isinstance(value, tuple):
            for item in value:
                assert isinstance(item, str) or is_dataclass(item), f"{where} holds {item!r} by position"
        if is_dataclass(value):
            for f in fields(value):
                if f.name != "section":  # MRope.section: the (t, h, w) numbers themselves
                    check(f"{where}.{f.name}", getattr(value, f.name))
    for family in REGISTRY:
        for f in fields(Family):
            check(f"{family.name}.{f.name}", getattr(family, f.name))


@pytest.mark.parametrize("make,pattern", [
    (lambda: Family("x", (), keys={"theta": "base"}), r"Family 'x': keys names \['theta'\], not among"),
    (lambda: Family("x", (), fixed={"base": 1e4}), r"Family 'x': fixed names \['base'\], not among"),
    (lambda: QueryScale("queries", "beta"), r"QueryScale.on must be 'nope' or 'rope', got 'queries'"),
    (lambda: MRope("stacked", (1, 1, 1)),
     r"MRope.style must be one of \['chunks', 'interleaved', 'dims'\], got 'stacked'"),
    (lambda: Indexer("half", "middle"), r"Indexer.where must be 'first' or 'last', got 'middle'"),
])
def test_a_misspelt_rule_is_refused_not_read_as_absent(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        make()


def test_a_familys_own_key_names_are_what_the_reader_reads():
    """GPT-NeoX's base is rotary_emb_base and its fraction rotary_pct; RecurrentGemma's window attention_window_size;
    GPT-J's base is fixed in its code: each as the record states it, errors naming the family's key."""
    neox = {"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1,
            "rotary_emb_base": 500.0, "rotary_pct": 0.5}
    layer = from_hf_config(neox).layer(0)
    assert layer.base == 500.0 and layer.rotary_dims == (0, 16)
    with pytest.raises(ValueError, match=r"config\['rotary_pct'\]"):
        from_hf_config({**neox, "rotary_pct": 1.5})
    gemma = from_hf_config({"model_type": "recurrent_gemma", "hidden_size": 64, "num_attention_heads": 2,
                            "num_hidden_layers": 3, "attention_window_size": 96, "sliding_window": 7})
    assert gemma.layer(2).window == 96
    gptj = from_hf_config({"model_type": "gptj", "n_embd": 64, "n_head": 2, "n_layer": 1, "rotary_dim": 8,
                           "rope_theta": 3.0}).layer(0)
    assert gptj.base == 10000.0 and gptj.rotary_dims == (0, 8)


def test_records_of_the_last_families_read_their_keys_as_the_config_classes_do():
    """JetMoE's heads are kv_channels wide (JetMoeConfig maps head_dim to it), whatever hidden_size // heads gives;
    Muse Glimmer's NoPE layers are the 0 entries of layer_rope_theta (its other entries' values are not read: the
    code turns those layers at rope_parameters' base); Nemotron 3.5 Transcribe's encoders are refused without
    rope_parameters, which their config classes fill with a base and a partial factor of their own."""
    jet = {"model_type": "jetmoe", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
           "kv_channels": 24}
    assert from_hf_config(jet).layer(0).rotary_dims == (0, 24)
    assert transformers.JetMoeConfig(**{k: v for k, v in jet.items() if k != "model_type"}).head_dim == 24
    renamed = {**{k: v for k, v in jet.items() if k != "kv_channels"}, "head_dim": 40}
    assert from_hf_config(renamed).layer(0).head_dim == 40
    assert from_hf_config({**jet, "kv_channels": None}).layer(0).head_dim == 16  # null: hidden_size // heads
    muse = {"model_type": "muse_glimmer_text", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 4,
            "head_dim": 32, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5},
            "layer_rope_theta": [0, 1e4, 0, 2e6]}
    read = from_hf_config(muse)
    assert read.rope_layers == [1, 3] and {read.layer(i).base for i in (1, 3)} == {5e5}
    cls = type(CONFIG_MAPPING["muse_glimmer_text"]())
    assert [layer.layer_type for layer in read.layers] == cls(num_hidden_layers=4).layer_types
    assert [layer.layer_type for layer in from_hf_config({**muse, "num_hidden_layers": 9,
                                                          "layer_rope_theta": [1] * 9}).layers] == cls(
        num_hidden_layers=9).layer_types
    default = from_hf_config({k: v for k, v in muse.items() if k != "layer_rope_theta"})
    assert [int(layer.rope) for layer in default.layers] == [int(bool(t)) for t in cls(
        num_hidden_layers=4).layer_rope_theta]
    with pytest.raises(ValueError, match=r"config\['layer_rope_theta'\] must be a list of one base"):
        from_hf_config({**muse, "layer_rope_theta": [1e4] * 3})
    with pytest.raises(ValueError, match=r"config\['layer_rope_theta'\]\[1\] must be >= 0"):
        from_hf_config({**muse, "layer_rope_theta": [0, -1, 0, 1]})
    nemotron = {"model_type": "nemotron3_5_transcribe_asr_audio", "hidden_size": 64, "num_attention_heads": 2,
                "num_hidden_layers": 2, "rope_theta": 5e4}
    with pytest.raises(ValueError, match=r"config\['rope_parameters'\] = None is not read: absent, the Nemotron"):
        from_hf_config(nemotron)
    given = from_hf_config({**nemotron, "rope_parameters": {"rope_type": "default", "rope_theta": 5e4}}).layer(0)
    assert given.rotary_dims == (0, 32) and not given.causal  # (no partial_rotary_factor in it: 1.0, as the class)
