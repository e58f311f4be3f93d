"""What a checkpoint does with positions, layer by layer: the data model of `configs`.

`LayerPositions`: one layer (does it turn q and k, which dims, in which layout, with which frequencies,
which keys a query sees). `ModelPositions`: all layers and the model-wide facts. reader.py fills them from
a config.json (`from_hf_config`), measure.py from the model's own code (`measure`); report.py prints them.

Conventions as in the rest of posenc_lib: layout "half" (pair i = dims i, i + r/2 of the rotated
dims; HF's rotate_half) or "interleaved" (dims 2i, 2i+1); None when nothing read says which (the layout
is in a family's modeling code, not in config.json). Position m turns pair i counter-clockwise by
m * theta_i; a sliding window of w lets query i see keys i - w < j <= i (HF's sliding_window_overlay);
a chunk of c lets it see keys j <= i with j // c == i // c.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import torch

from .. import _checks
from ..multidim import apply_multiaxis_rope, mrope_axes
from ..rope import apply_rope_to_dims
from ..scaling import rope_inv_freq
from . import report

ATTENTION_KINDS = ("full", "sliding", "chunked")

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
    "sliding" or "chunked", window: the window or chunk size (None for full). temperature: a query scaling
    that grows with the position, {"floor_scale", "attn_scale"[, "offset"]} (see `attention_temperature`):
    Llama 4's on its NoPE layers, Ministral 3's llama_4_scaling_beta on its RoPE layers (after the rotation;
    it scales q, it does not change how q turns); else None.
    layer_type: the name transformers gives the layer ("full_attention", "sliding_attention", ...).
    mixer: what mixes the tokens: "attention", or for a layer without positions of its own kind,
    "linear attention", "recurrent", "cross-attention" (keys from another input), "convolution" (LFM2's short
    convolutions). direction: +1 when position m turns pair i counter-clockwise by m * theta_i (the course's
    convention), -1 the other way.
    mrope_section: M-RoPE's (t, h, w) split of the pairs (Qwen-VL), else None; mrope_interleaved: True when
    pair i reads t, h, w in turn (Qwen3-VL), False for chunks t | h | w (Qwen2-VL), None when not known (the
    family's code decides; no record). `apply` then takes positions of shape (3, batch, seq).
    unknown: what this layer holds as the generic reading but no record states (a model_type without a record:
    "rope", "attention" ...; see ModelPositions.unknown); describe() says so instead of stating it.
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
    mixer: str = "attention"
    direction: int = 1
    mrope_section: tuple | None = None
    mrope_interleaved: bool | None = None
    unknown: tuple = ()

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
        positions: (seq,) or (batch, seq) integers on x's device, default 0 .. seq-1; for an M-RoPE layer also
        (3, batch, seq), one row per axis t, h, w (multidim.apply_multiaxis_rope with this layer's sections).
        A query scaling (`temperature`, `query_scale`) is not applied here. New tensor, x's dtype."""
        _checks.float_tensor("x", x)
        if x.dim() < 2 or x.shape[-1] != self.head_dim:
            raise ValueError(f"x must have shape (..., seq, head_dim={self.head_dim}) for layer {self.index}, "
                             f"got {tuple(x.shape)}")
        if not self.rope:
            return x.clone()
        if self.layout is None:
            raise ValueError(f"layer {self.index}: the layout is unknown (config.json does not say which dims pair; "
                             f"the family's modeling code does): configs.measure(config) reads it")
        seq_len = None
        if self.rope_type in ("dynamic", "longrope") and x.device.type != "meta":
            last = int(positions.max()) if positions is not None and positions.numel() else x.shape[-2] - 1
            seq_len = max(last + 1, 1)
        inv_freq, _ = self.frequencies(seq_len, device=x.device)
        inv_freq = inv_freq if self.direction > 0 else -inv_freq  # a rotation the other way: angles negated
        if positions is not None and positions.dim() == 3 and self.mrope_section is not None:
            return self._apply_mrope(x, positions, inv_freq)
        # the layer's own factor: 1 where a q/k normalisation after RoPE cancels the scaling's (reader.py)
        return apply_rope_to_dims(x, positions, inv_freq=inv_freq, start=self.rotary_dims[0],
                                  attention_factor=self.attention_factor, layout=self.layout)

    def _apply_mrope(self, x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
        """x's rotary dims turned by M-RoPE: pair i by positions[axis(i)] * theta_i (multidim.mrope_axes)."""
        if self.mrope_interleaved is None and len(self.mrope_section) != 3:
            raise ValueError(f"layer {self.index}: {len(self.mrope_section)} M-RoPE axes (HunYuan-VL's XD-RoPE) give "
                             f"the two dims of a pair different axes, which this per-pair rotation does not model")
        if self.mrope_interleaved is None:
            raise ValueError(f"layer {self.index}: whether the M-RoPE sections interleave is in the family's code, not "
                             f"in config.json: configs.measure(config) cannot tell it from text tokens either")
        axes = mrope_axes(self.mrope_section, interleaved=self.mrope_interleaved, device=x.device)
        return apply_multiaxis_rope(x, positions, inv_freq=inv_freq.to(x.device), axis_of_pair=axes,
                                    attention_factor=self.attention_factor, layout=self.layout,
                                    rotary_dims=self.rotary_dims)

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
        """The factor each query is multiplied by before q.k (`attention_temperature`): Llama 4's temperature on its
        NoPE layers, Ministral 3's llama_4_scaling_beta scaling on its RoPE layers; ones elsewhere.
        positions: integer tensor; float64 result."""
        positions = _checks.position_values("positions", positions)
        if self.temperature is None:
            return torch.ones(positions.shape, dtype=_checks.angle_dtype(positions.device), device=positions.device)
        return attention_temperature(positions, **self.temperature)

    def describe(self) -> str:
        """One line: what this layer does with positions."""
        return report.layer_line(self)


def attention_temperature(positions: torch.Tensor, *, floor_scale: float = 8192, attn_scale: float = 0.1,
                          offset: int = 1) -> torch.Tensor:
    """Llama 4's query temperature at absolute positions m (its NoPE layers, inference-time scaling):

        s(m) = 1 + attn_scale * log(1 + floor((m + offset) / floor_scale))      (Llama 4: offset 1)

    Ministral 3 multiplies its queries on every layer, after RoPE, by the same form with offset 0,
    floor_scale = rope_parameters' original_max_position_embeddings and attn_scale = llama_4_scaling_beta
    (transformers' get_llama_4_attn_scale).

    1 for the first floor_scale - 1 positions, then growing like log m in steps of floor_scale: far
    queries get sharper softmaxes, countering the dilution of attention over many keys (the idea of
    log-n scaling; Nakanishi 2025, "Scalable-Softmax", arXiv 2501.19399, cited by HF's Llama 4 code). transformers
    multiplies the query states by s(m) (Llama4TextAttention, `attn_temperature_tuning`).
    positions: integer tensor (any shape); returns float64 (float32 on devices without it), same shape.
    """
    positions = _checks.position_values("positions", positions)
    floor_scale = _checks.positive_float("floor_scale", floor_scale)
    attn_scale = _checks.positive_float("attn_scale", attn_scale, inclusive=True)
    if isinstance(offset, bool) or offset not in (0, 1):
        raise ValueError(f"offset must be 0 (Ministral 3) or 1 (Llama 4), got {offset!r}")
    m = positions.to(_checks.angle_dtype(positions.device))
    return 1.0 + attn_scale * torch.log1p(torch.floor((m + offset) / floor_scale))


# ----------------------------------------------------------------------------- the whole model
@dataclass(frozen=True, eq=False)
class ModelPositions:
    """What `from_hf_config` read: one `LayerPositions` per layer, and the model-wide facts.

    model_type: the config's (the text model's for a multimodal wrapper); family: the rules used
    ("generic" for an unknown model_type). position_encoding: "rope" or "learned absolute".
    max_position_embeddings: the context length the config states; original_max_position_embeddings:
    the length the scaling starts from (the rope dict's or the config's original_max_position_embeddings;
    not always the pretraining length: Llama 4 Scout's 8192 is its attention chunk; None if none is given).
    defaults_used: the keys taken from the family's defaults (absent from the config). layout_from: where
    the layout column comes from (the family record's source, or where it would come from when unknown).
    mrope_section: Qwen-VL's split of the pairs into (temporal, height, width), or None; mrope_interleaved: True
    when the pairs take t, h, w in turn (Qwen3-VL, Qwen3.5), False for chunks (Qwen2-VL), None when no record says.
    notes: how keys were interpreted. unknown: the report's columns that only the family's code decides and no
    record states (a model_type without a record: "rope", "layout", and "attention" when the config has no
    layer_types; "rotary_dims" and "longest_wavelength" when it has MLA keys); the layers then hold the generic
    reading, which the report does not show as fact. position_encoding "none": no layer turns q and k (Kimi Linear).
    indexer: a sparse-attention indexer's own rotation (DeepSeek-V3.2's DSA indexer, the same in every layer: its
    q/k head_dim, the dims it turns, its layout, the layer's frequencies; `apply` rotates as the indexer does), or
    None; the layers' layout is the main attention's.
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
    defaults_used: tuple = ()
    layout_from: str = ""
    mrope_interleaved: bool | None = None
    unknown: tuple = ()
    indexer: LayerPositions | None = None

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
            groups.setdefault(report.kind_text(layer), []).append(layer.index)
        return list(groups.items())

    def variants(self) -> list:
        """Which of the production variants of notebooks 10-11 this model uses, as short names:
        "learned absolute" (no RoPE), "base > 10k", "partial rotary" (the first r of head_dim dims turn),
        "decoupled RoPE" (a slice that does not start at dim 0: DeepSeek MLA), the rope_type of a context
        extension ("linear", "yarn", "llama3", "longrope", ...), "local/global bases" (RoPE layers with
        different bases), "NoPE layers" (attention layers without RoPE beside RoPE layers), "<mixer> layers"
        for layers of another kind beside them ("linear attention layers"), "sliding-window layers" (a window
        shorter than max_position_embeddings), "chunked layers", "M-RoPE" (an mrope_section)."""
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
        others = [layer for layer in self.layers if not layer.rope]
        if rope and any(layer.mixer == "attention" for layer in others):
            found.append("NoPE layers")
        found += sorted({f"{layer.mixer} layers" for layer in others if rope and layer.mixer != "attention"})
        context = self.max_position_embeddings
        if any(layer.attention == "sliding" and (context is None or layer.window is None or layer.window < context)
               for layer in self.layers):
            found.append("sliding-window layers")  # a window at least the context long slides over nothing
        if any(layer.attention == "chunked" for layer in self.layers):
            found.append("chunked layers")
        if self.mrope_section is not None:
            found.append("M-RoPE")
        return found

    def rows(self) -> list:
        """One dict per distinct kind of layer: the report as data (for a table or a DataFrame)."""
        return report.rows(self)

    def table(self) -> str:
        """The report as plain text: one line per kind of layer, then the notes."""
        return report.table(self)

    def __str__(self) -> str:
        return self.table()

