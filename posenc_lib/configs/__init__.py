"""Which RoPE does this checkpoint use? A model's config.json read layer by layer, and checked against its code.

    layers.py    the data model: LayerPositions (one layer), ModelPositions (all of them)
    families.py  what each model family's transformers code decides (layout, which layers rotate ...), as data
    reader.py    from_hf_config(config): the config's numbers + the family's record -> ModelPositions
    measure.py   measure(config): the same facts measured from transformers' own code (where installed)
    report.py    the tables and lines a learner reads (i18n: English / Chinese)
    limits.py    check_sizes(config): the sizes a config may ask for, bounded before the reader or measure builds
"""
from .families import REGISTRY, Family
from .layers import ATTENTION_KINDS, LayerPositions, ModelPositions, attention_temperature
from .measure import Measured, MeasuredLayer, measure, side_by_side
from .reader import FAMILIES, FAMILY_DEFAULTS, LAYER_RULES, MIXERS, from_hf_config, read_pasted
from .report import KIND_NAMES, layer_ranges, table_cell

__all__ = ["ATTENTION_KINDS", "FAMILIES", "FAMILY_DEFAULTS", "Family", "KIND_NAMES", "LAYER_RULES", "LayerPositions",
           "MIXERS", "Measured", "MeasuredLayer", "ModelPositions", "REGISTRY", "attention_temperature",
           "from_hf_config", "layer_ranges", "measure", "read_pasted", "side_by_side", "table_cell"]
