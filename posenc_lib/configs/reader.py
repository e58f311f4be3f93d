"""Reading a config.json into a `ModelPositions`: `from_hf_config(config)`.

The reader walks the family's record (families.REGISTRY): it reads the numbers from the config (head_dim,
rope_parameters / rope_scaling, layer_types ...) and takes from the record what only the family's code
decides (layout, which layers rotate, where the head size comes from). Where the config lacks a key, the
family's default (its transformers config class's) applies and the report lists it under "defaults". A
model_type no record covers is read with the keys every family shares; what only code decides (the layout)
is then None, shown as "unknown" with where it comes from (`configs.measure` reads it from the code).

Keys read (others are ignored; ill-typed ones are an error naming the user's key, e.g. config['head_dim']):
    head_dim, or hidden_size // num_attention_heads (GPT-J: n_embd // n_head); MLA: qk_nope_head_dim +
      qk_rope_head_dim; hidden_size must be divisible by the heads when head_dim is not given
    rope_parameters (transformers >= 5) or the legacy rope_scaling (+ top-level rope_theta,
      partial_rotary_factor); as in transformers, a non-empty rope_scaling wins over rope_parameters.
      The dict may be nested by layer type ({"full_attention": {...}, "sliding_attention": {...}}).
      Its keys are checked by `scaling.ROPE_SCALINGS` (an unknown rope_type or key is a ValueError)
    partial rotary: partial_rotary_factor, rotary_pct (GPT-NeoX), rotary_dim (GPT-J, CodeGen); with rope_type
      'proportional' (p-RoPE, Gemma 4) the whole head turns and the factor stops the slowest pairs instead
    per-layer head sizes: per_layer_config {"05": {"head_dim": 512}} (transformers' to_dict) or the family's key
      (Gemma 4's global_head_dim for its full-attention layers); other per-layer overrides of keys read here
      are refused by name
    mrope_section (M-RoPE; the family's record says chunks or interleaved, and its code's default section);
      llama_4_scaling_beta in the rope dict (Ministral 3): a query scaling by position, not part of the rotation
    dynamic NTK: from max_position_embeddings, as transformers 5 (an original_max_position_embeddings in its
      dict is not read there, noted); YaRN's truncate inside one layer type's dict (given so, or put there by the
      config class from a legacy rope_scaling: Gemma 3, OLMo 3) is not read, as in transformers (it reads truncate
      from the top of rope_parameters only), noted
    per-layer settings: layer_types (its length must be num_hidden_layers), or the family's rule for them
      (reader.LAYER_RULES: Gemma 2/3 sliding patterns, Qwen2 max_window_layers, Llama 4 / SmolLM3
      no_rope_layers, linear-attention intervals, Mllama cross_attention_layers ...)
    layer type 'indexed_attention' (DeepSeek-V3.2): full causal attention whose keys an indexer narrows; the
      indexer's own q/k (index_head_dim, index_n_heads, index_topk; qk_rope_head_dim of them turn) in
      ModelPositions.indexer. Kimi Linear's linear_attn_config (full_attn_layers, kda_layers, counted from 1)
    BERT, GPT-2: learned absolute positions (max_position_embeddings / n_positions rows), no RoPE.
"""
from __future__ import annotations

import json
import math
import numbers
import sys
from dataclasses import dataclass

from .. import _checks
from ..i18n import tr
from ..scaling import WHOLE_HEAD_TYPES, _validate, rope_inv_freq, rope_type_of, rotary_dim, yarn_attention_factor
from .families import REGISTRY, ChosenBy, Family, Pattern
from .layers import LayerPositions, ModelPositions
from .limits import check_sizes

FAMILIES = {model_type: family for family in REGISTRY for model_type in family.model_types}
FAMILY_DEFAULTS = {family.name: family.defaults for family in REGISTRY}
GENERIC = Family("generic", (), layout=None, layers="window_if_used", defaults={"rope_theta": 10000.0})
# transformers' layer types -> the attention they mean (None: a layer that does not attend over positions)
# (DeepSeek-V3.2's 'indexed_attention': full causal attention whose keys an indexer narrows to its top-k; the
# indexer is ModelPositions.indexer)
_HF_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked",
                   "indexed_attention": "full", "linear_attention": None, "recurrent": None, "cross_attention": None,
                   "conv": None}
# layer types whose layer does not attend over positions, and what it is instead (LayerPositions.mixer)
MIXERS = {"linear_attention": "linear attention", "recurrent": "recurrent", "cross_attention": "cross-attention",
          "conv": "convolution"}  # LFM2's short-convolution blocks
# the key that states the rotated part in dims rather than as a fraction of the head (GPT-J, CodeGen)
_DIMS_KEY = "rotary_dim"
_NOT_SCALING = ("rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")
# keys a per_layer_config may override that the reader reads model-wide: refused per layer (head_dim is read)
_PER_LAYER_READ = {"head_dim", "rope_parameters", "rope_scaling", "rope_theta", "partial_rotary_factor", "layer_types",
                   "sliding_window", "qk_rope_head_dim", "qk_nope_head_dim", "rotary_dim", "rope_interleave",
                   "use_qk_norm", "attention_chunk_size", "no_rope_layers", "query_pre_attn_scalar",
                   "num_attention_heads", "hidden_size", "global_head_dim"}


@dataclass(frozen=True)
class _Given:
    """A value read from a config, and where (config['key'], for errors that name the user's key)."""
    value: object
    where: str


@dataclass(frozen=True)
class _RopeDict:
    """One layer type's rope parameters: the dict, where it was read, the top-level key of its base when the dict
    has no rope_theta, and whether YaRN's truncate in it is read (transformers reads truncate from the top of
    rope_parameters only: inside a layer type's dict, given so or put there by the config class, it is not)."""
    params: dict
    where: str
    theta_key: str
    truncate_read: bool


@dataclass(frozen=True)
class _RopeRead:
    """What one rope dict says: the base, the rope type, the posenc scaling dict (None: plain RoPE), the
    partial-rotary setting, M-RoPE's mrope_section (None: absent) and a query scaling's beta (Ministral 3)."""
    base: float
    rope_type: str
    scaling: dict | None
    partial: _Given
    mrope_section: object
    query_beta: float | None


@dataclass(frozen=True, order=True)
class _HeadDims:
    """A layer's q/k head size, the dims RoPE may turn, and the first of them (MLA: after the nope dims)."""
    head_dim: int
    rope_dims: int
    start: int


@dataclass(frozen=True)
class _RopeSetting:
    """The rotation of one kind of RoPE layer: what LayerPositions states of it."""
    base: float
    rope_type: str
    scaling: dict | None
    inv_freq: object
    attention_factor: float
    rotary_dim: int
    query_scale: dict | None


@dataclass(frozen=True)
class _MRopeRead:
    """M-RoPE's sections (t, h, w) and whether they interleave (None: the family's code decides; no record), and
    the record's style (families.MRope; None: no record)."""
    section: tuple
    interleaved: bool | None
    style: str | None = None


