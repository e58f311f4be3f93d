"""posenc_lib.configs.report: the tables and lines a learner reads, and the one table of layer-kind names
(KIND_NAMES) that the report and the plots share."""
import math

import pytest
import torch
from test_configs import entries_named

from posenc_lib.configs import ATTENTION_KINDS, KIND_NAMES, MIXERS, from_hf_config
from posenc_lib.i18n import language, tr


def test_report_and_helpers():
    gemma = entries_named("Gemma 3")
    rows = gemma.rows()
    assert [r["count"] for r in rows] == [29, 5] and rows[1]["base"] == 1e6 and rows[0]["attention"] == "sliding 1024"
    assert rows[1]["longest_wavelength"] == pytest.approx(2 * math.pi * 8 * 1e6 ** (254 / 256), rel=1e-12)
    text = gemma.table()
    assert "sliding 1024" in text and "linear" in text and str(gemma) == text
    assert "every 4" in entries_named("SmolLM3").table()
    assert gemma.layer(-1).index == 33
    torch.testing.assert_close(gemma.layer(5).wavelengths, 2 * math.pi / gemma.layer(5).inv_freq)
    assert gemma.layer(0).describe().startswith("layer 0: RoPE half")
    nope = entries_named("Llama 4").layer(3)
    assert "NoPE" in nope.describe() and "temperature" in nope.describe()
    assert torch.equal(nope.apply(torch.ones(1, 2, 128)), torch.ones(1, 2, 128))
    with pytest.raises(ValueError, match=r"layer 3 has no RoPE"):
        nope.frequencies()


def test_defaults_are_marked_and_the_scaling_start_is_named_for_what_it_is():
    positions = from_hf_config({"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 2,
                                "num_hidden_layers": 6, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                                         "original_max_position_embeddings": 1024}})
    assert "rope_theta" in positions.defaults_used and "head_dim" in positions.defaults_used
    table = positions.table()
    assert "defaults" in table and "rope_local_base_freq" in table
    assert "the scaling starts from length 1024" in table and "pretrained" not in table


def test_layer_kind_names_are_one_table_in_both_languages():
    """The report and the plots name each kind of layer from the one table (KIND_NAMES), in English and Chinese:
    every kind plots.production.layer_kind can give has a name there, and the report shows the same words."""
    from posenc_lib.plots.production import _KIND_NAMES, layer_kind
    read = from_hf_config({"model_type": "lfm2", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 3,
                           "rope_theta": 1e4, "sliding_window": 8,
                           "layer_types": ["conv", "sliding_attention", "conv"]})
    for lang in ("en", "zh"):
        with language(lang):
            for kind in ATTENTION_KINDS:
                assert str(_KIND_NAMES[f"RoPE, {kind}"]) == tr("RoPE, ", "RoPE，") + str(KIND_NAMES[kind])
            for mixer in MIXERS.values():
                assert str(_KIND_NAMES[mixer]) == str(KIND_NAMES[mixer])
            conv, sliding = read.layer(0), read.layer(1)
            assert layer_kind(conv) == "convolution" and layer_kind(sliding) == "RoPE, sliding"
            rows = read.rows()
            assert {row["attention"] for row in rows} == {str(KIND_NAMES["convolution"]),
                                                          f"{KIND_NAMES['sliding']} 8"}
    with language("zh"):
        assert "短卷积" in read.table() and "滑动窗口 8" in read.table()
