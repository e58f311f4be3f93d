"""Which RoPE does this checkpoint use? Reading a model's config.json, layer by layer.

`from_hf_config(config)` takes a Hugging Face `config.json` as a dict and returns a `ModelPositions`:
for every layer, whether it rotates q and k (or is a NoPE layer), the layout, which dims turn, the base,
the rope_type and its scaling dict, the frequencies inv_freq (a tensor), the attention factor on
cos/sin, the score scale, and which keys a query sees (full causal, a sliding window, a chunk).
Everything is read the way transformers 5.x reads it (its configuration_*.py and modeling_*.py), and
tests/test_configs.py checks every entry of data/model_configs.json against transformers itself.

Keys read (others are ignored; ill-typed ones are an error naming the key, e.g. config['head_dim']):
    head_dim, or hidden_size // num_attention_heads (GPT-J: n_embd // n_head)
    rope_parameters (transformers >= 5) or the legacy rope_scaling (+ top-level rope_theta,
      partial_rotary_factor); as in transformers, a non-empty rope_scaling wins over rope_parameters.
      The dict may be nested by layer type ({"full_attention": {...}, "sliding_attention": {...}}).
      Its keys are checked by `scaling.ROPE_SCALINGS` (an unknown rope_type or key is a ValueError)
    partial rotary: partial_rotary_factor (Phi, Phi-3/4), rotary_pct (GPT-NeoX), rotary_dim (GPT-J)
    per-layer settings: layer_types; Gemma 2 (every other layer sliding) and Gemma 3 (sliding_window_pattern,
      rope_local_base_freq for the sliding layers, the rope_scaling on the full ones only); Qwen2
      (use_sliding_window, max_window_layers); Llama 4 and SmolLM3 no_rope_layers (a list of flags,
      1 = this layer uses RoPE, 0 = NoPE; default every 4th layer NoPE), Llama 4 attention_chunk_size
      (chunked attention on the RoPE layers) and attn_temperature_tuning / floor_scale / attn_scale
      (a query temperature on the NoPE layers); DeepSeek-V2/V3 MLA qk_rope_head_dim / qk_nope_head_dim
      (decoupled RoPE on the last qk_rope_head_dim dims of a qk_nope + qk_rope head, rope_interleave);
      Qwen2.5-VL mrope_section (recorded, not applied: text tokens give all sections one position)
    BERT, GPT-2: learned absolute positions (max_position_embeddings / n_positions rows), no RoPE.

Where a key is absent, the family's default from its transformers config class applies (e.g. Gemma 3:
global base 1e6, local 1e4, a sliding layer every 5 of 6; tests compare each default with transformers).
An unknown model_type is read with the generic (Llama-like) rules, and ModelPositions.notes says so.

Conventions as in the rest of posenc_lib: layout "half" (pair i = dims i, i + r/2 of the rotated
dims; HF's rotate_half, the layout of HF checkpoints of Llama, Mistral, Qwen, Gemma, Phi, GPT-NeoX)
or "interleaved" (dims 2i, 2i+1; GPT-J, Llama 4, DeepSeek, as their HF code pairs them); position m
turns pair i counter-clockwise by m * theta_i; a sliding window of w lets query i see keys
i - w < j <= i (HF's sliding_window_overlay); a chunk of c lets it see keys j <= i with j // c == i // c.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import torch

from . import _checks
from .i18n import display_width as _width, ljust as _ljust, tr
from .rope import _rope_dims
from .scaling import _validate, rope_inv_freq, rope_type_of, rotary_dim

# model_type -> family whose rules read it (wrappers point to their text model)
FAMILIES = {
    "llama": "llama", "mistral": "mistral", "qwen2": "qwen2", "qwen3": "qwen3",
    "qwen2_5_vl": "qwen2_5_vl", "qwen2_5_vl_text": "qwen2_5_vl", "phi": "phi", "phi3": "phi3",
    "gemma2": "gemma2", "gemma3": "gemma3_text", "gemma3_text": "gemma3_text",
    "llama4": "llama4_text", "llama4_text": "llama4_text", "smollm3": "smollm3",
    "deepseek_v2": "deepseek_v3", "deepseek_v3": "deepseek_v3", "gpt_neox": "gpt_neox", "gptj": "gptj",
    "bert": "absolute", "gpt2": "gpt2",
}

# Defaults of the keys this module reads, per family, as transformers' config classes set them
# (tests/test_configs.py compares each with the class). Generic default: rope_theta 10000.
FAMILY_DEFAULTS = {
    "llama": {"rope_theta": 10000.0, "max_position_embeddings": 2048},
    "mistral": {"rope_theta": 10000.0, "max_position_embeddings": 131072, "sliding_window": 4096},
    "qwen2": {"rope_theta": 10000.0, "max_position_embeddings": 32768, "use_sliding_window": False,
              "sliding_window": 4096, "max_window_layers": 28},
    "qwen3": {"rope_theta": 10000.0, "max_position_embeddings": 32768, "head_dim": 128, "use_sliding_window": False,
              "sliding_window": 4096, "max_window_layers": 28},
    "qwen2_5_vl": {"rope_theta": 1000000.0, "max_position_embeddings": 32768, "use_sliding_window": False,
                   "sliding_window": 4096, "max_window_layers": 80},
    "phi": {"rope_theta": 10000.0, "max_position_embeddings": 2048, "partial_rotary_factor": 0.5},
    "phi3": {"rope_theta": 10000.0, "max_position_embeddings": 4096, "sliding_window": None},
    "gemma2": {"rope_theta": 10000.0, "max_position_embeddings": 8192, "head_dim": 256, "sliding_window": 4096,
               "query_pre_attn_scalar": 256},
    "gemma3_text": {"rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "max_position_embeddings": 131072,
                    "head_dim": 256, "sliding_window": 4096, "sliding_window_pattern": 6, "query_pre_attn_scalar": 256},
    "llama4_text": {"rope_theta": 500000.0, "max_position_embeddings": 131072, "head_dim": 128,
                    "no_rope_layer_interval": 4, "attention_chunk_size": 8192, "attn_temperature_tuning": True,
                    "floor_scale": 8192, "attn_scale": 0.1},
    "smollm3": {"rope_theta": 2000000.0, "max_position_embeddings": 32768, "no_rope_layer_interval": 4,
                "use_sliding_window": False, "sliding_window": None},
    "deepseek_v3": {"rope_theta": 10000.0, "max_position_embeddings": 4096, "qk_rope_head_dim": 64,
                    "qk_nope_head_dim": 128, "rope_interleave": True},
    "gpt_neox": {"rotary_emb_base": 10000.0, "rotary_pct": 0.25, "max_position_embeddings": 2048},
    "gptj": {"rotary_dim": 64, "n_positions": 2048},
    "absolute": {"max_position_embeddings": 512},
    "gpt2": {"n_positions": 1024},
    "generic": {"rope_theta": 10000.0},
}
INTERLEAVED_FAMILIES = ("gptj", "llama4_text")  # + deepseek_v3 with rope_interleave (its default)
ATTENTION_KINDS = ("full", "sliding", "chunked")
_HF_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked"}
_NOT_SCALING = ("rope_theta", "partial_rotary_factor", "mrope_section")  # rope_parameters keys that are not scaling


# ----------------------------------------------------------------------------- what one layer does
@dataclass(frozen=True, eq=False)
class LayerPositions:
    """Positions in one attention layer, as the model's code applies them.

    index: the layer number (0-based). rope: False for a NoPE layer (no rotation at all).
    head_dim: the q/k head dim (DeepSeek MLA: qk_nope_head_dim + qk_rope_head_dim).
    rotary_dims: (start, stop), the dims that turn: (0, r) for full or partial rotary (the FIRST r dims),
    (head_dim - r, head_dim) for DeepSeek's decoupled rope slice; (0, 0) for NoPE. layout: "half" or
    "interleaved", pairs formed within those dims (None for NoPE). base: theta_i = base ** (-2i/r).
    rope_type: "default", "linear", "dynamic", "yarn", "longrope", "llama3" (None for NoPE); scaling:
    the posenc scaling dict (`scaling.rope_inv_freq`'s) or None. inv_freq: (r/2,) float64 frequencies
    at the trained length (LongRoPE: the short factors; `frequencies(seq_len)` for another length);
    attention_factor: multiplies cos and sin (YaRN, LongRoPE; else 1). score_scale: multiplies q.k
    before the softmax (1/sqrt(head_dim) unless the model says otherwise). attention: "full",
    "sliding" or "chunked", window: the window or chunk size (None for full). temperature: Llama 4's
    {"floor_scale", "attn_scale"} on its NoPE layers (see `attention_temperature`), else None.
    layer_type: the name transformers gives the layer ("full_attention", "sliding_attention", ...).
    """
    index: int
    rope: bool
    head_dim: int
    rotary_dims: tuple
    layout: str | None
    base: float | None
    rope_type: str | None
    scaling: dict | None
    inv_freq: torch.Tensor | None
    attention_factor: float
    score_scale: float
    attention: str
    window: int | None
    causal: bool = True
    temperature: dict | None = None
    layer_type: str = "full_attention"

    @property
    def rotary_dim(self) -> int:
        """How many dims turn (0 for a NoPE layer)."""
        return self.rotary_dims[1] - self.rotary_dims[0]

    @property
    def partial_rotary_factor(self) -> float:
        """rotary_dim / head_dim: 1 for full RoPE, e.g. 0.25 for GPT-NeoX-20B, 64/192 for DeepSeek-V3."""
        return self.rotary_dim / self.head_dim

    @property
    def wavelengths(self) -> torch.Tensor | None:
        """2 pi / theta_i in tokens, (r/2,) float64: pair i completes a turn every wavelengths[i] tokens."""
        return None if self.inv_freq is None else 2 * math.pi / self.inv_freq

    def frequencies(self, seq_len: int | None = None, *, device=None) -> tuple[torch.Tensor, float]:
        """(inv_freq, attention_factor) when the current length is seq_len (dynamic NTK and LongRoPE
        depend on it; HF takes seq_len = max(position_ids) + 1), on `device` (default CPU)."""
        if not self.rope:
            raise ValueError(f"layer {self.index} has no RoPE (a NoPE layer): it has no frequencies")
        return rope_inv_freq(self.rotary_dim, base=self.base, scaling=self.scaling, seq_len=seq_len, device=device)

    def apply(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """x (..., seq, head_dim) rotated as this layer rotates q and k: only `rotary_dims` turn, in its
        layout, with its frequencies for the call's length L = 1 + the largest position (as HF decides
        dynamic NTK and LongRoPE) and its attention factor; a NoPE layer returns a copy of x.
        positions: (seq,) or (batch, seq) integers on x's device, default 0 .. seq-1. New tensor, x's dtype."""
        _checks.float_tensor("x", x)
        if x.dim() < 2 or x.shape[-1] != self.head_dim:
            raise ValueError(f"x must have shape (..., seq, head_dim={self.head_dim}) for layer {self.index}, "
                             f"got {tuple(x.shape)}")
        if not self.rope:
            return x.clone()
        seq_len = None
        if self.rope_type in ("dynamic", "longrope") and x.device.type != "meta":
            last = int(positions.max()) if positions is not None and positions.numel() else x.shape[-2] - 1
            seq_len = max(last + 1, 1)
        inv_freq, factor = self.frequencies(seq_len, device=x.device)
        return _rope_dims(x, positions, inv_freq, factor, self.layout, *self.rotary_dims)

    def visible_keys(self, seq_len: int, *, device=None) -> torch.Tensor:
        """(seq_len, seq_len) bool: True where query i may attend key j (positions 0 .. seq_len-1).

        causal: j <= i; sliding window w: also i - w < j; chunk c: also j // c == i // c (HF's masks).
        Non-causal (BERT): every key (within the window, |i - j| < w, if any).
        """
        seq_len = _checks.positive_int("seq_len", seq_len)
        i = torch.arange(seq_len, device=device)[:, None]
        j = torch.arange(seq_len, device=device)[None, :]
        mask = j <= i if self.causal else torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)
        if self.attention == "sliding":
            mask = mask & ((i - j < self.window) if self.causal else ((i - j).abs() < self.window))
        elif self.attention == "chunked":
            mask = mask & (j // self.window == i // self.window)
        return mask

    def query_scale(self, positions: torch.Tensor) -> torch.Tensor:
        """The factor each query is multiplied by before q.k: Llama 4's attention temperature on its
        NoPE layers (`attention_temperature`), ones elsewhere. positions: integer tensor; float64 result."""
        positions = _checks.position_values("positions", positions)
        if self.temperature is None:
            return torch.ones(positions.shape, dtype=_checks.angle_dtype(positions.device), device=positions.device)
        return attention_temperature(positions, **self.temperature)

    def describe(self) -> str:
        """One line: what this layer does with positions."""
        return tr(f"layer {self.index}: ", f"第 {self.index} 层：") + _kind_text(self)


def attention_temperature(positions: torch.Tensor, *, floor_scale: float = 8192, attn_scale: float = 0.1
                          ) -> torch.Tensor:
    """Llama 4's query temperature at absolute positions m (its NoPE layers, inference-time scaling):

        s(m) = 1 + attn_scale * log(1 + floor((m + 1) / floor_scale))

    1 for the first floor_scale - 1 positions, then growing like log m in steps of floor_scale: far
    queries get sharper softmaxes, countering the dilution of attention over many keys (the idea of
    log-n scaling; Nakanishi 2025, "Scalable-Softmax", arXiv 2501.19399, cited by HF's Llama 4 code). transformers
    multiplies the query states by s(m) (Llama4TextAttention, `attn_temperature_tuning`).
    positions: integer tensor (any shape); returns float64 (float32 on devices without it), same shape.
    """
    positions = _checks.position_values("positions", positions)
    floor_scale = _checks.positive_float("floor_scale", floor_scale)
    attn_scale = _checks.positive_float("attn_scale", attn_scale, inclusive=True)
    m = positions.to(_checks.angle_dtype(positions.device))
    return 1.0 + attn_scale * torch.log1p(torch.floor((m + 1.0) / floor_scale))


# ----------------------------------------------------------------------------- the whole model
@dataclass(frozen=True, eq=False)
class ModelPositions:
    """What `from_hf_config` read: one `LayerPositions` per layer, and the model-wide facts.

    model_type: the config's (the text model's for a multimodal wrapper); family: the rules used
    ("generic" for an unknown model_type). position_encoding: "rope" or "learned absolute".
    max_position_embeddings: the context length the config states; original_max_position_embeddings:
    the pretraining length before an extension (None if the config gives none). mrope_section: Qwen-VL's
    split of the pairs into (temporal, height, width), or None. notes: how keys were interpreted.
    """
    model_type: str
    family: str
    position_encoding: str
    num_layers: int
    max_position_embeddings: int | None
    original_max_position_embeddings: int | None
    layers: tuple
    mrope_section: tuple | None = None
    notes: tuple = field(default_factory=tuple)

    def layer(self, index: int) -> LayerPositions:
        """The settings of layer `index` (negative counts from the end)."""
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise TypeError(f"index must be an int (a layer number), got {type(index).__name__} ({index!r})")
        if not -self.num_layers <= index < self.num_layers:
            raise ValueError(f"index must be in [-{self.num_layers}, {self.num_layers}), got {index}")
        return self.layers[index]

    @property
    def rope_layers(self) -> list:
        """Indices of the layers that rotate q and k."""
        return [layer.index for layer in self.layers if layer.rope]

    @property
    def nope_layers(self) -> list:
        """Indices of the layers without positions in attention (NoPE)."""
        return [layer.index for layer in self.layers if not layer.rope]

    def kinds(self) -> list:
        """[(description, [layer indices])]: the distinct layer settings in order of first appearance."""
        groups: dict = {}
        for layer in self.layers:
            groups.setdefault(_kind_text(layer), []).append(layer.index)
        return list(groups.items())

    def variants(self) -> list:
        """Which of the production variants of notebooks 10-11 this model uses, as short names:
        "learned absolute" (no RoPE), "base > 10k", "partial rotary" (the first r of head_dim dims turn),
        "decoupled RoPE" (a slice that does not start at dim 0: DeepSeek MLA), the rope_type of a context
        extension ("linear", "yarn", "llama3", "longrope", ...), "local/global bases" (RoPE layers with
        different bases), "NoPE layers" (beside RoPE layers), "sliding-window layers", "chunked layers",
        "M-RoPE" (an mrope_section)."""
        if self.position_encoding != "rope":
            return [self.position_encoding]
        rope = [layer for layer in self.layers if layer.rope]
        found = []
        if any(layer.base > 10000 for layer in rope):
            found.append("base > 10k")
        if any(layer.rotary_dims[0] == 0 and layer.rotary_dim < layer.head_dim for layer in rope):
            found.append("partial rotary")
        if any(layer.rotary_dims[0] > 0 for layer in rope):
            found.append("decoupled RoPE")
        found += sorted({layer.rope_type for layer in rope if layer.rope_type != "default"})
        if len({layer.base for layer in rope}) > 1:
            found.append("local/global bases")
        if rope and self.nope_layers:
            found.append("NoPE layers")
        for kind, name in (("sliding", "sliding-window layers"), ("chunked", "chunked layers")):
            if any(layer.attention == kind for layer in self.layers):
                found.append(name)
        if self.mrope_section is not None:
            found.append("M-RoPE")
        return found

    def rows(self) -> list:
        """One dict per distinct kind of layer: the report as data (for a table or a DataFrame)."""
        rows = []
        for _, indices in self.kinds():
            layer = self.layers[indices[0]]
            waves = layer.wavelengths
            rows.append({
                "layers": layer_ranges(indices), "count": len(indices), "rope": layer.rope, "layout": layer.layout,
                "rotary_dims": tr(f"{layer.rotary_dims[0]}:{layer.rotary_dims[1]} of {layer.head_dim}",
                                  f"{layer.rotary_dims[0]}:{layer.rotary_dims[1]}（共 {layer.head_dim} 维）"),
                "base": layer.base, "rope_type": layer.rope_type, "attention_factor": layer.attention_factor,
                "attention": _attention_name(layer.attention) + ("" if layer.window is None else f" {layer.window}")
                + (tr(" + query temperature", " + 查询温度") if layer.temperature else ""),
                "longest_wavelength": None if waves is None else float(waves.max()),
                "score_scale": layer.score_scale, "temperature": layer.temperature is not None,
            })
        return rows

    def table(self) -> str:
        """The report as plain text: one line per kind of layer, then the notes."""
        encoding = {"rope": tr("rope", "旋转位置编码（RoPE）"),
                    "learned absolute": tr("learned absolute", "可学习的绝对位置嵌入")}.get(self.position_encoding,
                                                                                       self.position_encoding)
        head = (tr(f"{self.model_type} ({self.family} rules): {self.num_layers} layers, "
                   f"positions: {encoding}, max_position_embeddings {self.max_position_embeddings}",
                   f"{self.model_type}（按 {self.family} 规则读取）：{self.num_layers} 层，"
                   f"用{encoding}，max_position_embeddings {self.max_position_embeddings}")
                + ("" if self.original_max_position_embeddings is None
                   else tr(f" (pretrained at {self.original_max_position_embeddings})",
                           f"（预训练长度 {self.original_max_position_embeddings}）")))
        columns = ("layers", "rope", "layout", "rotary_dims", "base", "rope_type", "attention_factor", "attention",
                   "longest_wavelength")
        titles = {"layers": tr("layers", "层"), "rope": tr("rope", "用 RoPE"), "layout": tr("layout", "布局"),
                  "rotary_dims": tr("rotary_dims", "旋转维度"), "base": tr("base", "底数"),
                  "attention": tr("attention", "注意力"), "longest_wavelength": tr("longest_wavelength", "最长波长")}
        headers = [titles.get(c, c) for c in columns]  # rope_type, attention_factor: config keys, as they are
        cells = [[table_cell(row[c]) for c in columns] for row in self.rows()]
        widths = [max(_width(c), *(_width(r[k]) for r in cells)) for k, c in enumerate(headers)]
        lines = [head, "  ".join(_ljust(c, w) for c, w in zip(headers, widths))]
        lines += ["  ".join(_ljust(v, w) for v, w in zip(r, widths)) for r in cells]
        lines += [tr(f"note: {n}", f"注：{n}") for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def table_cell(value, digits: int = 6) -> str:
    """A report table's cell: "-" for None, a float to `digits` significant digits, anything else as str."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)