class _Reader:
    """Typed access to one config dict, errors naming the key as config['key']."""

    def __init__(self, config: dict, family: Family, prefix: str):
        self.config, self.family, self.prefix = config, family, prefix
        self.defaults, self.defaults_used, self.notes = family.defaults, [], []

    def name(self, key: str) -> str:
        return f"{self.prefix}[{key!r}]"

    def present(self, key: str, older: str) -> str:
        """The key this config uses for a setting: `key`, or its older name (GPT-2/GPT-J's n_layer, n_head,
        n_positions) when only that one is there -- so errors name the user's key."""
        if key in self.config:
            return key
        return older if older in self.config or (older in self.defaults and key not in self.defaults) else key

    def get(self, key: str, default=None):
        """The config's value (an explicit null included, as transformers keeps it), else the family default."""
        if key in self.config:
            return self.config[key]
        if key in self.defaults and key not in self.defaults_used:
            self.defaults_used.append(key)
        return self.defaults.get(key, default)

    def int(self, key: str, default=None, *, required: bool = False):
        value = self.get(key, default)
        if value is None:
            if required:
                raise ValueError(f"{self.name(key)} is missing (needed to read the model's positions)")
            return None
        return _checks.positive_int(self.name(key), value)

    def number(self, key: str, default=None):
        value = self.get(key, default)
        return None if value is None else _checks.positive_float(self.name(key), value)

    def flag(self, key: str, default=False) -> bool:
        """A true/false setting; a number counts by its truth (Llama 4 Scout's config says
        attn_temperature_tuning: 4, which transformers treats as true)."""
        value = self.get(key, default)
        if value is None:
            return False
        if isinstance(value, bool) or (isinstance(value, numbers.Real) and math.isfinite(value)):
            return bool(value)
        raise TypeError(f"{self.name(key)} must be true or false, got {value!r}")

    def layer_list(self, key: str, length: int, allowed, unread: str | None = None) -> list | None:
        """config[key] as a list of one entry per layer (its first `length`), each one of `allowed`. unread: what
        a string entry outside `allowed` is, when it may be valid for the family's code though not read here."""
        value = self.config.get(key)
        if value is None:
            return None
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{self.name(key)} must be a list, got {type(value).__name__}")
        if len(value) != length:
            raise ValueError(f"{self.name(key)} must have one entry for each of the {length} layers "
                             f"(num_hidden_layers), got {len(value)}")
        for i, v in enumerate(value[:length]):
            # True == 1.0 == 1 in a set: only an entry of an allowed value's own type counts
            if not any(type(v) is type(a) and v == a for a in allowed):
                if unread is not None and isinstance(v, str):
                    raise ValueError(f"{self.name(key)}[{i}] is {v!r}, {unread} (read: {sorted(allowed)})")
                raise ValueError(f"{self.name(key)}[{i}] must be one of {sorted(allowed)}, got {v!r}")
        return list(value[:length])


def _text_config(config):
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a config.json read with json.load), got {type(config).__name__}")
    text, where = config.get("text_config"), "config['text_config']"
    thinker = config.get("thinker_config")
    if text is None and isinstance(thinker, dict) and "text_config" in thinker:
        # Qwen2.5-Omni / Qwen3-Omni: the text model sits two deep (transformers' get_text_config goes through
        # thinker_config)
        text, where = thinker["text_config"], "config['thinker_config']['text_config']"
    if text is None:
        return config, "config"
    if not isinstance(text, dict):
        raise TypeError(f"{where} must be a dict, got {type(text).__name__}")
    merged = dict(text)
    merged.setdefault("model_type", config.get("model_type"))
    return merged, where


def _rope_dicts(r: _Reader, layer_types: list) -> tuple[dict, list]:
    """{HF layer type: its _RopeDict}, notes."""
    notes = []
    legacy, modern = r.config.get("rope_scaling"), r.config.get("rope_parameters")
    for key, value in (("rope_scaling", legacy), ("rope_parameters", modern)):
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"{r.name(key)} must be a dict or null, got {type(value).__name__}")
    key = "rope_scaling" if legacy else "rope_parameters"
    if legacy and modern:
        notes.append(tr("rope_scaling and rope_parameters both given: rope_scaling wins, as in transformers",
                        "rope_scaling 和 rope_parameters 同时给出：与 transformers 一样，以 rope_scaling 为准"))
    params = legacy or modern or {}
    names = set(_HF_LAYER_TYPES)
    nested = bool(params) and set(params) <= names
    family = r.family
    if family.legacy_scaling is not None and not nested:
        return _legacy_per_layer_type(r, params, key, layer_types), notes
    if nested:
        out = {}
        for layer_type in set(layer_types):
            if layer_type not in params:
                raise ValueError(f"{r.name(key)} has no entry for the layer type {layer_type!r}")
            p = params[layer_type]
            if not isinstance(p, dict):
                raise TypeError(f"{r.name(key)}[{layer_type!r}] must be a dict, got {type(p).__name__}")
            out[layer_type] = _RopeDict(p, f"{r.name(key)}[{layer_type!r}]", "rope_theta", truncate_read=False)
        return out, notes
    theta_key = family.key("rope_theta")
    return {t: _RopeDict(params, r.name(key), theta_key, truncate_read=True) for t in set(layer_types)}, notes


def _legacy_per_layer_type(r: _Reader, params: dict, key: str, layer_types: list) -> dict:
    """A flat rope dict of a family whose config class converts it per layer type (Family.legacy_scaling): the
    listed layer types get it, the others plain RoPE at other_base_key's base or at the class's default base.
    A flat rope_parameters (the new name) is not converted by those classes: they keep it beside default per-type
    dicts and turn with those, so it is refused rather than read as something it does not do."""
    family, legacy, theta_key = r.family, r.family.legacy_scaling, r.family.key("rope_theta")
    if params and key == "rope_parameters":
        raise ValueError(f"{r.name(key)} is flat, but transformers' {family.name} config class converts only a "
                         f"legacy rope_scaling (with rope_theta) per layer type and keeps a flat rope_parameters "
                         f"beside its default per-layer-type dicts, unused: give rope_parameters per layer type "
                         f"({{'full_attention': {{...}}, 'sliding_attention': {{...}}}}) or the legacy rope_scaling")
    out = {}
    for layer_type in set(layer_types) | set(legacy.layer_types):  # the legacy dict checked though unused
        if layer_type in legacy.layer_types:
            out[layer_type] = _RopeDict(params, r.name(key), theta_key, truncate_read=False)  # a layer type's dict now
        elif legacy.other_base_key is not None:
            out[layer_type] = _RopeDict({"rope_type": "default"}, r.name(legacy.other_base_key), legacy.other_base_key,
                                        truncate_read=False)
        else:  # the config class's default base, whatever rope_theta says (OLMo 3)
            out[layer_type] = _RopeDict({"rope_type": "default", "rope_theta": family.defaults[theta_key]},
                                        tr(f"{family.name}'s default base for its {layer_type} layers",
                                           f"{family.name} 的 {layer_type} 层的默认底数"), theta_key,
                                        truncate_read=False)
    return out


