"""posenc_lib: positional encodings for Transformers, in torch, on any device.

Conventions used throughout (each module's docstring has the details):
  * sinusoidal tables: layout "interleaved" (sin at even dims, cos at odd; the paper) or "half" ([sin | cos]).
  * RoPE: layout "half" (pair i = dims i and i + d/2; GPT-NeoX/Hugging Face) or "interleaved" (dims 2i, 2i+1;
    RoFormer/Meta Llama); rotation counter-clockwise by +m*theta_i at position m.
  * relative position = key position - query position (T5, Shaw); ALiBi bias = -slope * |i - j|.
  * angles in float64 (float32 where the device lacks it); results in the input's dtype and device.
"""
from ._version import __version__ as __version__
from .absolute import (
    LearnedEncoding,
    SinusoidalEncoding,
    layout_permutation,
    offset_matrix,
    position_similarity,
    similarity_by_distance,
    sinusoidal_frequencies,
    sinusoidal_table,
)
from .alibi import ALiBi, alibi_bias, alibi_slopes
from .attention import MultiHeadAttention, NoPE, PositionalEncoding, attention, where_it_acts
from .configs import LayerPositions, ModelPositions, attention_temperature, from_hf_config
from .content import CoPE, ForgettingGate, PaTH
from .i18n import get_language, language, set_language, tr
from .inference import KVCache, SinkWindowCache, decode_step, packed_position_ids, position_ids_from_mask
from .inference_time import LogNScaling, ReRoPE, SelfExtend
from .model import ENCODINGS, TinyLM, TinyLMConfig, make_encoding, register_encoding
from .printing import below
from .relative import (
    ShawRelativePosition,
    T5RelativeBias,
    diagonal_spread,
    offset_scores,
    relative_positions,
    relative_shift,
    t5_relative_bucket,
)
from .relative_functions import FIRE, Kerple
from .rope import (
    RotaryEmbedding,
    apply_decoupled_rope,
    apply_rope,
    rope_complex,
    rope_cos_sin,
    rope_decay_bound,
    rope_matrix,
    rotate_half,
)
from .scaling import ROPE_SCALINGS, ROPE_TYPES, rope_inv_freq, rotary_dim
from .xpos import XPos

__all__ = [
    "ALiBi", "CoPE", "ENCODINGS", "FIRE", "ForgettingGate", "KVCache", "Kerple", "LayerPositions", "LearnedEncoding",
    "LogNScaling", "ModelPositions", "MultiHeadAttention", "NoPE", "PaTH", "PositionalEncoding", "ROPE_SCALINGS",
    "ROPE_TYPES", "ReRoPE", "RotaryEmbedding", "SelfExtend", "ShawRelativePosition", "SinkWindowCache",
    "SinusoidalEncoding", "T5RelativeBias", "TinyLM", "TinyLMConfig", "XPos", "alibi_bias", "alibi_slopes",
    "apply_decoupled_rope", "apply_rope", "attention", "attention_temperature", "below", "decode_step",
    "diagonal_spread", "from_hf_config", "get_language", "language", "layout_permutation", "make_encoding",
    "offset_matrix", "offset_scores", "packed_position_ids", "position_ids_from_mask", "position_similarity",
    "register_encoding", "relative_positions", "relative_shift", "rope_complex", "rope_cos_sin", "rope_decay_bound",
    "rope_inv_freq", "rope_matrix", "rotary_dim", "rotate_half", "set_language", "similarity_by_distance",
    "sinusoidal_frequencies", "sinusoidal_table", "t5_relative_bucket", "tr", "where_it_acts",
]