def layer_ranges(indices) -> str:
    """[0, 1, 2, 4, 6, 7] -> '0-2,4,6-7'; an evenly spaced list [1, 3, 5, 7] -> '1-7 every 2'."""
    steps = {b - a for a, b in zip(indices, indices[1:])}
    if len(indices) >= 3 and len(steps) == 1 and steps != {1}:
        step = steps.pop()
        return tr(f"{indices[0]}-{indices[-1]} every {step}", f"{indices[0]}-{indices[-1]} 每 {step} 层")
    parts, start = [], indices[0]
    for a, b in zip(indices, indices[1:] + [None]):
        if b != a + 1:
            parts.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return ",".join(parts)


def _attention_name(attention: str) -> str:
    """The attention kind ("full", "sliding", "chunked") as a learner reads it (the name itself in English)."""
    names = {"full": tr("full", "全注意力"), "sliding": tr("sliding", "滑动窗口"), "chunked": tr("chunked", "分块")}
    return names.get(attention, attention)


def _kind_text(layer: LayerPositions) -> str:
    where = tr("full causal", "全局因果") if layer.causal else tr("full bidirectional", "全局双向")
    if layer.window is not None:
        where = f"{_attention_name(layer.attention)} {layer.window}"
    if not layer.rope:
        extra = tr(", query temperature", "，查询温度") if layer.temperature else ""
        return tr(f"NoPE, attention {where}{extra}", f"NoPE，注意力：{where}{extra}")
    start, stop = layer.rotary_dims
    dims = (tr("all dims", "全部维度") if (start, stop) == (0, layer.head_dim)
            else tr(f"dims {start}:{stop} of {layer.head_dim}", f"第 {start}:{stop} 维（共 {layer.head_dim} 维）"))
    factor = ("" if layer.attention_factor == 1
              else tr(f", cos/sin x {layer.attention_factor:.6g}", f"，cos/sin 乘 {layer.attention_factor:.6g}"))
    return tr(f"RoPE {layer.layout}, {dims}, base {layer.base:g}, {layer.rope_type}{factor}, attention {where}",
              f"RoPE {layer.layout}，{dims}，底数 {layer.base:g}，{layer.rope_type}{factor}，注意力：{where}")