def _scaling(r: _Reader, rope: _RopeDict, *, max_pos) -> _RopeRead:
    """What one HF rope parameters dict says (_RopeRead), checked, with the family's config-class rules applied."""
    family, text, p, where = r.family, r.config, _renamed_keys(r, rope), rope.where
    if "rope_theta" in family.fixed:  # a base written in the family's code (GPT-J: create_sinusoidal_positions)
        base = family.fixed["rope_theta"]
    elif p.get("rope_theta") is not None:
        base = _checks.positive_float(f"{where}['rope_theta']", p["rope_theta"])
    else:
        base = _checks.positive_float(r.name(rope.theta_key), r.get(rope.theta_key))
    partial = _Given(p.get("partial_rotary_factor"), f"{where}['partial_rotary_factor']")
    if "partial_rotary_factor" in family.fixed:  # the code sizes its frequencies by head_dim (HunYuan)
        partial = _Given(family.fixed["partial_rotary_factor"], tr(f"{family.name}'s code", f"{family.name} 的代码"))
    elif partial.value is None:
        partial = _partial_from_keys(r)
    given = {k: v for k, v in p.items() if k not in _NOT_SCALING + family.rope_dict.ignored_keys}
    beta, query_scale = None, family.query_scale
    if query_scale is not None and query_scale.on == "rope":  # Ministral 3: a query scaling in the rope dict
        beta = given.pop(query_scale.key, None)
        beta = None if beta is None else _checks.positive_float(f"{where}[{query_scale.key!r}]", beta, inclusive=True)
    if "type" in given:  # the legacy name; transformers reads rope_type first when both are there
        legacy = given.pop("type")
        given.setdefault("rope_type", legacy)
    rope_type = given.get("rope_type", "default")
    if rope_type in family.rope_dict.renamed_types:  # e.g. Phi3Config renames su and yarn to longrope
        given["rope_type"] = rope_type = family.rope_dict.renamed_types[rope_type]
    if rope_type == "mrope":  # Qwen2-VL / Qwen2.5-VL: plain frequencies, sections recorded
        given["rope_type"] = rope_type = "default"
    alpha_key = family.rope_dict.alpha_key
    alpha = given.pop(alpha_key, None) if alpha_key is not None else None
    if alpha and rope_type == "dynamic":  # HunYuan's ntk_alpha: fixed frequencies, its other keys unread
        alpha = _checks.positive_float(f"{where}[{alpha_key!r}]", alpha)
        given = {"rope_type": "ntk", "factor": alpha}
        rope_type = "ntk"
        r.notes.append(tr(f"{where}: 'dynamic' with {alpha_key} {alpha:g} is {family.name}'s fixed NTK-alpha (its "
                          f"compute_ntk_alpha_rope_parameters): base x {alpha:g}^(d/(d-2)) at every length, read as "
                          f"rope_type 'ntk' with factor {alpha:g}",
                          f"{where}：带 {alpha_key} {alpha:g} 的 'dynamic' 是 {family.name} 的固定 NTK-alpha（其 "
                          f"compute_ntk_alpha_rope_parameters）：任何长度下底数都乘以 {alpha:g}^(d/(d-2))，读作 "
                          f"rope_type 'ntk'、factor {alpha:g}"))
    l0 = "original_max_position_embeddings"
    if rope_type in ("llama3", "yarn", "longrope"):
        top = text.get(l0)  # a top-level L0 (Phi-3 keeps it there) wins, as in transformers
        given[l0] = top if top is not None else given.get(l0) or max_pos
        if given.get("factor") is None and rope_type in ("yarn", "longrope") and max_pos and given[l0]:
            given["factor"] = max_pos / given[l0]  # transformers' fallback for the factor
    if rope_type == "dynamic":
        # transformers 5's dynamic NTK starts from max_position_embeddings, whatever the dict says
        if max_pos is None:
            raise ValueError(f"{where}: dynamic NTK starts from {r.name('max_position_embeddings')}, which is missing")
        if given.get(l0) not in (None, max_pos):
            r.notes.append(tr(f"{where}['{l0}'] = {given[l0]} is not read by transformers' dynamic NTK, which starts "
                              f"from max_position_embeddings = {max_pos}: {max_pos} is used",
                              f"{where}['{l0}'] = {given[l0]} 不被 transformers 的 dynamic NTK 读取，它从 "
                              f"max_position_embeddings = {max_pos} 开始：这里用 {max_pos}"))
        given[l0] = max_pos
    if "truncate" in given and not rope.truncate_read:  # a layer type's own dict: transformers never reads it there
        ignored = given.pop("truncate")
        r.notes.append(tr(f"{where}['truncate'] = {ignored!r} is not read: transformers 5 reads YaRN's "
                          f"truncate from the top of rope_parameters only, and this dict is one layer type's "
                          f"(truncate stays true)",
                          f"{where}['truncate'] = {ignored!r} 不被读取：transformers 5 只从 rope_parameters "
                          f"的顶层读取 YaRN 的 truncate，而这个字典属于某一种层（truncate 仍为 true）"))
    scaling = None if rope_type == "default" and set(given) <= {"rope_type"} else given
    if scaling is not None:
        try:
            rope_type = rope_type_of(scaling)
            _validate(scaling)
        except (ValueError, TypeError) as error:
            raise type(error)(f"{where}: {error}") from error
        if rope_type in WHOLE_HEAD_TYPES:  # p-RoPE: the whole head turns; the fraction stops pairs, in the dict
            if partial.value is not None:
                scaling["partial_rotary_factor"] = _checks.positive_float(partial.where, partial.value)
            partial = _Given(1.0, partial.where)
        if rope_type == "default":
            scaling = None
    section = None if "mrope_section" in family.rope_dict.ignored_keys else p.get("mrope_section")
    return _RopeRead(base, rope_type, scaling, partial, section, beta)


def _renamed_keys(r: _Reader, rope: _RopeDict) -> dict:
    """The rope dict with the keys the family's config class renames (Family.rope_dict.renamed_keys: HunYuan-VL's
    xdrope_section -> mrope_section) under their new names; both names given must agree, as the class requires."""
    renamed = r.family.rope_dict.renamed_keys
    if not any(old in rope.params for old in renamed):
        return rope.params
    p = dict(rope.params)
    for old, new in renamed.items():
        if old in p:
            value = p.pop(old)
            if p.get(new) is not None and p[new] != value:
                raise ValueError(f"{rope.where}[{old!r}] = {value!r} and {rope.where}[{new!r}] = {p[new]!r} disagree "
                                 f"(the {r.family.name} config class reads {old} as {new})")
            p[new] = value
    return p


def _partial_from_keys(r: _Reader) -> _Given:
    """The partial-rotary setting outside the rope dict: the family's one key (GPT-J's rotary_dim, read as dims by
    _rotated_dims), or the first of its keys the config holds (Family.keys); a rotary_dim among several is the
    config class's legacy count of dims, divided by head_dim into the factor (MiniMaxM2Config)."""
    names = r.family.keys_of("partial_rotary_factor")
    if len(names) == 1:
        return _Given(r.get(names[0], None if names[0] == _DIMS_KEY else 1.0), r.name(names[0]))
    for key in names:
        if key not in r.config:
            continue
        if key != _DIMS_KEY or r.config[key] is None:
            return _Given(1.0 if r.config[key] is None else r.config[key], r.name(key))
        dims = _checks.positive_int(r.name(key), r.config[key])
        head_dim = r.get("head_dim")
        if head_dim is None:
            raise ValueError(f"{r.name(key)} = {dims} is divided by {r.name('head_dim')} into the partial rotary "
                             f"factor (the {r.family.name} config class), and head_dim is null")
        head_dim = _checks.positive_int(r.name("head_dim"), head_dim)
        return _Given(dims / head_dim, f"{r.name(key)} / {r.name('head_dim')}")
    return _Given(r.get(names[0], 1.0), r.name(names[0]))


def _rotated_dims(r: _Reader, rope_head_dim: int, partial: _Given) -> int:
    """How many dims turn: stated in dims (rotary_dim) or as a fraction of the head; errors name the user's key."""
    value, where = partial.value, partial.where
    if where == r.name(_DIMS_KEY) and r.family.key("partial_rotary_factor") == _DIMS_KEY:
        rotated = r.int(_DIMS_KEY, rope_head_dim)
        if rotated > rope_head_dim or rotated % 2:
            raise ValueError(f"{where} must be even and <= head_dim {rope_head_dim}, got {rotated}")
        return rotated
    try:
        return rotary_dim(rope_head_dim, value)
    except (ValueError, TypeError) as error:
        message = str(error).replace("partial_rotary_factor must", "must").replace("partial_rotary_factor=", "")
        raise type(error)(f"{where}: {message}") from error


