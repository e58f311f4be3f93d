"""What transformers' code decides about positions, per model family: one `Family` record each, in `REGISTRY`.

A config.json holds numbers (rope_theta, head_dim, layer_types ...); which dims form a pair, which layers
turn q and k, and where the head size comes from are written in the family's modeling_*.py. Each record
states those facts for the model_types it covers, as transformers 5 (locked: 5.24) codes them;
tests/test_configs_families.py checks every record against the installed transformers' config classes, and
tests/test_configs_sweep.py measures them against its modeling code (`configs.measure`).

Fields (the reader walks them; see reader.py). A fact of one kind is one field whatever family states it;
a fact with parts is a small named record (Switch, Pattern, LegacyScaling ... below), never a bare tuple.
    layout: "half" (pair i = dims i, i + r/2; HF's rotate_half) or "interleaved" (dims 2i, 2i+1; a
      rotate_half on x[..., 0::2], x[..., 1::2], or GPT-J's rotate_every_two); None: not known from a record.
      layout_key: a Switch (DeepSeek's rope_interleave): true -> interleaved, false -> half.
    positions: "rope", "learned absolute", or a ChosenBy (ESM: position_embedding_type chooses). causal: False
      for an encoder (every key visible).
    head_dim: where the q/k head size comes from: "head_dim" (the key, else hidden_size // heads),
      "hidden" (always hidden_size // heads: the family's code ignores a head_dim key), "mla" (q/k heads of
      qk_nope_head_dim + qk_rope_head_dim, RoPE on the last qk_rope_head_dim: decoupled RoPE; the rotary
      embedding sizes its frequencies by int(head_dim * partial_rotary_factor), which must be qk_rope_head_dim:
      Mistral 4 says head_dim 128 with 0.5, DeepSeek-V3's transformers config head_dim = qk_rope_head_dim).
      head_dim_keys: LayerHeadDim records: layers of a type size their heads by a key of their own (Gemma 4's
      full-attention layers: global_head_dim 512); a config's per_layer_config {"05": {"head_dim": ...}} (what
      transformers' to_dict writes) wins.
    keys: the family's own names for settings every family has, {setting: its key}: rope_theta (GPT-NeoX:
      rotary_emb_base), partial_rotary_factor (GPT-NeoX: rotary_pct; GPT-J, CodeGen: rotary_dim, a count of dims,
      as transformers names it everywhere), sliding_window (RecurrentGemma: attention_window_size), head_dim
      (JetMoE: kv_channels, its config class's attribute_map name for head_dim). A tuple
      of keys: the config class reads the first of them the config holds (MiniMax-M2: partial_rotary_factor,
      else its legacy rotary_dim, which MiniMaxM2Config divides by head_dim into the factor).
    fixed: values written in the family's code rather than read from the config, {setting: value}: rope_theta
      (GPT-J: 10000), partial_rotary_factor (HunYuan: 1.0, its rotary embedding sizes by head_dim), score_scale
      (Gemma 4: 1.0, its q and k are RMS-normalised), direction (NanoChat: -1, each pair turns clockwise; +1, the
      course's counter-clockwise, when absent).
    layers: the rule giving each layer's type when the config has no layer_types (see reader.LAYER_RULES);
      pattern: the Pattern (key, default) of the every-k-th-layer rules (Gemma 3's sliding_window_pattern 6 ...).
    rope_layers: a RopeLayers record: the layer types whose attention turns q and k (None: every attention
      layer). Cohere2/EXAONE 4/AFMoE rotate only their sliding layers; EXAONE 4 every layer when sliding_window
      is null (RopeLayers.all_without_window).
    legacy_scaling: a LegacyScaling record, when the config class converts a flat legacy rope_scaling (and
      rope_theta) per layer type: the layer types it goes to (Gemma 3, OLMo 3: the full-attention layers only);
      the other types turn with plain RoPE at other_base_key's base (Gemma 3: rope_local_base_freq) or, without
      one, at the class's default base (defaults['rope_theta']: OLMo 3's sliding layers take 500000 whatever
      rope_theta says; its convert_rope_params_to_dict pops rope_theta for the full-attention layers first).
    score_scale_key: a key whose -1/2 power scales q.k instead of 1/sqrt(head_dim) (Gemma's query_pre_attn_scalar).
      mla_mscale: DeepSeek's YaRN mscale folded into the score scale.
    query_scale: a QueryScale record: a query scaling that grows with the position, on the NoPE layers (Llama 4's
      temperature, switched by attn_temperature_tuning, its floor_scale and attn_scale read from the config) or on
      the RoPE layers after the rotation (Ministral 3's llama_4_scaling_beta, read from the rope dict: every query
      times 1 + beta * ln(1 + floor(m / original_max_position_embeddings))); not a change of the rotation.
    qk_norm_after_rope: a key that, when true, normalises q and k AFTER the rotation ("always": the code does it
      unconditionally); an attention factor on cos/sin then cancels (reported as 1).
    reorders_pairs: the interleaved apply function writes each rotated slice back as [first dim of every pair |
      second dim of every pair] (DeepSeek's apply_rotary_pos_emb_interleave): q.k is unchanged, and what reaches
      the attention looks half-split (configs.measure sees that).
    rope_dict: a RopeDict record: what the family's config class does to the rope dict before its checks:
      legacy rope types it renames (Phi-3: su, yarn -> longrope; HunYuan-VL: xdrope -> dynamic), keys it renames
      (HunYuan-VL: xdrope_section -> mrope_section), keys it leaves out of its checks and its rotary code does not
      read (Ministral 3: max_position_embeddings; Qwen3-Omni's code predictor: mrope_section), and the key whose
      value in a 'dynamic' dict makes it HunYuan's fixed NTK-alpha (alpha_key).
    mrope: an MRope record (style, default section) of a multimodal RoPE: "chunks" (Qwen2-VL: s_t pairs of t, then
      h, then w) or "interleaved" (Qwen3-VL: pair i reads t, h, w in turn; multidim.mrope_axes), or "dims"
      (HunYuan-VL's XD-RoPE, per dim rather than per pair: LayerPositions.apply does not model its image positions);
      the section is the code's default when the rope dict has none.
    refused: Refusal records: a value of a key that the reader refuses, with why (Gemma 4's
      use_bidirectional_attention 'all' changes the window's meaning).
    indexer: an Indexer record (layout, "first" | "last") of a sparse-attention indexer's own RoPE beside the main
      attention (DeepSeek-V3.2's DSA "lightning indexer": index_n_heads query heads and one key head of
      index_head_dim, whose first -- HY-V4: last -- qk_rope_head_dim dims turn with the main attention's cos/sin,
      in a layout of their own: V3.2 half-split while its MLA pairs interleave); it only picks which keys each
      query attends to (top index_topk). Read into ModelPositions.indexer; the layout column stays the main
      attention's.
    defaults: the family's config-class defaults of the keys read (tests compare them with transformers).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

# the settings a family may read from a key of its own name (Family.keys), and those its code may fix (Family.fixed)
SHARED_SETTINGS = ("rope_theta", "partial_rotary_factor", "sliding_window", "head_dim")
CODE_SETTINGS = ("rope_theta", "partial_rotary_factor", "score_scale", "direction")


@dataclass(frozen=True)
class Switch:
    """A config key that switches a fact on or off, and the config class's default."""
    key: str
    default: bool