# ----------------------------------------------------------------------------- reading the dict
class _Reader:
    """Typed access to one config dict, errors naming the key as config['key']."""

    def __init__(self, config: dict, family: str, prefix: str):
        self.config, self.family, self.prefix = config, family, prefix
        self.defaults = FAMILY_DEFAULTS.get(family, FAMILY_DEFAULTS["generic"])

    def name(self, key: str) -> str:
        return f"{self.prefix}[{key!r}]"

    def get(self, key: str, default=None):
        """The config's value (an explicit null included, as transformers keeps it), else the family default."""
        return self.config[key] if key in self.config else self.defaults.get(key, default)

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

    def layer_list(self, key: str, length: int, allowed) -> list | None:
        """config[key] as a list of one entry per layer (its first `length`), each one of `allowed`."""
        value = self.config.get(key)
        if value is None:
            return None
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{self.name(key)} must be a list, got {type(value).__name__}")
        if len(value) < length:
            raise ValueError(f"{self.name(key)} must have an entry for each of the {length} layers, got {len(value)}")
        for i, v in enumerate(value[:length]):
            # True == 1.0 == 1 in a set: only an entry of an allowed value's own type counts
            if not any(type(v) is type(a) and v == a for a in allowed):
                raise ValueError(f"{self.name(key)}[{i}] must be one of {sorted(allowed)}, got {v!r}")
        return list(value[:length])