def _score_scale(r: _Reader, head_dim: int, scaling: dict | None) -> float:
    if "score_scale" in r.family.fixed:  # written in the code (Gemma 4: 1.0)
        return r.family.fixed["score_scale"]
    if r.family.score_scale_key:  # Gemma: 1/sqrt(query_pre_attn_scalar)
        return float(r.number(r.family.score_scale_key)) ** -0.5
    scale = head_dim ** -0.5
    if r.family.mla_mscale and scaling is not None and scaling.get("mscale_all_dim"):
        # DeepSeek's softmax scale takes YaRN's mscale squared (its yarn_get_mscale with mscale_all_dim)
        scale *= yarn_attention_factor(scaling["factor"], scaling["mscale_all_dim"]) ** 2
    return scale


# ----------------------------------------------------------------------------- which layer is which
def _no_rope_flags(r: _Reader, n: int) -> list:
    """no_rope_layers[i] = 1: layer i USES RoPE (transformers' naming); default every no_rope_layer_interval-th
    layer is NoPE. The chunked rule's config class (Llama4TextConfig) takes an empty list as "not given"."""
    given = r.config.get("no_rope_layers")
    empty_is_absent = _FLAG_RULES[r.family.layers]
    if given is not None and not (isinstance(given, (list, tuple)) and len(given) == 0 and empty_is_absent):
        return r.layer_list("no_rope_layers", n, {0, 1})
    interval = r.int("no_rope_layer_interval", 4)
    return [int((i + 1) % interval != 0) for i in range(n)]


def _every(r, n: int, pattern: Pattern, hit: str, rest: str) -> list:
    """Every k-th layer (1-based) is `hit`, the others `rest` (Gemma 3's sliding_window_pattern ...)."""
    k = r.int(pattern.key, pattern.default)
    return [hit if (i + 1) % k == 0 else rest for i in range(n)]


def _window_if_used(r, n):
    sliding = r.get("sliding_window") is not None and r.flag("use_sliding_window", True)
    return ["sliding_attention" if sliding else "full_attention"] * n


def _max_window_layers(r, n):
    window = r.get("sliding_window") if r.flag("use_sliding_window") else None
    first = r.int("max_window_layers", 0)
    return ["sliding_attention" if window is not None and i >= first else "full_attention" for i in range(n)]


def _no_rope_flags_sliding(r, n):  # SmolLM3: a window on the NoPE layers when use_sliding_window
    sliding = r.flag("use_sliding_window") and r.get("sliding_window") is not None
    return ["sliding_attention" if sliding and not f else "full_attention" for f in _no_rope_flags(r, n)]


def _layer_types_required(r, n):
    raise ValueError(f"{r.name('layer_types')} is missing: the {r.family.name} family's pattern of layer types is "
                     f"not read without it")


def _block_types(r, n):  # RecurrentGemma: block_types repeated over the layers
    blocks = r.get("block_types")
    if not isinstance(blocks, (list, tuple)) or not blocks or any(b not in ("recurrent", "attention") for b in blocks):
        raise ValueError(f"{r.name('block_types')} must be a non-empty list of 'recurrent'/'attention', got {blocks!r}")
    return ["recurrent" if blocks[i % len(blocks)] == "recurrent" else "sliding_attention" for i in range(n)]


def _kimi_linear(r, n):
    """Kimi Linear: its checkpoint's linear_attn_config lists full_attn_layers and kda_layers (1-based); without
    them every 4th layer from layer 4 (0-based) is full attention (KimiLinearConfig.__post_init__)."""
    given = r.get("linear_attn_config") or {}
    if not isinstance(given, dict):
        raise TypeError(f"{r.name('linear_attn_config')} must be a dict, got {type(given).__name__}")
    if "full_attn_layers" not in given or "kda_layers" not in given:
        return ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(n)]
    out = [None] * n
    for key, layer_type in (("kda_layers", "linear_attention"), ("full_attn_layers", "full_attention")):
        listed = given[key]
        if not isinstance(listed, (list, tuple)) or any(isinstance(i, bool) or not isinstance(i, int)
                                                        or not 1 <= i <= n for i in listed):
            raise ValueError(f"{r.name('linear_attn_config')}[{key!r}] must list layer numbers 1 .. {n} "
                             f"(num_hidden_layers, counted from 1), got {listed!r}")
        for i in listed:
            out[i - 1] = layer_type
    if None in out:
        raise ValueError(f"{r.name('linear_attn_config')}: layer {out.index(None) + 1} (counted from 1) is in neither "
                         f"full_attn_layers nor kda_layers")
    return out


def _rope_theta_flags(r, n) -> list:
    """Muse Glimmer: layer_rope_theta, one base per layer, 0 for a NoPE layer. Its code reads only whether an entry
    is 0 (MuseGlimmerTextModel passes position_embeddings=None there) and turns every other layer at
    rope_parameters' rope_theta. Without the key: NoPE on every 4th layer counted back from the last (its config
    class), the layers that are full attention by default. Notes its query factor (qk_scale_factor)."""
    factor = r.number("qk_scale_factor")
    r.notes.append(tr(f"q and k are RMS-normalised (no learned scale) before RoPE, then q is multiplied by "
                      f"{r.name('qk_scale_factor')} = {factor:g}: the softmax sees {factor:g} x score_scale x the "
                      f"normalised q.k (score_scale is the scaling the code hands to attention)",
                      f"q 和 k 在 RoPE 之前做 RMS 归一化（无可学习缩放），然后 q 乘以 {r.name('qk_scale_factor')} = "
                      f"{factor:g}：softmax 看到的是 {factor:g} x score_scale x 归一化后的 q·k（score_scale 是代码交给"
                      f"注意力函数的缩放）"))
    given = r.config.get("layer_rope_theta")
    if given is None:
        return [int((n - 1 - i) % 4 != 0) for i in range(n)]
    if not isinstance(given, (list, tuple)) or len(given) != n:
        raise ValueError(f"{r.name('layer_rope_theta')} must be a list of one base (0: NoPE) for each of the {n} "
                         f"layers (num_hidden_layers), got {given!r}")
    flags = [int(_checks.positive_float(f"{r.name('layer_rope_theta')}[{i}]", v, inclusive=True) > 0)
             for i, v in enumerate(given)]
    if any(flags):
        r.notes.append(tr(f"{r.name('layer_rope_theta')}: only whether an entry is 0 (NoPE) is read; transformers' "
                          f"Muse Glimmer code turns every other layer at rope_parameters' rope_theta, whatever its "
                          f"entry says",
                          f"{r.name('layer_rope_theta')}：只读每项是否为 0（NoPE）；transformers 的 Muse Glimmer "
                          f"代码让其余各层都按 rope_parameters 的 rope_theta 旋转，不管该项写的是多少"))
    return flags


def _cross_attention_layers(r, n):  # Mllama: the listed layers attend to the image tokens
    listed = r.get("cross_attention_layers") or []
    if not isinstance(listed, (list, tuple)) or any(isinstance(i, bool) or not isinstance(i, int) for i in listed):
        raise TypeError(f"{r.name('cross_attention_layers')} must be a list of layer indices, got {listed!r}")
    return ["cross_attention" if i in listed else "full_attention" for i in range(n)]