@dataclass(frozen=True)
class ChosenBy:
    """A config key whose value chooses the positions: {value: "rope" | "learned absolute"}."""
    key: str
    default: str
    choices: dict


@dataclass(frozen=True)
class Pattern:
    """Every k-th layer (1-based) is of the other type: k from config[key], else default ("_": no key, the code's)."""
    key: str
    default: int


@dataclass(frozen=True)
class LayerHeadDim:
    """Layers of layer_type size their q/k heads by config[key] (default when absent)."""
    layer_type: str
    key: str
    default: int


@dataclass(frozen=True)
class RopeLayers:
    """Only these layer types turn q and k; all_without_window: every layer does when sliding_window is null."""
    layer_types: tuple
    all_without_window: bool = False


@dataclass(frozen=True)
class LegacyScaling:
    """A flat legacy rope_scaling goes to these layer types only; the others take other_base_key's base (None:
    the config class's default rope_theta)."""
    layer_types: tuple
    other_base_key: str | None = None


@dataclass(frozen=True)
class QueryScale:
    """A query scaling by position: on "nope" layers, switched by config[key] (Llama 4's attn_temperature_tuning,
    with floor_scale and attn_scale), or on "rope" layers, its beta read from the rope dict's key
    (Ministral 3's llama_4_scaling_beta, with the dict's original_max_position_embeddings)."""
    on: str
    key: str

    def __post_init__(self):
        if self.on not in ("nope", "rope"):
            raise ValueError(f"QueryScale.on must be 'nope' or 'rope', got {self.on!r}")


@dataclass(frozen=True)
class RopeDict:
    """What the config class does to the rope dict: rope types it renames, keys it renames ({old: new}; both given
    must agree), keys it neither checks nor reads; alpha_key: a 'dynamic' dict holding this key (truthy) turns with
    fixed frequencies at base rope_theta * alpha ** (d / (d - 2)), d the head dim (HunYuan's
    compute_ntk_alpha_rope_parameters: posenc's static 'ntk' with factor alpha; the dict's other keys unread)."""
    renamed_types: dict = field(default_factory=dict)
    renamed_keys: dict = field(default_factory=dict)
    ignored_keys: tuple = ()
    alpha_key: str | None = None


MROPE_STYLES = ("chunks", "interleaved", "dims")


@dataclass(frozen=True)
class MRope:
    """A multimodal RoPE: style "chunks" or "interleaved" (three sections t, h, w of the pairs), or "dims" (HunYuan-VL's
    XD-RoPE: any number of axes; section i covers 2 s_i dims of the head's doubled frequency table [f | f] and takes
    axis i mod n, so the two dims of a pair may read different axes); and the code's default mrope_section (empty:
    the code has none and needs the config's)."""
    style: str
    section: tuple

    def __post_init__(self):
        if self.style not in MROPE_STYLES:
            raise ValueError(f"MRope.style must be one of {list(MROPE_STYLES)}, got {self.style!r}")


@dataclass(frozen=True)
class Refusal:
    """config[key] in values is refused, saying why."""
    key: str
    values: tuple
    why: str


@dataclass(frozen=True)
class Indexer:
    """A sparse-attention indexer's own RoPE: its layout, and whether its "first" or "last" dims turn."""
    layout: str
    where: str

    def __post_init__(self):
        if self.where not in ("first", "last"):
            raise ValueError(f"Indexer.where must be 'first' or 'last', got {self.where!r}")


@dataclass(frozen=True)
class Family:
    name: str
    model_types: tuple
    layout: str | None = "half"
    layout_key: Switch | None = None
    positions: str | ChosenBy = "rope"
    causal: bool = True
    head_dim: str = "head_dim"
    head_dim_keys: tuple = ()
    keys: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)
    layers: str = "uniform"
    pattern: Pattern = Pattern("sliding_window_pattern", 6)
    rope_layers: RopeLayers | None = None
    legacy_scaling: LegacyScaling | None = None
    score_scale_key: str | None = None
    mla_mscale: bool = False
    query_scale: QueryScale | None = None
    qk_norm_after_rope: str | None = None
    reorders_pairs: bool = False
    rope_dict: RopeDict = RopeDict()
    mrope: MRope | None = None
    refused: tuple = ()
    indexer: Indexer | None = None
    defaults: dict = field(default_factory=dict)
    source: str = ""

    def __post_init__(self):
        for name, given, known in (("keys", self.keys, SHARED_SETTINGS), ("fixed", self.fixed, CODE_SETTINGS)):
            unknown = sorted(set(given) - set(known))
            if unknown:  # a misspelt setting would be read as absent
                raise ValueError(f"Family {self.name!r}: {name} names {unknown}, not among {list(known)}")

    def key(self, setting: str) -> str:
        """The config key this family reads a shared setting from (`keys`; the first of a tuple), the setting's own
        name by default."""
        return self.keys_of(setting)[0]

    def keys_of(self, setting: str) -> tuple:
        """Every config key this family reads a shared setting from, in the order its config class reads them."""
        given = self.keys.get(setting, setting)
        return given if isinstance(given, tuple) else (given,)