def _text_config(config):
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a config.json read with json.load), got {type(config).__name__}")
    text = config.get("text_config")
    if text is None:
        return config, "config"
    if not isinstance(text, dict):
        raise TypeError(f"config['text_config'] must be a dict, got {type(text).__name__}")
    merged = dict(text)
    merged.setdefault("model_type", config.get("model_type"))
    return merged, "config['text_config']"


def _layer_types(r: _Reader, n: int) -> tuple[list, list]:
    """(rope flags, HF layer types) for n layers, by the family's rule."""
    family, types = r.family, r.layer_list("layer_types", n, _HF_LAYER_TYPES)
    flags = [1] * n
    if family in ("llama4_text", "smollm3"):  # no_rope_layers[i] = 1: layer i USES RoPE (transformers' naming)
        interval = r.int("no_rope_layer_interval", 4)
        given = r.config.get("no_rope_layers")
        if family == "llama4_text" and given == []:  # Llama4TextConfig takes an empty list as "not given"
            given = None
        flags = (r.layer_list("no_rope_layers", n, {0, 1}) if given is not None
                 else [int((i + 1) % interval != 0) for i in range(n)])
    if types is not None:
        return flags, types
    if family == "gemma2":
        return flags, ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    if family == "gemma3_text":
        pattern = r.int("sliding_window_pattern", 6)
        return flags, ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    if family in ("qwen2", "qwen3", "qwen2_5_vl"):
        window = r.get("sliding_window") if r.flag("use_sliding_window") else None
        first = r.int("max_window_layers", 0)
        return flags, ["sliding_attention" if window is not None and i >= first else "full_attention"
                       for i in range(n)]
    if family == "llama4_text":
        return flags, ["chunked_attention" if f else "full_attention" for f in flags]
    if family == "smollm3":
        sliding = r.flag("use_sliding_window") and r.get("sliding_window") is not None
        return flags, ["sliding_attention" if sliding and not f else "full_attention" for f in flags]
    sliding = r.get("sliding_window") is not None and family in ("mistral", "phi3", "generic") and (
        family != "generic" or r.flag("use_sliding_window", True))
    return flags, ["sliding_attention" if sliding else "full_attention"] * n