# rule name (Family.layers) -> HF layer type of each of n layers, when the config has no layer_types
LAYER_RULES = {
    "uniform": lambda r, n: ["full_attention"] * n,
    "window_if_used": _window_if_used,
    "window_everywhere": lambda r, n: ["full_attention" if r.get("sliding_window") is None
                                       else "sliding_attention"] * n,
    "alternate_sliding": lambda r, n: ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)],
    "every_kth_full": lambda r, n: _every(r, n, r.family.pattern, "full_attention", "sliding_attention"),
    # Gemma 4: every 6th layer full, and the last layer forced to full (Gemma4TextConfig.__post_init__)
    "every_kth_full_last_full": lambda r, n: _every(r, n - 1, r.family.pattern, "full_attention",
                                                    "sliding_attention") + ["full_attention"],
    "full_interval": lambda r, n: _every(r, n, Pattern("full_attention_interval", 4), "full_attention",
                                         "linear_attention"),
    "every_other_linear": lambda r, n: ["full_attention" if i % 2 == 0 else "linear_attention" for i in range(n)],
    "max_window_layers": _max_window_layers,
    "no_rope_flags": _no_rope_flags_sliding,
    "no_rope_flags_chunked": lambda r, n: ["chunked_attention" if f else "full_attention"
                                           for f in _no_rope_flags(r, n)],
    "flint_pattern": lambda r, n: ["full_attention" if i < 2 or i % 4 == 1 or i == n - 1 else "sliding_attention"
                                   for i in range(n)],
    "layer_types_required": _layer_types_required,
    "block_types": _block_types,
    "cross_attention_layers": _cross_attention_layers,
    "kimi_linear": _kimi_linear,
    # Muse Glimmer: full attention on every 4th layer counted back from the last (MuseGlimmerTextConfig)
    "muse_glimmer": lambda r, n: ["full_attention" if (n - 1 - i) % 4 == 0 else "sliding_attention" for i in range(n)],
    "all_indexed": lambda r, n: ["indexed_attention"] * n,  # DeepSeek-V3.2: every layer DSA (its config class)
}
# the rules that also say per layer whether RoPE is used (no_rope_layers) -> whether their config class takes an
# empty no_rope_layers as not given (Llama4TextConfig does; SmolLM3Config keeps it, one entry short per layer)
_FLAG_RULES = {"no_rope_flags": False, "no_rope_flags_chunked": True}


def _layers(r: _Reader, n: int) -> tuple[list, list]:
    """(rope flags, HF layer types) for n layers: layer_types if given, else the family's rule; then which of
    them rotate (the family's rope_layers, no_rope_layers)."""
    family = r.family
    types = r.layer_list("layer_types", n, _HF_LAYER_TYPES, unread=(
        "a layer type this reader does not read: what such a layer attends to is in the family's code (for example "
        "DeepSeek-V4's compressed layers: a sliding window plus keys each compressed from a block of earlier tokens)"))
    if types is None:
        types = LAYER_RULES[family.layers](r, n)
    flags = (_no_rope_flags(r, n) if family.layers in _FLAG_RULES
             else _rope_theta_flags(r, n) if family.layers == "muse_glimmer" else [1] * n)
    rotating = None if family.rope_layers is None else family.rope_layers.layer_types
    if rotating is not None and family.rope_layers.all_without_window and r.get("sliding_window") is None:
        rotating = None
    flags = [int(f and _HF_LAYER_TYPES[t] is not None and (rotating is None or t in rotating))
             for f, t in zip(flags, types)]
    return flags, types


# ----------------------------------------------------------------------------- the whole config
def _head_dims(r: _Reader) -> _HeadDims:
    """The q/k head dim, the dims RoPE may turn and where they start, as the family's code sizes its heads."""
    heads = r.int(r.present("num_attention_heads", "n_head"), required=True)
    if r.family.head_dim == "mla":  # MLA: q/k heads of nope + rope dims, RoPE on the rope slice only
        rope, nope = r.int("qk_rope_head_dim", required=True), r.int("qk_nope_head_dim", required=True)
        # the rotary embedding sizes its frequencies by head_dim x partial (families.py)
        return _HeadDims(head_dim=nope + rope, rope_dims=r.int("head_dim") or rope, start=nope)
    head_dim = None
    if r.family.head_dim == "head_dim":  # the first of the family's head-size keys the config holds (JetMoE's two)
        names = r.family.keys_of("head_dim")
        head_dim = r.int(next((k for k in names if k in r.config), names[0]))
    if head_dim is None:  # transformers: hidden_size // num_attention_heads
        key = "hidden_size" if "hidden_size" in r.config or "n_embd" not in r.config else "n_embd"
        hidden = r.int(key, required=True)
        if hidden % heads:
            heads_key = "num_attention_heads" if "num_attention_heads" in r.config or "n_head" not in r.config \
                else "n_head"
            raise ValueError(f"{r.name(key)} = {hidden} must be divisible by {r.name(heads_key)} = {heads} "
                             f"(the head size is {key} / {heads_key} when head_dim is not given)")
        head_dim = hidden // heads
    return _HeadDims(head_dim=head_dim, rope_dims=head_dim, start=0)


def _layout(r: _Reader, model_type: str) -> tuple:
    """(layout or None, where it comes from)."""
    family = r.family
    if family.layout_key is not None:
        key = family.layout_key.key
        return ("interleaved" if r.flag(key, family.layout_key.default) else "half"), tr(
            f"{family.name}'s code, switched by {r.name(key)}", f"{family.name} 的代码，由 {r.name(key)} 切换")
    if family.layout is None:
        return None, tr(f"config.json does not say which layers rotate q and k or which dims pair; transformers' "
                        f"modeling_{model_type}.py does (its attention and rotate_half / apply_rotary_pos_emb): "
                        f"configs.measure(config) reads it from that code",
                        f"config.json 不说明哪些层旋转 q 和 k、哪些维度配对；transformers 的 modeling_{model_type}.py "
                        f"才说明（它的注意力和 rotate_half / apply_rotary_pos_emb）：configs.measure(config) "
                        f"从那段代码里测出来")
    return family.layout, tr(f"the {family.name} family record", f"{family.name} 系列记录")


def _layer_head_dims(r: _Reader, layer_types: list) -> list:
    """Per layer its _HeadDims: the model's (`_head_dims`), or a layer's own
    head_dim from per_layer_config (transformers' sparse per-layer overrides, keyed by the layer index; what its
    to_dict writes) or from the family's head_dim_keys (Gemma 4's global_head_dim for full-attention layers)."""
    n, shared = len(layer_types), _head_dims(r)
    by_type = {own.layer_type: r.int(own.key, own.default) for own in r.family.head_dim_keys
               if own.layer_type in layer_types}
    out = [_HeadDims(by_type[t], by_type[t], 0) if t in by_type else shared for t in layer_types]
    given = r.config.get("per_layer_config")
    if given is None:
        return out
    if not isinstance(given, dict):
        raise TypeError(f"{r.name('per_layer_config')} must be a dict {{layer index: {{key: value}}}}, "
                        f"got {type(given).__name__}")
    for key, overrides in given.items():
        where = f"{r.name('per_layer_config')}[{key!r}]"
        index = int(key) if isinstance(key, int) or (isinstance(key, str) and key.isdigit()) else None
        if index is None or not 0 <= index < n or not isinstance(overrides, dict):
            raise ValueError(f"{where}: per_layer_config maps a layer index 0 .. {n - 1} (num_hidden_layers) to a dict "
                             f"of overrides, got {key!r}: {overrides!r}")
        for name in sorted(set(overrides) & _PER_LAYER_READ - {"head_dim"}):
            raise ValueError(f"{where}[{name!r}]: a per-layer {name} is not read (only head_dim is)")
        if "head_dim" in overrides:
            if r.family.head_dim != "head_dim":
                raise ValueError(f"{where}['head_dim']: the {r.family.name} family does not size its heads by head_dim")
            size = _checks.positive_int(f"{where}['head_dim']", overrides["head_dim"])
            out[index] = _HeadDims(size, size, 0)
    return out


