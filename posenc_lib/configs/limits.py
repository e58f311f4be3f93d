"""The sizes a config.json may ask for, bounded before anything of that size is built: `check_sizes(config)`.

A config is a user's text: a typo or a test of the tool asks for a billion layers or a head of 10**12 dims. The
reader builds a list per layer and a frequency per pair, `measure` a model per config: above the limits below, an
error names the key instead (real configs stay far below them; see _checks.MAX_LAYERS). Pasted JSON nested deeper
than MAX_DEPTH is refused too (a config.json nests a few levels: text_config, rope_parameters by layer type).
"""
from __future__ import annotations

import math
import numbers

from .. import _checks

_LAYERS = (_checks.MAX_LAYERS, "the reader and measure build every layer")
_HEAD = (_checks.MAX_HEAD_DIM, "a head's frequencies and measure's tiny heads are built at this size")
_WIDTH = (_checks.MAX_HIDDEN, "the head size is hidden_size / heads when head_dim is not given")
_POSITION = (_checks.MAX_POSITION, "positions are exact in float64 up to 2**53")
SIZE_LIMITS = {  # config key -> (largest value, why there is a limit)
    **dict.fromkeys(("num_hidden_layers", "n_layer"), _LAYERS),
    **dict.fromkeys(("head_dim", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "global_head_dim",
                     "index_head_dim", "rotary_dim"), _HEAD),
    **dict.fromkeys(("hidden_size", "n_embd", "num_attention_heads", "n_head", "num_key_value_heads"), _WIDTH),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "original_max_position_embeddings", "sliding_window",
                     "attention_chunk_size"), _POSITION),
}
MAX_DEPTH = 32


def check_sizes(config) -> None:
    """Every size in SIZE_LIMITS, at the top of `config`, in its text_config and in each per_layer_config entry,
    must be at most its limit: a ValueError names the key (config['text_config']['num_hidden_layers']) otherwise.
    Values that are not numbers are left to the reader, which names them. Also refuses nesting deeper than
    MAX_DEPTH. A config that is not a dict is left to the caller's own check."""
    if not isinstance(config, dict):
        return
    _check_depth(config)
    parts = [("config", config)]
    if isinstance(config.get("text_config"), dict):
        parts.append(("config['text_config']", config["text_config"]))
    for where, part in list(parts):
        layers = part.get("per_layer_config")
        if isinstance(layers, dict):
            parts += [(f"{where}['per_layer_config'][{key!r}]", entry) for key, entry in layers.items()
                      if isinstance(entry, dict)]
    for where, part in parts:
        for key, (limit, why) in SIZE_LIMITS.items():
            value = part.get(key)
            if not isinstance(value, bool) and (isinstance(value, numbers.Integral) or (  # (isfinite(10**5000) fails)
                    isinstance(value, numbers.Real) and math.isfinite(value))):
                _checks.at_most(f"{where}[{key!r}]", value, limit, why)


def _check_depth(config: dict) -> None:
    """No list or dict nested deeper than MAX_DEPTH (walked without recursion: a deep one cannot overflow here)."""
    todo = [(config, 1)]
    while todo:
        value, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"config is nested more than {MAX_DEPTH} levels deep (a config.json nests a few: "
                             f"text_config, rope_parameters by layer type)")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        todo += [(child, depth + 1) for child in children if isinstance(child, (dict, list))]
