"""posenc_lib.configs.limits: sizes a config asks for are bounded before anything is built, at the entry of
read_pasted, from_hf_config and measure; pasted JSON that Python's parser cannot hold is one line.

A table: (id, call, error type, what the message must say), as the core modules' bad-input tests."""
import json

import pytest

from posenc_lib import _checks
from posenc_lib.configs import from_hf_config, measure, read_pasted
from posenc_lib.configs.limits import MAX_DEPTH, SIZE_LIMITS, check_sizes

LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 2}
BILLION = 10 ** 9


def _nested(depth: int) -> dict:
    config = dict(LLAMA)
    inner = config
    for _ in range(depth - 1):
        inner["extra"] = {}
        inner = inner["extra"]
    return config


def _capture(config, **settings):
    from posenc_lib.configs.measure import capture
    return capture(config, **settings)


def _pasted(**changes) -> str:
    return json.dumps({**LLAMA, **changes})


BAD = [
    # read_pasted: what Python's JSON parser cannot hold, one line each
    ("pasted an int", lambda: read_pasted(3), TypeError, r"pasted must be the config.json text or a dict, got int"),
    ("pasted bytes", lambda: read_pasted(b"{}"), TypeError, r"pasted must be the config.json text or a dict"),
    ("pasted not JSON", lambda: read_pasted("{'model_type': 'llama'}"), ValueError, r"the pasted text is not JSON"),
    ("pasted a list", lambda: read_pasted("[1, 2]"), TypeError, r"the pasted JSON must be an object"),
    ("pasted nested ten million deep", lambda: read_pasted("[" * 10 ** 7 + "]" * 10 ** 7), ValueError,
     r"the pasted JSON is nested too deeply to read"),
    ("pasted nested past the limit", lambda: read_pasted(json.dumps(_nested(MAX_DEPTH + 1))), ValueError,
     rf"config is nested more than {MAX_DEPTH} levels deep"),
    ("pasted an integer of 5000 digits", lambda: read_pasted('{"num_hidden_layers": ' + "9" * 5000 + "}"), ValueError,
     r"the pasted JSON holds an integer too long to read \(more than 4300 digits"),
    # read_pasted: sizes, each named by its key
    ("pasted a billion layers", lambda: read_pasted(_pasted(num_hidden_layers=BILLION)), ValueError,
     r"config\['num_hidden_layers'\] must be <= 1,024 \(the reader and measure build every layer\), "
     r"got 1,000,000,000"),
    ("pasted GPT-2's n_layer", lambda: read_pasted(_pasted(model_type="gpt2", n_layer=BILLION)), ValueError,
     r"config\['n_layer'\] must be <= 1,024"),
    ("pasted a text_config of a billion layers",
     lambda: read_pasted(json.dumps({"model_type": "gemma3", "text_config": {**LLAMA, "num_hidden_layers": BILLION}})),
     ValueError, r"config\['text_config'\]\['num_hidden_layers'\] must be <= 1,024"),
    ("pasted head_dim 10**12", lambda: read_pasted(_pasted(head_dim=10 ** 12)), ValueError,
     r"config\['head_dim'\] must be <= 4,096"),
    ("pasted qk_rope_head_dim", lambda: read_pasted(_pasted(qk_rope_head_dim=2 ** 20)), ValueError,
     r"config\['qk_rope_head_dim'\] must be <= 4,096"),
    ("pasted a per-layer head_dim", lambda: read_pasted(_pasted(per_layer_config={"1": {"head_dim": 2 ** 40}})),
     ValueError, r"config\['per_layer_config'\]\['1'\]\['head_dim'\] must be <= 4,096"),
    ("pasted hidden_size 10**12", lambda: read_pasted(_pasted(hidden_size=10 ** 12)), ValueError,
     r"config\['hidden_size'\] must be <= 1,048,576"),
    ("pasted max_position_embeddings 2**60", lambda: read_pasted(_pasted(max_position_embeddings=2 ** 60)),
     ValueError, r"config\['max_position_embeddings'\] must be <= 9,007,199,254,740,992 \(positions are exact"),
    ("pasted a window of 2**60", lambda: read_pasted(_pasted(sliding_window=2 ** 60)), ValueError,
     r"config\['sliding_window'\] must be <= 9,007,199,254,740,992"),
    ("pasted a float size", lambda: read_pasted(_pasted(num_hidden_layers=1e300)), ValueError,
     r"config\['num_hidden_layers'\] must be <= 1,024 .*got a number of 301 digits"),
    # a dict given directly
    ("dict of a billion layers", lambda: read_pasted({**LLAMA, "num_hidden_layers": BILLION}), ValueError,
     r"config\['num_hidden_layers'\] must be <= 1,024"),
    ("dict with an integer of 5000 digits", lambda: read_pasted({**LLAMA, "num_hidden_layers": 10 ** 5000}), ValueError,
     r"config\['num_hidden_layers'\] must be <= 1,024 .*got a number of 5001 digits"),
    ("dict nested past the limit", lambda: read_pasted(_nested(MAX_DEPTH + 1)), ValueError,
     r"config is nested more than 32 levels deep"),
    # from_hf_config and measure: the same limits at their entry
    ("from_hf_config a billion layers", lambda: from_hf_config({**LLAMA, "num_hidden_layers": BILLION}), ValueError,
     r"config\['num_hidden_layers'\] must be <= 1,024"),
    ("from_hf_config head_dim", lambda: from_hf_config({**LLAMA, "head_dim": 2 ** 31}), ValueError,
     r"config\['head_dim'\] must be <= 4,096"),
    ("measure a billion layers", lambda: measure({**LLAMA, "num_hidden_layers": BILLION}), ValueError,
     r"config\['num_hidden_layers'\] must be <= 1,024"),
    ("measure head_dim", lambda: measure({**LLAMA, "head_dim": 10 ** 6}), ValueError,
     r"config\['head_dim'\] must be <= 4,096"),
    ("measure a text_config head_dim", lambda: measure({"model_type": "gemma3", "text_config": {
        **LLAMA, "model_type": "gemma3_text", "head_dim": 10 ** 6}}), ValueError,
     r"config\['text_config'\]\['head_dim'\] must be <= 4,096"),
    ("measure a window", lambda: measure({**LLAMA, "model_type": "mistral", "sliding_window": 2 ** 62}), ValueError,
     r"config\['sliding_window'\] must be <="),
    ("measure not a dict", lambda: measure("config.json"), TypeError, r"config must be a dict"),
    ("capture seed a float", lambda: _capture(LLAMA, seed=0.5), TypeError, r"seed must be an int"),
    ("capture max_params 0", lambda: _capture(LLAMA, max_params=0), ValueError, r"max_params must be >= 1"),
    ("capture a model over max_params", lambda: _capture(LLAMA, max_params=10), ValueError,
     r"LlamaModel still has [\d,]+ parameters after shrinking"),
    ("measure no model_type", lambda: measure({"num_hidden_layers": 2}), ValueError,
     r"config\['model_type'\] is missing"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_refused_by_name(call, exc, pattern):
    pytest.importorskip("transformers")
    with pytest.raises(exc, match=pattern) as info:  # the size errors come from check_sizes, before any build
        call()
    assert "\n" not in str(info.value)  # one line


def test_the_limits_themselves_are_accepted():
    """At each limit the check passes (the bound is <=, and real configs stay far below it)."""
    check_sizes({key: limit for key, (limit, _) in SIZE_LIMITS.items()})
    read_pasted(json.dumps(_nested(MAX_DEPTH)))
    assert from_hf_config({**LLAMA, "num_hidden_layers": _checks.MAX_LAYERS}).num_layers == _checks.MAX_LAYERS


def test_capture_and_tiny_config_are_bounded_too():
    """measure's two steps, public on their own (the sweep calls capture), refuse the same sizes."""
    pytest.importorskip("transformers")
    from posenc_lib.configs.measure import capture, tiny_config
    for step in (capture, tiny_config):
        with pytest.raises(ValueError, match=r"config\['num_hidden_layers'\] must be <= 1,024"):
            step({**LLAMA, "num_hidden_layers": BILLION})