def _rope_settings(r: _Reader, params: dict, wanted: set, max_pos) -> tuple:
    """{(layer type, _HeadDims): _RopeSetting}, an _MRopeRead or None, notes: the frequencies of every kind of RoPE
    layer."""
    family, settings, mrope, notes = r.family, {}, None, []
    norm_key = family.qk_norm_after_rope
    normed_after = norm_key == "always" or (norm_key is not None and r.flag(norm_key, False))
    for layer_type, dims in sorted(wanted):
        rope = params[layer_type]
        where, read = rope.where, _scaling(r, rope, max_pos=max_pos)
        section, scaling = read.mrope_section, read.scaling
        rotated = _rotated_dims(r, dims.rope_dims, read.partial)
        if family.head_dim == "mla" and rotated != r.int("qk_rope_head_dim"):
            raise ValueError(f"{r.name('head_dim')} x the partial rotary factor gives {rotated} rotary dims, but "
                             f"{r.name('qk_rope_head_dim')} is {r.int('qk_rope_head_dim')}: they must agree")
        try:
            inv_freq, factor = rope_inv_freq(rotated, base=read.base, scaling=scaling)
        except (ValueError, TypeError) as error:
            raise type(error)(f"{where}: {error}") from error
        if family.mrope is not None or section is not None:
            style = None if family.mrope is None else family.mrope.style
            if section is None and not family.mrope.section:
                raise ValueError(f"{where}['mrope_section'] is missing: the {family.name} code takes its axes from it "
                                 f"and has no default")
            named = f"{where}['mrope_section']" + ("" if section is not None else tr(
                f" (absent: the {family.name} code's default {list(family.mrope.section)})",
                f"（缺省：{family.name} 代码里的默认值 {list(family.mrope.section)}）"))
            section = family.mrope.section if section is None else section
            mrope = _MRopeRead(_mrope_section(section, rotated, named, any_axes=style == "dims"),
                               None if style in (None, "dims") else style == "interleaved", style)
        if normed_after and factor != 1:  # q and k normalised after the rotation: a factor on cos/sin cancels
            notes.append(tr(f"{where}: attention factor {float(factor):.6g} on cos/sin, cancelled by the q/k "
                            f"normalisation after RoPE: reported as 1",
                            f"{where}：cos/sin 上的注意力因子 {float(factor):.6g} 被 RoPE 之后对 q/k 的归一化抵消，"
                            f"报告为 1"))
            factor = 1.0
        query_scale = None
        if read.query_beta is not None:  # Ministral 3: q * (1 + beta ln(1 + floor(m / L0))) after RoPE
            l0 = rope.params.get("original_max_position_embeddings")
            if l0 is None:
                raise ValueError(f"{where}[{family.query_scale.key!r}] needs "
                                 f"{where}['original_max_position_embeddings'] (the query scaling's step length), "
                                 f"which is missing")
            query_scale = {"floor_scale": _checks.positive_float(f"{where}['original_max_position_embeddings']", l0),
                           "attn_scale": read.query_beta, "offset": 0}
        settings[layer_type, dims] = _RopeSetting(read.base, read.rope_type, scaling, inv_freq, float(factor), rotated,
                                                  query_scale)
    return settings, mrope, notes


def from_hf_config(config: dict) -> ModelPositions:
    """Read a Hugging Face config.json (as a dict) into a `ModelPositions`: what each layer does with positions.

        positions = from_hf_config(json.load(open("config.json")))
        print(positions.table())                  # one line per kind of layer
        positions.layer(5).base, positions.nope_layers, positions.layer(0).inv_freq

    A multimodal wrapper (Gemma 3, Llama 4, Qwen2.5-VL with text_config) is read through its text_config.
    An unknown rope_type, an unknown key inside rope_parameters/rope_scaling, or a key of the wrong type
    raises a ValueError/TypeError naming it (e.g. "config['rope_scaling']: scaling['rope_type'] must be one
    of ..."). A model_type without a family record gets layout None ("unknown"), never a guess.
    """
    check_sizes(config)
    text, prefix = _text_config(config)
    model_type = text.get("model_type") or "unknown"
    if not isinstance(model_type, str):
        raise TypeError(f"{prefix}['model_type'] must be a string, got {model_type!r}")
    family = FAMILIES.get(model_type, GENERIC)
    r = _Reader(text, family, prefix)
    notes = [] if family is not GENERIC else [tr(
        f"model_type {model_type!r} has no family record: the keys every family shares are read (head_dim, "
        f"partial_rotary_factor, rope_parameters, as transformers' shared rope functions read them); what only its "
        f"code decides (which layers rotate, the layout, the attention pattern without layer_types) is not known "
        f"from the config",
        f"model_type {model_type!r} 没有模型系列记录：只读取各系列共有的键（head_dim、partial_rotary_factor、"
        f"rope_parameters，按 transformers 共用的 RoPE 函数的读法）；只有代码才决定的事（哪些层旋转、布局、"
        f"没有 layer_types 时的注意力模式）无法从配置得知")]
    if family is GENERIC and any(key in text for key in _MLA_KEYS):
        found = ", ".join(k for k in _MLA_KEYS if k in text)
        notes.append(tr(
            f"latent-attention (MLA) keys ({found}): the q/k head size and the "
            f"dims that turn are in the code (DeepSeek's turns the last qk_rope_head_dim of qk_nope_head_dim + "
            f"qk_rope_head_dim dims; Kimi Linear's none), not hidden_size // heads: rotary_dims unknown",
            f"潜在注意力（MLA）的键（{found}）：q/k 的头维度和旋转哪些维由代码决定"
            f"（DeepSeek 旋转 qk_nope_head_dim + qk_rope_head_dim 维中的最后 qk_rope_head_dim 维；"
            f"Kimi Linear 不旋转），不是 hidden_size // 头数：旋转维度未知"))
    n = r.int(r.present("num_hidden_layers", "n_layer"), required=True)
    max_pos = r.int(r.present("max_position_embeddings", "n_positions"))
    positions = family.positions
    if isinstance(positions, ChosenBy):  # ESM: position_embedding_type chooses
        value = r.get(positions.key, positions.default)
        if value not in positions.choices:
            raise ValueError(f"{r.name(positions.key)} must be one of {sorted(positions.choices)}, got {value!r}")
        positions = positions.choices[value]
    if positions == "learned absolute":  # BERT, GPT-2, ESM by default: a learned table added to the input
        head_dim = _head_dims(r).head_dim
        layers = tuple(_no_rope_layer(i, head_dim, head_dim ** -0.5, "full", None, causal=family.causal)
                       for i in range(n))
        return ModelPositions(model_type=model_type, family=family.name, position_encoding="learned absolute",
                              num_layers=n, max_position_embeddings=max_pos, original_max_position_embeddings=None,
                              layers=layers, defaults_used=tuple(r.defaults_used),
                              notes=(tr(f"learned absolute positions: a table of {max_pos} rows added to the input; "
                                        f"no position in attention",
                                        f"可学习位置嵌入：一张 {max_pos} 行的表，加在输入上；"
                                        f"注意力里没有位置信息"),))
    layout, layout_from = _layout(r, model_type)
    for refusal in family.refused:
        if r.get(refusal.key) in refusal.values:
            raise ValueError(f"{r.name(refusal.key)} = {r.get(refusal.key)!r} is not read: {refusal.why}")
    flags, layer_types = _layers(r, n)
    dims = _layer_head_dims(r, layer_types)  # per layer: its _HeadDims
    params, more = _rope_dicts(r, [t for t, f in zip(layer_types, flags) if f])
    notes += more
    wanted = {(t, dims[i]) for i, (t, f) in enumerate(zip(layer_types, flags)) if f}
    wanted |= {(t, _head_dims(r)) for t in params if t not in {t for t, _ in wanted}}  # checked though unused
    settings, mrope, more = _rope_settings(r, params, wanted, max_pos)
    notes += more
    layers = _layer_list(r, flags, layer_types, dims, settings, layout, mrope, _unknown_columns(r, []))
    indexer = _indexer(r, layers)
    notes += r.notes + _model_notes(r, layers, mrope, indexer)
    original = text.get("original_max_position_embeddings")
    if original is None:
        for setting in settings.values():
            scaling = setting.scaling
            if scaling and scaling.get("original_max_position_embeddings") and scaling.get("rope_type") != "dynamic":
                original = scaling["original_max_position_embeddings"]
    if original is not None:
        original = _checks.positive_int(r.name("original_max_position_embeddings"), original)
    # a stack whose attention layers never rotate (Kimi Linear: MLA without RoPE) has no positions in attention
    encoding = "rope" if any(flags) or family is GENERIC else "none"
    return ModelPositions(model_type=model_type, family=family.name, position_encoding=encoding, num_layers=n,
                          max_position_embeddings=max_pos, original_max_position_embeddings=original,
                          layers=tuple(layers), mrope_section=None if mrope is None else mrope.section,
                          notes=tuple(notes), defaults_used=tuple(r.defaults_used), layout_from=layout_from,
                          mrope_interleaved=None if mrope is None else mrope.interleaved,
                          unknown=_unknown_columns(r, layers), indexer=indexer)


