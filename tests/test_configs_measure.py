"""posenc_lib.configs.measure: the facts read from a config against what the family's own modeling code does
(measured with transformers' modules: which layers rotate, the layout, the direction)."""
import pytest
import torch
from test_configs import NOT_MEASURED, READ, first_layers

from posenc_lib.configs import from_hf_config


def layer_facts(layer) -> tuple:
    return (layer.rope, layer.rotary_dims, layer.layout, layer.direction, layer.base, layer.rope_type,
            layer.attention, layer.window, layer.layer_type)


MEASURED = [m for m in READ if m["name"] not in NOT_MEASURED and from_hf_config(m["config"]).rope_layers]


@pytest.mark.parametrize("entry", MEASURED, ids=[m["name"] for m in MEASURED])
def test_every_read_entry_matches_what_its_familys_code_does(entry):
    """Each entry the reader accepts, against transformers' own code (configs.measure, through the sweep's check:
    which layers turn q and k, the dims, the layout, the direction and the q.q, k.k scores). The model is cut to
    the shortest prefix of layers that holds every kind of layer the full model has; the reader must say the same
    of those layers in the cut config as in the full one. Real head sizes (256 for Gemma) leave more parameters
    than the sweep's tiny defaults: measure may build up to 20M here."""
    from test_configs_sweep import check
    full = from_hf_config(entry["config"])
    count = max(indices[0] for _, indices in full.kinds()) + 1
    cut = first_layers(entry["config"], count)
    for a, b in zip(full.layers[:count], from_hf_config(cut).layers):
        assert layer_facts(a) == layer_facts(b), a.index
        if a.rope:
            torch.testing.assert_close(a.inv_freq, b.inv_freq, atol=0, rtol=0)
    assert check(cut, max_params=20_000_000) == {"to_dict": ("matched", "")}


GLM_LIKE = {"model_type": "glm4", "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "hidden_size": 128, "head_dim": 32, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                                     "partial_rotary_factor": 0.5}}


def test_measure_reads_glms_interleaved_pairs_and_nanochats_direction_from_the_code():
    """configs.measure on transformers' own code: GLM-4 pairs (2i, 2i+1) in the first half of the head (the
    reader's record says so too); a half-split family pairs (i, i + r/2); NanoChat turns the other way."""
    from posenc_lib.configs import measure
    glm = measure(GLM_LIKE).layers[0]
    assert (glm.rope, glm.layout, glm.rotary_dims, glm.direction) == (True, "interleaved", (0, 16), 1)
    torch.testing.assert_close(glm.inv_freq, from_hf_config(GLM_LIKE).layer(0).inv_freq, atol=1e-6, rtol=1e-5)
    assert glm.attention_factor == pytest.approx(1.0, abs=1e-6)
    llama = measure({**GLM_LIKE, "model_type": "llama", "rope_parameters": {"rope_type": "default",
                                                                            "rope_theta": 10000.0}}).layers[1]
    assert (llama.layout, llama.rotary_dims, llama.direction) == ("half", (0, 32), 1)
    nanochat = measure({**GLM_LIKE, "model_type": "nanochat", "rope_parameters": {"rope_type": "default",
                                                                                  "rope_theta": 10000.0}})
    assert nanochat.layers[0].direction == -1 and from_hf_config(
        {**GLM_LIKE, "model_type": "nanochat"}).layer(0).direction == -1


def test_measure_sees_which_layers_rotate():
    """Cohere2 turns q and k only on its sliding layers; a Qwen3-Next linear-attention layer has no q and k."""
    from posenc_lib.configs import measure
    cohere2 = {**GLM_LIKE, "model_type": "cohere2", "num_hidden_layers": 4, "sliding_window": 16,
               "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
    measured, read = measure(cohere2), from_hf_config(cohere2)
    assert [layer.rope for layer in measured.layers] == [True, True, True, False]
    assert [layer.rope for layer in read.layers] == [True, True, True, False]
    assert read.layer(0).layout == measured.layers[0].layout == "interleaved"