def _dsa(name: str, layout: str, indexer: Indexer, source: str, *, max_position_embeddings: int,
         qk_rope_head_dim: int, qk_nope_head_dim: int, index_n_heads: int) -> Family:
    """A DeepSeek Sparse Attention family: MLA (qk_nope + qk_rope heads, DeepSeek's YaRN mscale in the score scale)
    on every layer ('indexed_attention'), beside an indexer of its own (Family.indexer). An interleaved main layout
    comes from DeepSeek's apply_rotary_pos_emb_interleave, which writes the pairs reordered (reorders_pairs).
    The keyword sizes are the config class's defaults; index_head_dim 128 and index_topk 2048 in every one."""
    return Family(name, (name,), layout=layout, head_dim="mla", reorders_pairs=layout == "interleaved", mla_mscale=True,
                  indexer=indexer, layers="all_indexed", source=source,
                  defaults={"rope_theta": 10000.0, "max_position_embeddings": max_position_embeddings,
                            "qk_rope_head_dim": qk_rope_head_dim, "qk_nope_head_dim": qk_nope_head_dim,
                            "index_head_dim": 128, "index_n_heads": index_n_heads, "index_topk": 2048})


GEMMA4 = Family("gemma4_text", ("gemma4", "gemma4_text"), layers="every_kth_full_last_full", pattern=Pattern("_", 6),
         head_dim_keys=(LayerHeadDim("full_attention", "global_head_dim", 512),), fixed={"score_scale": 1.0},
         refused=(Refusal("use_bidirectional_attention", ("all",), "a bidirectional window of sliding_window // 2 + 1 "
                 "each side, which this reader does not model"),),
         defaults={"head_dim": 256, "sliding_window": 512, "max_position_embeddings": 131072},
         source="modeling_gemma4.py: rotate_half on the whole head (p-RoPE's stopped pairs turn by 0); "
              "full-attention layers of global_head_dim; scaling = 1.0 after q/k RMS norms")


QWEN3_VL = Family("qwen3_vl", ("qwen3_vl", "qwen3_vl_text"), mrope=MRope("interleaved", (24, 20, 20)),
                  defaults={"rope_theta": 500000.0, "head_dim": 128},
                  source="modeling_qwen3_vl.py: rotate_half; recomposition_frequencies interleaves t, h, w pair by "
                         "pair")
QWEN2_5_OMNI = Family("qwen2_5_omni", ("qwen2_5_omni_text", "qwen2_5_omni_thinker"), layers="max_window_layers",
                      mrope=MRope("chunks", (16, 24, 24)),
                      defaults={"rope_theta": 1000000.0, "max_position_embeddings": 32768, "use_sliding_window": False,
                                "sliding_window": 32768, "max_window_layers": 28},
                      source="modeling_qwen2_5_omni.py (thinker's text model): Qwen2.5-VL's chunks and rotate_half")
DEEPSEEK_V3 = Family("deepseek_v3", ("deepseek_v3", "kimi_k2", "kimi_k25"),
                     layout_key=Switch("rope_interleave", True), head_dim="mla", reorders_pairs=True, mla_mscale=True,
                     defaults={"rope_theta": 10000.0, "max_position_embeddings": 4096, "qk_rope_head_dim": 64,
                               "qk_nope_head_dim": 128, "rope_interleave": True},
                     source="modeling_deepseek_v3.py: apply_rotary_pos_emb_interleave on the rope slice. kimi_k2: "
                            "Moonshot's deployment guide (github.com/MoonshotAI/Kimi-K2, docs/deploy_guidance.md at "
                            "c6157be): Kimi-K2 reuses the DeepSeek-V3 causal-LM architecture, model_type kimi_k2 only "
                            "names it for inference engines, and other frameworks run it with model_type changed to "
                            "deepseek_v3; kimi_k25: configuration_kimi_k25.py builds its text_config as deepseek_v3 "
                            "(kimi_k2 renamed to it)")