def _no_rope_layer(index: int, head_dim: int, score_scale: float, attention: str, window, **more) -> LayerPositions:
    """A layer that does not turn q and k (NoPE, learned absolute positions, a layer without positions)."""
    return LayerPositions(index=index, rope=False, head_dim=head_dim, rotary_dims=(0, 0), layout=None, base=None,
                          rope_type=None, scaling=None, inv_freq=None, attention_factor=1.0, score_scale=score_scale,
                          attention=attention, window=window, **more)


def _layer_list(r: _Reader, flags: list, layer_types: list, dims: list, settings: dict, layout,
                mrope: _MRopeRead | None, unknown: tuple) -> list:
    """One LayerPositions per layer: its attention (window, chunk), and its rotation from `settings` or none (a
    NoPE layer, with Llama 4's temperature; a layer without positions of its own kind)."""
    family = r.family
    chunk = r.int("attention_chunk_size") if "chunked_attention" in layer_types else None
    query_scale = family.query_scale
    tuning = query_scale is not None and query_scale.on == "nope" and r.flag(query_scale.key, True)
    temperature = {"floor_scale": r.number("floor_scale"), "attn_scale": r.number("attn_scale")} if tuning else None
    window = r.int(family.key("sliding_window")) if "sliding_attention" in layer_types else None
    layers = []
    for i, (flag, layer_type) in enumerate(zip(flags, layer_types)):
        attention = _HF_LAYER_TYPES[layer_type] or "full"
        size = {"full": None, "sliding": window, "chunked": chunk}[attention]
        mixer = MIXERS.get(layer_type, "attention")
        head_dim, start = dims[i].head_dim, dims[i].start
        if flag:
            setting = settings[layer_type, dims[i]]
            layers.append(LayerPositions(
                index=i, rope=True, head_dim=head_dim, rotary_dims=(start, start + setting.rotary_dim),
                layout=layout, base=setting.base, rope_type=setting.rope_type, scaling=setting.scaling,
                inv_freq=setting.inv_freq, attention_factor=setting.attention_factor,
                score_scale=_score_scale(r, head_dim, setting.scaling), attention=attention, window=size,
                layer_type=layer_type, direction=family.fixed.get("direction", 1), causal=family.causal,
                temperature=setting.query_scale, mrope_section=None if mrope is None else mrope.section,
                mrope_interleaved=None if mrope is None else mrope.interleaved, unknown=unknown))
        else:
            layers.append(_no_rope_layer(i, head_dim, _score_scale(r, head_dim, None), attention, size,
                                         temperature=temperature if mixer == "attention" else None,
                                         layer_type=layer_type, mixer=mixer, causal=family.causal, unknown=unknown))
    return layers


def _indexer(r: _Reader, layers: list) -> LayerPositions | None:
    """DeepSeek-V3.2's DSA indexer (Family.indexer): in every layer, q and k of index_head_dim dims whose first
    (HY-V4: last) qk_rope_head_dim dims turn with the layer's own cos/sin, in the indexer's layout; its scores are
    scaled by index_head_dim^-1/2 (DeepseekV32Indexer.softmax_scale)."""
    if r.family.indexer is None:
        return None
    main = next((layer for layer in layers if layer.rope), None)
    if main is None:
        return None
    size, rope = r.int("index_head_dim", required=True), main.rotary_dim
    if size < rope:
        raise ValueError(f"{r.name('index_head_dim')} = {size} must be at least {r.name('qk_rope_head_dim')} = {rope} "
                         f"(the indexer turns the first qk_rope_head_dim dims of its heads)")
    turned = (0, rope) if r.family.indexer.where == "first" else (size - rope, size)
    return LayerPositions(index=main.index, rope=True, head_dim=size, rotary_dims=turned,
                          layout=r.family.indexer.layout, base=main.base, rope_type=main.rope_type,
                          scaling=main.scaling, inv_freq=main.inv_freq,
                          attention_factor=main.attention_factor, score_scale=size ** -0.5, attention="full",
                          window=None, layer_type=main.layer_type, direction=main.direction, causal=main.causal)