def _rope_dicts(r: _Reader, layer_types: list) -> tuple[dict, list]:
    """{HF layer type: (its rope parameters dict, the key it came from, the top-level key of its base when the
    dict has no rope_theta)}, notes."""
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
    if r.family == "gemma3_text" and not nested:  # legacy Gemma 3: rope_scaling is the global layers' only
        return {"full_attention": (params, r.name(key), "rope_theta"),
                "sliding_attention": ({"rope_type": "default"}, r.name("rope_local_base_freq"),
                                      "rope_local_base_freq")}, notes
    if nested:
        out = {}
        for layer_type in set(layer_types):
            if layer_type not in params:
                raise ValueError(f"{r.name(key)} has no entry for the layer type {layer_type!r}")
            p = params[layer_type]
            if not isinstance(p, dict):
                raise TypeError(f"{r.name(key)}[{layer_type!r}] must be a dict, got {type(p).__name__}")
            out[layer_type] = (p, f"{r.name(key)}[{layer_type!r}]", "rope_theta")
        return out, notes
    theta_key = "rotary_emb_base" if r.family == "gpt_neox" else "rope_theta"
    return {t: (params, r.name(key), theta_key) for t in set(layer_types)}, notes


def _scaling(r: _Reader, p: dict, where: str, theta_key: str, *, max_pos) -> tuple[float, str, dict | None, float,
                                                                                   list]:
    """From one HF rope parameters dict: (base, rope_type, posenc scaling dict, partial factor, mrope_section)."""
    family, text = r.family, r.config
    if family == "gptj":  # GPT-J's code fixes the base at 10000 (create_sinusoidal_positions)
        base = 10000.0
    elif p.get("rope_theta") is not None:
        base = _checks.positive_float(f"{where}['rope_theta']", p["rope_theta"])
    else:
        base = _checks.positive_float(r.name(theta_key), r.get(theta_key))
    partial = p.get("partial_rotary_factor")
    if partial is None:
        partial = r.get("rotary_pct") if family == "gpt_neox" else r.get("partial_rotary_factor", 1.0)
    given = {k: v for k, v in p.items() if k not in _NOT_SCALING}
    if "type" in given:  # the legacy name; transformers reads rope_type first when both are there
        legacy = given.pop("type")
        given.setdefault("rope_type", legacy)
    rope_type = given.get("rope_type", "default")
    if family == "phi3" and rope_type in ("su", "yarn"):  # transformers' Phi3Config renames these
        given["rope_type"] = rope_type = "longrope"
    if rope_type == "mrope":  # Qwen2-VL / Qwen2.5-VL: plain frequencies, sections recorded
        given["rope_type"] = rope_type = "default"
    l0 = "original_max_position_embeddings"
    if rope_type in ("llama3", "yarn", "longrope"):
        top = text.get(l0)  # a top-level L0 (Phi-3 keeps it there) wins, as in transformers
        given[l0] = top if top is not None else given.get(l0) or max_pos
        if given.get("factor") is None and rope_type in ("yarn", "longrope") and max_pos and given[l0]:
            given["factor"] = max_pos / given[l0]  # transformers' fallback for the factor
    if rope_type == "dynamic":
        given.setdefault(l0, max_pos)
    scaling = None if rope_type == "default" and set(given) <= {"rope_type"} else given
    if scaling is not None:
        try:
            rope_type = rope_type_of(scaling)
            _validate(scaling)
        except (ValueError, TypeError) as error:
            raise type(error)(f"{where}: {error}") from error
        if rope_type == "default":
            scaling = None
    mrope = p.get("mrope_section")
    return base, rope_type, scaling, partial, mrope