REGISTRY = (
    Family("llama", ("llama",), defaults={"rope_theta": 10000.0, "max_position_embeddings": 2048, "hidden_size": 4096,
                                          "num_attention_heads": 32, "num_hidden_layers": 32},
           source="modeling_llama.py: rotate_half on the two halves"),
    Family("mistral", ("mistral",), layers="window_everywhere",
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 131072, "sliding_window": 4096},
           source="modeling_mistral.py: Llama's rotation; one sliding_window for every layer"),
    Family("qwen2", ("qwen2",), layers="max_window_layers",
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 32768, "use_sliding_window": False,
                     "sliding_window": 4096, "max_window_layers": 28}),
    Family("qwen3", ("qwen3",), layers="max_window_layers",
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 32768, "head_dim": 128,
                     "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28}),
    Family("qwen2_5_vl", ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text"), layers="max_window_layers",
           mrope=MRope("chunks", (16, 24, 24)),
           defaults={"rope_theta": 1000000.0, "max_position_embeddings": 32768, "use_sliding_window": False,
                     "sliding_window": 4096, "max_window_layers": 80},
           source="modeling_qwen2_vl.py / modeling_qwen2_5_vl.py: rotate_half; M-RoPE sections in chunks t | h | w"),
    QWEN3_VL,
    replace(QWEN3_VL, name="qwen3_vl_moe", model_types=("qwen3_vl_moe", "qwen3_vl_moe_text"),
            defaults={"rope_theta": 500000.0},  # head_dim: hidden_size // num_attention_heads when absent
            source="modeling_qwen3_vl_moe.py: Qwen3-VL's rotation and M-RoPE; other config defaults"),
    Family("glm4v", ("glm4v", "glm4v_text"), layout="interleaved",
           mrope=MRope("chunks", (8, 12, 12)), defaults={"rope_theta": 10000.0},
           source="modeling_glm4v.py: recomposition_frequencies takes t | h | w in chunks, then repeat_interleave(2): "
                  "pairs (2i, 2i+1) of the first rotary dims (rotate_half_llm)"),
    Family("glm4v_moe", ("glm4v_moe", "glm4v_moe_text"), mrope=MRope("chunks", (8, 12, 12)),
           defaults={"rope_theta": 10000.0, "partial_rotary_factor": 0.5},
           source="modeling_glm4v_moe.py: the same chunks, but cat([freq, freq]) and rotate_half: pairs (i, i + r/2), "
                  "unlike GLM-4V's"),
    # multimodal text models with M-RoPE (records added from their modeling files; tests/test_configs_sweep.py and
    # tests/test_configs_real.py measure them)
    Family("glm_image", ("glm_image", "glm_image_text"), mrope=MRope("chunks", (8, 12, 12)),
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 131072},
           source="modeling_glm_image.py: sections t | h | w in chunks, then rotate_half on the two halves "
                  "(unlike GLM-4V's pairs)"),
    Family("glm_ocr", ("glm_ocr", "glm_ocr_text"), layout="interleaved", mrope=MRope("chunks", (8, 12, 12)),
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 131072},
           source="modeling_glm_ocr.py: GLM-4V's chunks, repeat_interleave(2) and rotate_half_llm: pairs (2i, 2i+1)"),
    Family("paddleocr_vl", ("paddleocr_vl", "paddleocr_vl_text"), mrope=MRope("chunks", (16, 24, 24)),
           defaults={"rope_theta": 500000.0, "max_position_embeddings": 131072, "head_dim": 128},
           source="modeling_paddleocr_vl.py: Qwen2-VL's chunks t | h | w and rotate_half; a window only on "
                  "layer_types' sliding layers"),
    QWEN2_5_OMNI,
    replace(QWEN2_5_OMNI, name="qwen2_5_omni_talker", model_types=("qwen2_5_omni_talker",),
            defaults={**QWEN2_5_OMNI.defaults, "head_dim": 128},
            source="modeling_qwen2_5_omni.py: Qwen2_5OmniTalkerModel stacks the thinker's Qwen2_5OmniDecoderLayer with "
                   "the same Qwen2_5OmniRotaryEmbedding (chunks, default [16, 24, 24]); its config class has head_dim "
                   "128"),
    # the talker's code predictor: Qwen3's attention (q/k norms before RoPE, rotate_half) with plain RoPE
    Family("qwen3_omni_moe_talker_code_predictor", ("qwen3_omni_moe_talker_code_predictor",),
           layers="layer_types_required", rope_dict=RopeDict(ignored_keys=("mrope_section",)),
           defaults={"rope_theta": 10000.0, "head_dim": 128, "max_position_embeddings": 32768},
           source="modeling_qwen3_omni_moe.py: Qwen3OmniMoeTalkerCodePredictorModel turns q and k with "
                  "Qwen3OmniMoeRotaryEmbedding (cat(freqs, freqs), no M-RoPE sections read) and rotate_half; its "
                  "config class makes layers >= max_window_layers sliding whenever sliding_window is set (no "
                  "use_sliding_window): read from layer_types"),
    Family("qwen3_omni_moe", ("qwen3_omni_moe_text", "qwen3_omni_moe_thinker"),
           mrope=MRope("interleaved", (24, 20, 20)),
           defaults={"rope_theta": 1000000.0, "max_position_embeddings": 32768},
           source="modeling_qwen3_omni_moe.py (thinker's text model): Qwen3-VL's interleaved sections "
                  "(length = section x 3) and rotate_half"),
    Family("cosmos3_edge", ("cosmos3_edge", "cosmos3_edge_text"), mrope=MRope("interleaved", (24, 20, 20)),
           defaults={"rope_theta": 100000000.0, "max_position_embeddings": 131072, "head_dim": 128},
           source="modeling_cosmos3_edge.py: Qwen3-VL's interleaved sections (length = section x 3) and rotate_half"),
    Family("ministral", ("ministral",), layers="window_everywhere",
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 131072, "sliding_window": 4096},
           source="modeling_ministral.py: rotate_half; MinistralConfig makes every layer sliding when sliding_window "
                  "is set, and the layer passes config.sliding_window on its sliding layers"),
    replace(DEEPSEEK_V3, name="axk1", model_types=("axk1",),
            defaults={"rope_theta": 10000.0, "max_position_embeddings": 32768, "qk_rope_head_dim": 64,
                      "qk_nope_head_dim": 128, "rope_interleave": True},
            source="modeling_axk1.py: DeepSeek-V3's MLA (apply_rotary_pos_emb_interleave when rope_interleave, "
                   "yarn_apply_mscale on the softmax scale); other config defaults"),
    Family("ministral3", ("ministral3",), layers="window_everywhere",
           query_scale=QueryScale("rope", "llama_4_scaling_beta"),
           rope_dict=RopeDict(ignored_keys=("max_position_embeddings",)),
           source="modeling_ministral3.py: rotate_half; then query_states * get_llama_4_attn_scale(position_ids, "
                  "llama_4_scaling_beta, original_max_position_embeddings)"),
    GEMMA4,
    replace(GEMMA4, name="gemma4_unified_text", model_types=("gemma4_unified", "gemma4_unified_text"),
            defaults={"head_dim": 256, "sliding_window": 1024, "max_position_embeddings": 262144},
            source="modeling_gemma4_unified.py: the same rotary embedding, apply_rotary_pos_emb and attention as "
                   "modeling_gemma4.py (the 12B's text model); other config defaults"),
    # EmbeddingGemma 2: Gemma 4's heads and rotation in an encoder; every layer bidirectional, its sliding layers
    # masking |q - k| > sliding_window (a radius: the layer hands sliding_window + 1 to a bidirectional mask)
    replace(GEMMA4, name="embedding_gemma2", model_types=("embedding_gemma2", "embedding_gemma2_text"), causal=False,
            refused=(Refusal("model_type", ("embedding_gemma2", "embedding_gemma2_text"),
                      "an encoder whose sliding layers see sliding_window positions on each side (bidirectional; "
                      "the layer hands sliding_window + 1 to a bidirectional mask), which this reader does not "
                      "model"),),
            defaults={"sliding_window": 512},
            source="modeling_embedding_gemma2.py: is_causal = False on every layer; sliding_window = "
                   "config.sliding_window + 1 on the sliding layers, create_bidirectional_sliding_window_mask"),
    # ModernBERT: an encoder; its sliding layers (every layer but each global_attn_every_n_layers-th, from 0) attend
    # local_attention // 2 positions each side, the layer handing local_attention // 2 + 1 to a bidirectional mask
    Family("modernbert", ("modernbert",), causal=False,
           refused=(Refusal("model_type", ("modernbert",),
                     "an encoder whose sliding layers see local_attention // 2 positions on each side "
                     "(bidirectional; the layer hands local_attention // 2 + 1 to a bidirectional mask), which this "
                     "reader does not model"),),
           source="modeling_modernbert.py: rotate_half; is_causal = False; sliding layers get "
                  "config.sliding_window + 1 (sliding_window = local_attention // 2, configuration_modernbert.py); "
                  "global and local bases from global_rope_theta / local_rope_theta (160000 / 10000 by default)"),
    Family("phi", ("phi",), defaults={"rope_theta": 10000.0, "max_position_embeddings": 2048,
                                      "partial_rotary_factor": 0.5},
           source="modeling_phi.py: PhiAttention turns the first rotary dims, half-split"),
    Family("phi3", ("phi3",), layers="window_everywhere",
           rope_dict=RopeDict(renamed_types={"su": "longrope", "yarn": "longrope"}),
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 4096, "sliding_window": None}),
    Family("gemma2", ("gemma2",), layers="alternate_sliding", score_scale_key="query_pre_attn_scalar",
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 8192, "head_dim": 256, "sliding_window": 4096,
                     "query_pre_attn_scalar": 256}),
    Family("gemma3_text", ("gemma3", "gemma3_text"), layers="every_kth_full",
           legacy_scaling=LegacyScaling(("full_attention",), "rope_local_base_freq"),
           score_scale_key="query_pre_attn_scalar",
           defaults={"rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "max_position_embeddings": 131072,
                     "head_dim": 256, "sliding_window": 4096, "sliding_window_pattern": 6,
                     "query_pre_attn_scalar": 256, "hidden_size": 2304, "num_attention_heads": 8,
                     "num_hidden_layers": 26}),
    Family("olmo3", ("olmo3",), layers="every_kth_full", pattern=Pattern("_", 4),
           legacy_scaling=LegacyScaling(("full_attention",)),
           defaults={"rope_theta": 500000.0, "max_position_embeddings": 2048, "sliding_window": 4096,
                     "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32},
           source="modeling_olmo3.py: rotate_half; configuration_olmo3.py puts a legacy rope_scaling on the "
                  "full-attention layers only (every 4th by default), the sliding ones at the default base"),
    # one sliding_window for every layer (the attention passes config.sliding_window to every layer)
    Family("mixtral", ("mixtral",), layers="window_everywhere",
           defaults={"rope_theta": 1000000.0, "max_position_embeddings": 131072, "sliding_window": None},
           source="modeling_mixtral.py: rotate_half; sliding_window=getattr(config, 'sliding_window') in every layer"),
    Family("starcoder2", ("starcoder2",), layers="window_everywhere",
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 4096, "sliding_window": None},
           source="modeling_starcoder2.py: rotate_half; sliding_window=getattr(config, 'sliding_window') in every "
                  "layer"),
    Family("olmoe", ("olmoe",), layers="window_everywhere",
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 4096},
           source="modeling_olmoe.py: rotate_half; sliding_window=getattr(config, 'sliding_window', None) in every "
                  "layer (OlmoeConfig has none by default)"),
    Family("llama4_text", ("llama4", "llama4_text"), layout="interleaved", layers="no_rope_flags_chunked",
           query_scale=QueryScale("nope", "attn_temperature_tuning"), qk_norm_after_rope="use_qk_norm",
           defaults={"rope_theta": 500000.0, "max_position_embeddings": 131072, "head_dim": 128,
                     "no_rope_layer_interval": 4, "attention_chunk_size": 8192, "attn_temperature_tuning": True,
                     "floor_scale": 8192, "attn_scale": 0.1},
           source="modeling_llama4.py: apply_rotary_emb multiplies complex pairs (2i, 2i+1)"),
    Family("smollm3", ("smollm3",), layers="no_rope_flags",
           defaults={"rope_theta": 2000000.0, "max_position_embeddings": 32768, "no_rope_layer_interval": 4,
                     "use_sliding_window": False, "sliding_window": None}),
    # kimi_k2: Moonshot's config.json says model_type "kimi_k2" on DeepseekV3ForCausalLM (transformers has no such
    # type); kimi_k25: its text_config is a DeepseekV3Config (configuration_kimi_k25.py: a text_config of model_type
    # kimi_k2 is read as deepseek_v3)
    DEEPSEEK_V3,
    replace(DEEPSEEK_V3, name="glm4_moe_lite", model_types=("glm4_moe_lite",),
            defaults={**DEEPSEEK_V3.defaults, "max_position_embeddings": 202752, "qk_nope_head_dim": 192},
            source="modeling_glm4_moe_lite.py: DeepSeek-V3's attention (apply_rotary_pos_emb_interleave when "
                   "rope_interleave); other config defaults"),
    replace(DEEPSEEK_V3, name="youtu", model_types=("youtu",),
            defaults={**DEEPSEEK_V3.defaults, "max_position_embeddings": 131072},
            source="modeling_youtu.py: DeepSeek-V3's attention (apply_rotary_pos_emb_interleave when rope_interleave); "
                   "other config defaults"),
    Family("deepseek_v2", ("deepseek_v2",), layout="interleaved", head_dim="mla", mla_mscale=True,
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 2048, "qk_rope_head_dim": 64,
                     "qk_nope_head_dim": 128},
           source="modeling_deepseek_v2.py: apply_rotary_emb multiplies complex pairs (2i, 2i+1) of the rope slice, "
                  "written back in place (no reordering, no rope_interleave switch); yarn_apply_mscale on the "
                  "softmax scale"),
    # DeepSeek-V3.2: V3's MLA (pairs interleaved on the rope slice, no rope_interleave switch in its code) on every
    # layer ('indexed_attention'), plus the DSA indexer turning its own q/k half-split; other DSA families alike,
    # each with its own layouts
    _dsa("deepseek_v32", "interleaved", Indexer("half", "first"),
         "modeling_deepseek_v32.py: DeepseekV32Attention applies apply_rotary_pos_emb_interleave to the rope slice; "
         "DeepseekV32Indexer applies apply_rotary_pos_emb (rotate_half) to the first qk_rope_head_dim dims of its "
         "own q and k",
         max_position_embeddings=163840, qk_rope_head_dim=64, qk_nope_head_dim=128, index_n_heads=64),
    _dsa("axk2", "interleaved", Indexer("half", "first"),
         "modeling_axk2.py: apply_rotary_pos_emb_interleave on the MLA rope slice; AXK2Indexer: apply_rotary_pos_emb "
         "on the first qk_rope_head_dim dims (V3.2's split)",
         max_position_embeddings=131072, qk_rope_head_dim=32, qk_nope_head_dim=64, index_n_heads=16),
    _dsa("glm_moe_dsa", "interleaved", Indexer("interleaved", "first"),
         "modeling_glm_moe_dsa.py: apply_rotary_pos_emb_interleave on the MLA rope slice and on the first "
         "qk_rope_head_dim dims of GlmMoeDsaIndexer's q and k (interleaved in both)",
         max_position_embeddings=202752, qk_rope_head_dim=64, qk_nope_head_dim=192, index_n_heads=32),
    replace(_dsa("hy_v4_vl", "interleaved", Indexer("interleaved", "last"),
                 "modeling_hy_v4_vl.py: its own apply_rotary_pos_emb (GLM's style: cos/sin repeated pairwise, "
                 "rotate_half on x[..., 0::2], x[..., 1::2]) on the MLA rope slice and on the LAST qk_rope_head_dim "
                 "dims of its indexer's q and k: pairs (2i, 2i+1) in both, written back in place",
                 max_position_embeddings=262144, qk_rope_head_dim=64, qk_nope_head_dim=192, index_n_heads=32),
            model_types=("hy_v4_vl", "hy_v4_vl_text"), reorders_pairs=False),
    _dsa("hy_v4", "half", Indexer("half", "last"),
         "modeling_hy_v4.py: apply_rotary_pos_emb (rotate_half) on the MLA rope slice, and on the LAST "
         "qk_rope_head_dim dims of HYV4Indexer's q and k (half-split in both)",
         max_position_embeddings=262144, qk_rope_head_dim=64, qk_nope_head_dim=192, index_n_heads=16),
    # Kimi Linear: MLA without RoPE ("MLA ... with NoPE") on its full-attention layers, KDA linear attention between
    Family("kimi_linear", ("kimi_linear",), head_dim="mla", layers="kimi_linear", rope_layers=RopeLayers(()),
           defaults={"qk_rope_head_dim": 64, "qk_nope_head_dim": 128},
           source="modeling_kimi_linear.py: KimiLinearAttention never rotates q or k (no rotary embedding in the "
                  "file); KimiLinearDeltaAttention (KDA) on the linear-attention layers"),
    Family("mistral4", ("mistral4",), layout_key=Switch("rope_interleave", True), head_dim="mla", reorders_pairs=True,
           mla_mscale=True, query_scale=QueryScale("rope", "llama_4_scaling_beta"),
           rope_dict=RopeDict(ignored_keys=("max_position_embeddings",)),
           source="modeling_mistral4.py: DeepSeek's MLA (apply_rotary_pos_emb_interleave on the rope slice), then "
                  "query_states * get_llama_4_attn_scale(...) as Ministral 3"),
    Family("gpt_neox", ("gpt_neox",), keys={"rope_theta": "rotary_emb_base", "partial_rotary_factor": "rotary_pct"},
           head_dim="hidden",
           defaults={"rotary_emb_base": 10000.0, "rotary_pct": 0.25, "max_position_embeddings": 2048}),
    Family("gptj", ("gptj",), layout="interleaved", keys={"partial_rotary_factor": "rotary_dim"},
           fixed={"rope_theta": 10000.0}, head_dim="hidden",
           defaults={"rotary_dim": 64, "n_positions": 2048},
           source="modeling_gptj.py: rotate_every_two, create_sinusoidal_positions with base 10000"),
    # interleaved pairs: a rotate_half on x[..., 0::2], x[..., 1::2] (cos/sin repeated pairwise)
    Family("cohere", ("cohere",), layout="interleaved", defaults={"rope_theta": 500000.0},
           source="modeling_cohere.py: rotate_half stacks (-x[1::2], x[0::2]); freqs repeat_interleave(2)"),
    Family("cohere2", ("cohere2", "cohere2_moe"), layout="interleaved", layers="every_kth_full",
           pattern=Pattern("sliding_window_pattern", 4),
           rope_layers=RopeLayers(("sliding_attention",)), defaults={"rope_theta": 10000.0, "sliding_window": 4096},
           source="modeling_cohere2.py: apply_rotary_pos_emb only when the layer has a sliding window"),
    Family("glm", ("glm", "glm4"), layout="interleaved", defaults={"rope_theta": 10000.0, "partial_rotary_factor": 0.5},
           source="modeling_glm.py / modeling_glm4.py: rotate_half on (0::2, 1::2) of the first rotary dims"),
    Family("ernie4_5", ("ernie4_5", "ernie4_5_moe"), layout="interleaved", defaults={"rope_theta": 500000.0},
           source="modeling_ernie4_5.py: rotate_half on (0::2, 1::2)"),
    Family("helium", ("helium",), layout="interleaved", defaults={"rope_theta": 100000.0},
           source="modeling_helium.py: rotate_half on (0::2, 1::2)"),
    Family("codegen", ("codegen",), layout="interleaved", keys={"partial_rotary_factor": "rotary_dim"},
           fixed={"rope_theta": 10000.0}, head_dim="hidden",
           defaults={"rotary_dim": 64, "n_positions": 2048},
           source="modeling_codegen.py: GPT-J's rotate_every_two on the first rotary_dim dims"),
    # only some layers rotate
    # exaone4_5_text: Exaone4_5_Config rewrites its text_config's model_type to exaone4 (its text model is EXAONE 4's)
    Family("exaone4", ("exaone4", "exaone_moe", "exaone4_5", "exaone4_5_text"), layers="every_kth_full",
           pattern=Pattern("sliding_window_pattern", 4),
           rope_layers=RopeLayers(("sliding_attention",), all_without_window=True),
           defaults={"rope_theta": 10000.0, "sliding_window": 4096},
           source="modeling_exaone4.py: RoPE when sliding_window is None or the layer slides"),
    Family("afmoe", ("afmoe",), layers="every_kth_full", pattern=Pattern("global_attn_every_n_layers", 4),
           rope_layers=RopeLayers(("sliding_attention",)), defaults={"rope_theta": 10000.0, "sliding_window": 1024},
           source="modeling_afmoe.py: RoPE only on the local (sliding) layers"),
    Family("flint", ("flint",), layers="flint_pattern", rope_layers=RopeLayers(("sliding_attention",)),
           defaults={"sliding_window": 513},
           source="modeling_flint.py: only sliding-window layers are rotary; configuration_flint.py: full attention on "
                  "layers 0, 1, every i % 4 == 1 and the last"),
    Family("kolibri1", ("kolibri1",), layers="every_kth_full", pattern=Pattern("_", 5),
           rope_layers=RopeLayers(("sliding_attention",), all_without_window=True),
           source="modeling_kolibri1.py: RoPE when sliding_window is None or the layer slides (global NoPE)"),
    Family("lara_mini", ("lara_mini",), layers="layer_types_required",
           rope_layers=RopeLayers(("sliding_attention",)),
           source="modeling_lara_mini.py: NoPE layers get position_embeddings=None "
                  "(measured: the full-attention layers)"),
    # layers without positions: linear attention, recurrent blocks, cross-attention
    Family("qwen3_next", ("qwen3_next",),
           layers="full_interval", defaults={"rope_theta": 10000.0, "partial_rotary_factor": 0.25, "head_dim": 256},
           source="modeling_qwen3_next.py: gated DeltaNet (linear attention) layers, RoPE on the full-attention ones"),
    Family("qwen3_5", ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"), layers="full_interval",
           mrope=MRope("interleaved", (11, 11, 10)),
           defaults={"rope_theta": 10000.0, "partial_rotary_factor": 0.25, "head_dim": 256},
           source="modeling_qwen3_5.py: Qwen3-Next's layer stack; interleaved M-RoPE on the full-attention layers"),
    Family("minimax", ("minimax",), layers="every_other_linear", defaults={"rope_theta": 1000000.0},
           source="modeling_minimax.py: lightning (linear) attention layers beside full ones"),
    Family("recurrent_gemma", ("recurrent_gemma",), layers="block_types",
           keys={"sliding_window": "attention_window_size"},
           defaults={"rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                     "block_types": ["recurrent", "recurrent", "attention"], "attention_window_size": 2048},
           source="modeling_recurrent_gemma.py: recurrent blocks; local attention with RoPE on half the head"),
    Family("mllama", ("mllama", "mllama_text_model"), layers="cross_attention_layers",
           defaults={"rope_theta": 500000.0},
           source="modeling_mllama.py: MllamaTextCrossAttention (no RoPE) on cross_attention_layers"),
    # every attention layer turns the two halves of its rotary dims (rotate_half on x[..., :r/2], x[..., r/2:]),
    # measured with configs.measure on transformers 5.24's default configs (tests/test_configs_sweep.py re-checks)
    Family("rotate_half", (
        "apertus", "apertus1p5", "apertus1p5_text", "arcee", "aria", "aria_text", "bitnet", "cwm", "diffllama",
        "doge", "emu3", "emu3_text_model", "eurobert", "flex_olmo", "gemma", "glm4_moe", "gpt_oss", "granite",
        "granite4_vision", "granite4_vision_text", "granite_docling", "granite_docling_text", "granite_swa",
        "granitemoe", "granitemoe_swa", "granitemoeshared", "gte", "higgs_audio_v2", "hy_v3", "hyperclovax", "jais2",
        "jina_embeddings_v3", "lfm2", "lfm3", "lfm3_vl", "mellum", "mimo_v2_flash", "minimax_m3_vl",
        "minimax_m3_vl_text", "modernbert-decoder", "molmo2", "molmo2_text", "nemotron", "nemotron3_diarization_audio",
        "nomic_bert", "olmo", "olmo2", "pe_audio", "pe_audio_video", "pe_video", "phimoe", "qwen2_moe",
        "qwen3_moe", "seed_oss", "solar_open", "stablelm", "step3p5", "step3p7", "ultrabert",
        "vaultgemma", "voxtral_realtime_encoder",
    ), source="modeling_<model_type>.py: rotate_half on the two halves; every attention layer"),
    Family("persimmon", ("persimmon",), head_dim="hidden",
           defaults={"rope_theta": 10000.0, "partial_rotary_factor": 0.5, "max_position_embeddings": 16384},
           source="modeling_persimmon.py: head_dim = hidden_size // num_heads; q and k LayerNorm-ed, then "
                  "rotate_half on their first rotary_ndims = head_dim x partial_rotary_factor dims (PersimmonConfig: "
                  "0.5 when not given)"),
    Family("jetmoe", ("jetmoe",), keys={"head_dim": ("kv_channels", "head_dim")},
           defaults={"rope_theta": 10000.0, "kv_channels": 128, "max_position_embeddings": 4096},
           source="modeling_jetmoe.py: heads of kv_channels dims (JetMoeConfig's attribute_map: head_dim -> "
                  "kv_channels), rotate_half on the whole head; q from a mixture of attention experts"),
    # Nemotron 3.5 Transcribe's audio encoders (ASR encoder, word-timestamp head, which numbers its upsampled frames
    # 0, 1, ... itself): bidirectional, q and k LayerNorm-ed before rotate_half on the first head_dim x
    # partial_rotary_factor dims. Their config classes fill rope_parameters {'rope_theta': 10000.0,
    # 'partial_rotary_factor': 0.5} when it is absent, ignoring a top-level rope_theta, and read a given
    # rope_parameters without partial_rotary_factor as 1.0: no one default to state, so an absent rope_parameters is
    # refused
    Family("nemotron3_5_transcribe", ("nemotron3_5_transcribe_asr_audio", "nemotron3_5_transcribe_word_timestamp"),
           causal=False, refused=(Refusal("rope_parameters", (None,), (
               "absent, the Nemotron 3.5 Transcribe config classes put rope_theta 10000 and partial_rotary_factor 0.5 "
               "in it whatever a top-level rope_theta says (give rope_parameters)")),),
           defaults={"max_position_embeddings": 5000},
           source="modeling_nemotron3_5_transcribe.py: Nemotron3_5TranscribeAttention (is_causal False) applies "
                  "nn.LayerNorm q_norm/k_norm, then rotate_half on the first cos.shape[-1] dims"),
    Family("muse_glimmer_text", ("muse_glimmer", "muse_glimmer_text"), layers="muse_glimmer",
           defaults={"rope_theta": 10000.0, "head_dim": 128, "sliding_window": 2048, "max_position_embeddings": 131072,
                     "qk_scale_factor": 3.87},
           source="modeling_muse_glimmer.py: rotate_half on the whole head; MuseGlimmerTextModel hands "
                  "position_embeddings=None to the layers whose layer_rope_theta is 0 (NoPE), one rotary embedding "
                  "at rope_parameters' base to the others; q = RMSNorm(q) x qk_scale_factor, k = RMSNorm(k), before "
                  "RoPE; scaling head_dim^-1/2"),
    # HunYuan: q and k RMS-normalised after RoPE in every layer; a 'dynamic' rope dict with alpha is fixed NTK-alpha
    Family("hunyuan_v1_dense", ("hunyuan_v1_dense", "hunyuan_v1_moe"), qk_norm_after_rope="always",
           fixed={"partial_rotary_factor": 1.0},
           rope_dict=RopeDict(alpha_key="alpha"), defaults={"rope_theta": 10000.0, "max_position_embeddings": 2048},
           source="modeling_hunyuan_v1_dense.py / modeling_hunyuan_v1_moe.py: rotate_half on the whole head; "
                  "query_layernorm / key_layernorm after apply_rotary_pos_emb; HunYuan...RotaryEmbedding turns "
                  "'dynamic' with alpha into ntk_alpha (compute_ntk_alpha_rope_parameters)"),
    Family("hunyuan_vl", ("hunyuan_vl", "hunyuan_vl_text"), qk_norm_after_rope="always", mrope=MRope("dims", ()),
           fixed={"partial_rotary_factor": 1.0},
           rope_dict=RopeDict(renamed_types={"xdrope": "dynamic"}, renamed_keys={"xdrope_section": "mrope_section"},
                              alpha_key="alpha"),
           defaults={"rope_theta": 10000.0, "max_position_embeddings": 2048},
           source="modeling_hunyuan_vl.py: HunYuan's attention (rotate_half on the whole head, q/k RMS norms after "
                  "it) and ntk_alpha; recomposition_frequencies splits cat(freq, freq) into 2 x mrope_section dims, "
                  "axis i mod n; configuration_hunyuan_vl.py renames type 'xdrope' to 'dynamic' and xdrope_section to "
                  "mrope_section"),
    Family("minimax_m2", ("minimax_m2",), keys={"partial_rotary_factor": ("partial_rotary_factor", "rotary_dim")},
           defaults={"rope_theta": 5000000.0, "head_dim": 128, "max_position_embeddings": 196608},
           source="modeling_minimax_m2.py: rotate_half on the first rotary dims; configuration_minimax_m2.py: a "
                  "legacy rotary_dim becomes partial_rotary_factor = rotary_dim / head_dim when none is given"),
    Family("nanochat", ("nanochat",), fixed={"direction": -1}, qk_norm_after_rope="always",
           source="modeling_nanochat.py: rotate_half returns cat(x2, -x1): each pair turns clockwise"),
    Family("openai_privacy_filter", ("openai_privacy_filter",), layout="interleaved",
           source="modeling_openai_privacy_filter.py (measured: pairs 2i, 2i+1)"),
    Family("olmo_hybrid", ("olmo_hybrid",), layers="layer_types_required",
           source="modeling_olmo_hybrid.py: linear-attention layers beside full attention with RoPE"),
    Family("minicpm3", ("minicpm3",), head_dim="mla",
           source="modeling_minicpm3.py: DeepSeek's MLA with the half-split apply_rotary_pos_emb"),
    Family("esm", ("esm",), causal=False,
           positions=ChosenBy("position_embedding_type", "absolute",
                              {"absolute": "learned absolute", "rotary": "rope"}),
           source="modeling_esm.py: a learned table unless position_embedding_type is 'rotary' (rotate_half on "
                  "halves); bidirectional"),
    Family("absolute", ("bert",), positions="learned absolute", causal=False, layout=None,
           defaults={"max_position_embeddings": 512}),
    # gpt-sw3: transformers' CONFIG_MAPPING maps it to GPT2Config
    Family("gpt2", ("gpt2", "gpt-sw3"), positions="learned absolute", layout=None, defaults={"n_positions": 1024}),
    Family("gpt_bigcode", ("gpt_bigcode",), positions="learned absolute", layout=None,
           defaults={"n_positions": 1024},
           source="modeling_gpt_bigcode.py: wpe, a learned table of n_positions rows added to the input"),
    Family("opt", ("opt",), positions="learned absolute", layout=None, defaults={"max_position_embeddings": 2048},
           source="modeling_opt.py: OPTLearnedPositionalEmbedding (max_position_embeddings rows, offset 2)"),
)