def _model_notes(r: _Reader, layers: list, mrope: _MRopeRead | None, indexer=None) -> list:
    """The report's notes on what the layers' columns do not show: M-RoPE's sections and how they are laid out,
    a query scaling by position (Ministral 3), a q/k normalisation after RoPE, a sparse-attention indexer's own
    RoPE (DeepSeek-V3.2)."""
    family, notes = r.family, []
    if indexer is not None:
        start, stop = indexer.rotary_dims
        main_layout = layers[indexer.index].layout
        unlike = (tr(f", not the {main_layout} pairs of the layout column", f"，不是布局列的 {main_layout} 配对")
                  if indexer.layout != main_layout else "")
        heads, top = r.int('index_n_heads', 1), r.int('index_topk', 1)
        notes.append(tr(f"indexer (DeepSeek Sparse Attention, in every layer): its own q and k ({heads} query heads "
                        f"of {indexer.head_dim} dims, one key head) turn dims {start}:{stop} with the same "
                        f"frequencies, in {indexer.layout} pairs{unlike}; their scores only choose the top {top} keys "
                        f"each query attends to (ModelPositions.indexer)",
                        f"索引器（DeepSeek 稀疏注意力，每层都有）：它自己的 q 和 k（{heads} 个查询头，每头 "
                        f"{indexer.head_dim} 维，一个键头）用同样的频率旋转第 {start}:{stop} 维，但按 {indexer.layout} "
                        f"配对{unlike}；它的分数只决定每个查询关注哪 {top} 个键（ModelPositions.indexer）"))
    if mrope is not None and mrope.style == "dims":
        section = list(mrope.section)
        notes.append(tr(f"mrope_section {section} ({family.name}'s XD-RoPE): {len(section)} position axes, section i "
                        f"covering 2 x s_i dims of the doubled frequency table with axis i mod {len(section)}, so the "
                        f"two dims of a pair may read different axes; for text tokens every axis holds the same "
                        f"position, so the frequencies above apply (image positions are not modelled here)",
                        f"mrope_section {section}（{family.name} 的 XD-RoPE）：{len(section)} 个位置轴，第 i 段覆盖"
                        f"加倍频率表的 2 x s_i 维，取第 i mod {len(section)} 个轴，所以一对中的两维可能读不同的轴；"
                        f"文本 token 的各轴位置相同，所以上面的频率照样适用（这里不建模图像位置）"))
    elif mrope is not None:
        section = list(mrope.section)
        how = {True: tr("interleaved (pair i takes t, h, w in turn, as Qwen3-VL)",
                        "交错（第 i 对依次取 t、h、w，如 Qwen3-VL）"),
               False: tr("in chunks t | h | w (as Qwen2-VL)", "分块 t | h | w（如 Qwen2-VL）"),
               None: tr("chunked or interleaved: unknown (the family's modeling code decides)",
                        "分块还是交错：未知（由该系列的建模代码决定）")}[mrope.interleaved]
        notes.append(tr(f"mrope_section {section}: pairs split into temporal/height/width sections (M-RoPE), "
                        f"{how}; for text tokens all three positions are equal, so the frequencies above apply",
                        f"mrope_section {section}：频率对分成时间、高度、宽度三段（M-RoPE），{how}；"
                        f"文本 token 的三个位置相同，所以上面的频率照样适用"))
    scaled = [layer for layer in layers if layer.rope and layer.temperature is not None]
    if scaled:
        t = scaled[0].temperature
        notes.append(tr(f"{family.query_scale.key} {t['attn_scale']:g}: every query is multiplied, after RoPE, by "
                        f"1 + {t['attn_scale']:g} ln(1 + floor(m / {t['floor_scale']:g})) at position m: a query "
                        f"scaling that grows with the position (layer.query_scale), not a change of the rotation",
                        f"{family.query_scale.key} {t['attn_scale']:g}：每个查询在 RoPE 之后乘以 "
                        f"1 + {t['attn_scale']:g} ln(1 + floor(m / {t['floor_scale']:g}))（m 为位置）：随位置增大的"
                        f"查询缩放（layer.query_scale），不是旋转的改变"))
    norm_key = family.qk_norm_after_rope
    if norm_key == "always" or (norm_key is not None and r.flag(norm_key, False)):
        notes.append(tr(f"q and k are normalised after RoPE on the RoPE layers ({norm_key}; an attention factor on "
                        f"cos/sin cancels there)",
                        f"RoPE 层在旋转之后对 q 和 k 做归一化（{norm_key}；cos/sin 上的注意力因子在那里被抵消）"))
    return notes


# keys of multi-head latent attention (DeepSeek's MLA): with them the head size and the rotated slice are the code's
# (qk_nope_head_dim + qk_rope_head_dim, RoPE on the last qk_rope_head_dim, or no RoPE at all: Kimi Linear), not
# hidden_size // heads
_MLA_KEYS = ("qk_rope_head_dim", "qk_nope_head_dim", "kv_lora_rank")
_MLA_UNKNOWN = ("rotary_dims", "longest_wavelength")


def _unknown_columns(r: _Reader, layers: list) -> tuple:
    """The report's columns that only a family's code decides, for a model_type without a record: which layers
    rotate, the layout, the q.k scale and a query temperature; the attention pattern unless layer_types states
    it; an attention factor on cos/sin (a q/k normalisation after RoPE would cancel it, Hunyuan, NanoChat); with
    MLA keys (qk_rope_head_dim, kv_lora_rank ...) the head size and which dims turn, and so the wavelengths."""
    if r.family is not GENERIC:
        return ()
    return (("rope", "layout", "score_scale", "temperature")
            + (() if r.config.get("layer_types") is not None else ("attention",))
            + (("attention_factor",) if any(layer.attention_factor != 1 for layer in layers) else ())
            + (_MLA_UNKNOWN if any(key in r.config for key in _MLA_KEYS) else ()))


def _mrope_section(section, rotated: int, where: str, *, any_axes: bool = False) -> tuple:
    """M-RoPE's split of the rotary pairs into (temporal, height, width): three non-negative ints adding up to
    the number of pairs, as transformers' Qwen-VL code needs them; any_axes: any number of axes (HunYuan-VL's
    XD-RoPE), their sum again the number of pairs."""
    if any_axes and isinstance(section, (list, tuple)) and section:
        pass
    elif not isinstance(section, (list, tuple)) or len(section) != 3:
        raise ValueError(f"{where} must be a list of 3 section sizes (temporal, height, width), got {section!r}")
    for v in section:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError(f"{where} must hold non-negative integers, got {section!r}")
    if sum(section) != rotated // 2:
        raise ValueError(f"{where} must add up to the number of pairs {rotated // 2}, got {list(section)}")
    return tuple(int(v) for v in section)


def read_pasted(pasted) -> dict:
    """A pasted config.json (a string) or the dict itself -> the dict. Text that is not JSON raises one ValueError
    line saying where (json's own line and column), not a traceback through the json module."""
    if isinstance(pasted, dict):
        check_sizes(pasted)
        return pasted
    if not isinstance(pasted, str):
        raise TypeError(f"pasted must be the config.json text or a dict, got {type(pasted).__name__}")
    config = _parse_json(pasted)
    if not isinstance(config, dict):
        raise TypeError(tr(f"the pasted JSON must be an object {{...}} (a config.json), got {type(config).__name__}",
                           f"粘贴的 JSON 必须是一个对象 {{...}}（即 config.json），得到的是 {type(config).__name__}"))
    check_sizes(config)
    return config


def _parse_json(pasted: str):
    """json.loads, its failures as one ValueError line: not JSON (json's line and column), nested too deeply for
    Python's parser (a RecursionError there), an integer too long for Python (more than sys.get_int_max_str_digits
    digits)."""
    try:
        return json.loads(pasted)
    except json.JSONDecodeError as error:
        raise ValueError(tr(f"the pasted text is not JSON: {error.msg} at line {error.lineno}, column {error.colno} "
                            f"(a config.json uses double quotes, true/false/null, no trailing commas)",
                            f"粘贴的文本不是 JSON：第 {error.lineno} 行第 {error.colno} 列，{error.msg}"
                            f"（config.json 用双引号、true/false/null，不能有多余的逗号）")) from None
    except RecursionError:
        raise ValueError(tr("the pasted JSON is nested too deeply to read (a config.json nests a few levels)",
                            "粘贴的 JSON 嵌套太深，无法读取（config.json 只嵌套几层）")) from None
    except ValueError:  # int('9' * 5000): Python refuses integers of more than sys.get_int_max_str_digits() digits
        raise ValueError(tr(f"the pasted JSON holds an integer too long to read (more than "
                            f"{sys.get_int_max_str_digits()} digits; a config.json's sizes have a few)",
                            f"粘贴的 JSON 里有一个太长、无法读取的整数（超过 {sys.get_int_max_str_digits()} 位；"
                            f"config.json 里的尺寸只有几位）")) from None