def _score_scale(r: _Reader, head_dim: int, scaling: dict | None) -> float:
    if r.family in ("gemma2", "gemma3_text"):
        return float(r.number("query_pre_attn_scalar")) ** -0.5
    scale = head_dim ** -0.5
    if r.family == "deepseek_v3" and scaling is not None and scaling.get("mscale_all_dim"):
        def mscale(factor, m):  # YaRN's mscale, as DeepSeek's yarn_get_mscale
            return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0
        scale *= mscale(scaling["factor"], scaling["mscale_all_dim"]) ** 2
    return scale


def from_hf_config(config: dict) -> ModelPositions:
    """Read a Hugging Face config.json (as a dict) into a `ModelPositions`: what each layer does with positions.

        positions = from_hf_config(json.load(open("config.json")))
        print(positions.table())                  # one line per kind of layer
        positions.layer(5).base, positions.nope_layers, positions.layer(0).inv_freq

    A multimodal wrapper (Gemma 3, Llama 4, Qwen2.5-VL with text_config) is read through its
    text_config. See the module docstring for every key read and how; an unknown rope_type, an
    unknown key inside rope_parameters/rope_scaling, or a key of the wrong type raises a
    ValueError/TypeError naming it (e.g. "config['rope_scaling']: scaling['rope_type'] must be one of ...").
    """
    text, prefix = _text_config(config)
    model_type = text.get("model_type") or "unknown"
    if not isinstance(model_type, str):
        raise TypeError(f"{prefix}['model_type'] must be a string, got {model_type!r}")
    family = FAMILIES.get(model_type, "generic")
    r = _Reader(text, family, prefix)
    notes = [] if family != "generic" else [tr(f"model_type {model_type!r} is not a known family: read with the "
                                               f"generic (Llama-like) rules",
                                               f"model_type {model_type!r} 不属于已知的模型系列：按 generic 规则"
                                               f"（类似 Llama）读取")]
    n = r.int("num_hidden_layers", r.get("n_layer"), required=True)
    max_pos = r.int("max_position_embeddings", r.get("n_positions"))
    if family in ("absolute", "gpt2"):  # BERT, GPT-2: a learned table added to the input
        hidden, heads = r.int("hidden_size", r.get("n_embd"), required=True), r.int(
            "num_attention_heads", r.get("n_head"), required=True)
        causal = model_type == "gpt2"
        layers = tuple(LayerPositions(i, False, hidden // heads, (0, 0), None, None, None, None, None, 1.0,
                                      (hidden // heads) ** -0.5, "full", None, causal=causal) for i in range(n))
        return ModelPositions(model_type, family, "learned absolute", n, max_pos, None, layers,
                              notes=(tr(f"learned absolute positions: a table of {max_pos} rows added to the input; "
                                        f"no position in attention",
                                        f"可学习的绝对位置嵌入：一张 {max_pos} 行的表，加在输入上；"
                                        f"注意力里没有位置信息"),))
    heads = r.int("num_attention_heads", r.get("n_head"), required=True)
    head_dim = r.int("head_dim")
    if head_dim is None:  # transformers: head_dim or hidden_size // num_attention_heads
        head_dim = r.int("hidden_size", r.get("n_embd"), required=True) // heads
    rope_head_dim, start = head_dim, 0
    if family == "deepseek_v3":  # MLA: q/k heads of nope + rope dims, RoPE on the rope slice only
        rope_head_dim = r.int("qk_rope_head_dim")
        head_dim = r.int("qk_nope_head_dim") + rope_head_dim
        start = head_dim - rope_head_dim
    layout = "interleaved" if family in INTERLEAVED_FAMILIES or (
        family == "deepseek_v3" and r.flag("rope_interleave", True)) else "half"
    flags, layer_types = _layer_types(r, n)
    params, more = _rope_dicts(r, [t for t, f in zip(layer_types, flags) if f])
    notes += more
    settings, mrope = {}, None
    for layer_type, (p, where, theta_key) in sorted(params.items()):
        base, rope_type, scaling, partial, section = _scaling(r, p, where, theta_key, max_pos=max_pos)
        if family == "gptj":  # GPT-J states the rotated dims, base 10000 fixed in its code
            rotated = r.int("rotary_dim")
            if rotated > rope_head_dim or rotated % 2:
                raise ValueError(f"{r.name('rotary_dim')} must be even and <= head_dim {rope_head_dim}, got {rotated}")
        else:
            try:
                rotated = rotary_dim(rope_head_dim, partial)
            except (ValueError, TypeError) as error:
                raise type(error)(f"{r.name('partial_rotary_factor')}: {error}") from error
        try:
            inv_freq, factor = rope_inv_freq(rotated, base=base, scaling=scaling)
        except (ValueError, TypeError) as error:
            raise type(error)(f"{where}: {error}") from error
        if section is not None:
            mrope = tuple(section)
            if sum(mrope) != rotated // 2:
                raise ValueError(f"{where}['mrope_section'] must add up to the number of pairs {rotated // 2}, "
                                 f"got {list(mrope)}")
        settings[layer_type] = (base, rope_type, scaling, inv_freq, float(factor), rotated)
    chunk = r.int("attention_chunk_size") if "chunked_attention" in layer_types else None
    tuning = family == "llama4_text" and r.flag("attn_temperature_tuning", True)
    temperature = {"floor_scale": r.number("floor_scale"), "attn_scale": r.number("attn_scale")} if tuning else None
    window = r.int("sliding_window") if "sliding_attention" in layer_types else None
    layers = []
    for i, (flag, layer_type) in enumerate(zip(flags, layer_types)):
        attention = _HF_LAYER_TYPES[layer_type]
        size = {"full": None, "sliding": window, "chunked": chunk}[attention]
        if flag:
            base, rope_type, scaling, inv_freq, factor, rotated = settings[layer_type]
            dims = (start, start + rotated)
            layers.append(LayerPositions(i, True, head_dim, dims, layout, base, rope_type, scaling, inv_freq, factor,
                                         _score_scale(r, head_dim, scaling), attention, size, layer_type=layer_type))
        else:
            layers.append(LayerPositions(i, False, head_dim, (0, 0), None, None, None, None, None, 1.0,
                                         _score_scale(r, head_dim, None), attention, size,
                                         temperature=temperature, layer_type=layer_type))
    if mrope is not None:
        notes.append(tr(f"mrope_section {list(mrope)}: pairs split into temporal/height/width sections (M-RoPE); "
                        f"for text tokens all three positions are equal, so the frequencies above apply",
                        f"mrope_section {list(mrope)}：频率对分成时间、高度、宽度三段（M-RoPE）；"
                        f"文本 token 的三个位置相同，所以上面的频率照样适用"))
    if family == "llama4_text" and r.flag("use_qk_norm", False):
        notes.append(tr("use_qk_norm: q and k are L2-normalised after RoPE on the RoPE layers",
                        "use_qk_norm：RoPE 层在旋转之后对 q 和 k 做 L2 归一化"))
    original = text.get("original_max_position_embeddings")
    if original is None:
        for base, rope_type, scaling, *_ in settings.values():
            if scaling and scaling.get("original_max_position_embeddings") and scaling.get("rope_type") != "dynamic":
                original = scaling["original_max_position_embeddings"]
    if original is not None:
        original = _checks.positive_int(r.name("original_max_position_embeddings"), original)
    return ModelPositions(model_type, family, "rope", n, max_pos, original, tuple(layers), mrope, tuple(notes))
