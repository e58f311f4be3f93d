"""TinyLM, its config and the registry of encodings (make_encoding)."""
import math
import re

import pytest
import torch

from posenc_lib import ENCODINGS, NoPE, RotaryEmbedding, SinusoidalEncoding, TinyLM, make_encoding
from posenc_lib.attention import PositionalEncoding
from posenc_lib.model import TinyLMConfig, register_encoding


@pytest.mark.parametrize("kind", ENCODINGS)
def test_tinylm_forward_and_loss(kind):
    torch.manual_seed(4)
    model = TinyLM(30, encoding=kind, d_model=32, num_heads=4, num_layers=2, max_len=64)
    idx = torch.randint(0, 30, (3, 17))
    logits, loss = model(idx, idx)
    assert logits.shape == (3, 17, 30) and loss.ndim == 0 and math.isfinite(loss.item())
    assert loss.item() == pytest.approx(math.log(30), rel=0.15)  # untrained: close to uniform
    logits_none, none = model(idx)
    assert none is None and torch.equal(logits_none, logits)
    # causal: the logits at t do not depend on tokens after t
    idx2 = idx.clone()
    idx2[:, 10:] = (idx2[:, 10:] + 1) % 30
    torch.testing.assert_close(model(idx2)[0][:, :10], logits[:, :10], atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ENCODINGS)
def test_tinylm_relative_encodings_ignore_a_shift_of_all_positions(kind):
    torch.manual_seed(5)
    model = TinyLM(30, encoding=kind, d_model=32, num_heads=4, num_layers=1, max_len=128)
    idx = torch.randint(0, 30, (2, 12))
    base, shifted = model(idx)[0], model(idx, positions=torch.arange(50, 62))[0]
    if kind in ("sinusoidal", "learned"):  # absolute encodings see the shift
        assert not torch.allclose(base, shifted, atol=1e-4)
    else:  # relative ones (and NoPE) only see key - query
        torch.testing.assert_close(base, shifted, atol=1e-4, rtol=0)


def test_same_seed_same_shared_weights_whatever_the_encoding():
    """The encoding is built last, so its own weights (learned table, T5 bias) do not shift the RNG
    draws of the token embedding, the blocks and the head (README, notebook 07)."""
    def shared(kind):
        torch.manual_seed(0)
        model = TinyLM(20, encoding=kind, d_model=16, num_heads=2, num_layers=2, max_len=32)
        return {n: p for n, p in model.named_parameters() if ".encoding." not in n and not n.startswith("encoding.")}

    reference = shared("nope")
    for kind in ENCODINGS:
        weights = shared(kind)
        assert weights.keys() == reference.keys()
        assert all(torch.equal(weights[n], reference[n]) for n in reference), kind


class _CountingSinusoidal(SinusoidalEncoding):
    calls = 0

    def add_to_input(self, x, positions=None):
        type(self).calls += 1
        return super().add_to_input(x, positions)


def test_tinylm_adds_an_input_encoding_once_not_per_layer():
    model = TinyLM(10, encoding=_CountingSinusoidal(16), d_model=16, num_heads=2, num_layers=3)
    model(torch.zeros(1, 4, dtype=torch.long))
    assert _CountingSinusoidal.calls == 1


def test_tinylm_trains_and_moves_between_devices():
    torch.manual_seed(6)
    model = TinyLM(12, encoding="rope", d_model=32, num_heads=2, num_layers=1)
    data = torch.arange(12).repeat(4, 3)[:, :24]  # a cyclic sequence: easy to learn
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    first = None
    for _ in range(25):
        _, loss = model(data[:, :-1], data[:, 1:])
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first
    # .to()/.double() walk every submodule: a RotaryEmbedding method named `_apply` used to shadow
    # nn.Module._apply and crash here (regression test)
    model.double()
    model.to("meta")
    assert next(model.parameters()).device.type == "meta"


def test_replace_encoding_swaps_every_layer():
    model = TinyLM(10, encoding="rope", d_model=16, num_heads=2, num_layers=3)
    new = RotaryEmbedding(8, scaling={"rope_type": "linear", "factor": 4.0})
    model.replace_encoding(new)
    assert model.encoding is new and all(block.attn.encoding is new for block in model.blocks)
    model.replace_encoding(NoPE())
    model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="encoding must be a PositionalEncoding"):
        model.replace_encoding(lambda q, k: (q, k))


def test_t5_bias_is_shared_by_all_layers():
    model = TinyLM(10, encoding="t5", d_model=16, num_heads=2, num_layers=3)
    tables = {id(block.attn.encoding.relative_attention_bias.weight) for block in model.blocks}
    assert len(tables) == 1
    assert sum(p.numel() for n, p in model.named_parameters() if "relative_attention_bias" in n) == 32 * 2


# ------------------------------------------------------------------ one config, one registry
def test_from_config_builds_the_same_model_as_the_keywords():
    cfg = TinyLMConfig(17, encoding="t5", d_model=16, num_heads=2, num_layers=2, num_buckets=8, max_distance=20)
    torch.manual_seed(0)
    a = TinyLM.from_config(cfg)
    torch.manual_seed(0)
    b = TinyLM(17, encoding="t5", d_model=16, num_heads=2, num_layers=2, num_buckets=8, max_distance=20)
    assert a.config == b.config == cfg
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert a.encoding.num_buckets == 8 and a.encoding.max_distance == 20 and not a.encoding.bidirectional


@pytest.mark.parametrize("kind,settings,check", [
    ("sinusoidal", {}, lambda e: e.dim == 32),
    ("learned", {"max_len": 77}, lambda e: e.table.weight.shape == (77, 32)),
    ("t5", {"num_buckets": 10, "max_distance": 40},
     lambda e: (e.num_heads, e.num_buckets, e.max_distance) == (4, 10, 40)),
    ("shaw", {"max_relative_position": 3}, lambda e: e.key_table.shape == (7, 8)),
    ("rope", {"rope_base": 500.0, "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
     lambda e: e.dim == 8 and e.base == 500.0 and e.scaling["factor"] == 2.0),
    ("alibi", {}, lambda e: e.num_heads == 4),
    ("nope", {"max_len": 3}, lambda e: True),  # settings of other encodings are not used
])
def test_each_encoding_builds_itself_from_the_config(kind, settings, check):
    enc = make_encoding(kind, d_model=32, num_heads=4, **settings)
    assert type(enc) is ENCODINGS[kind] and check(enc)
    from_config = make_encoding(TinyLMConfig(encoding=kind, d_model=32, num_heads=4, **settings))
    assert type(from_config) is type(enc) and repr(from_config) == repr(enc)


def test_an_encoding_module_in_the_config_is_used_as_it_is():
    enc = SinusoidalEncoding(16)
    assert make_encoding(TinyLMConfig(encoding=enc, d_model=16, num_heads=2)) is enc
    assert TinyLM(5, encoding=enc, d_model=16, num_heads=2).encoding is enc


class _Recency(PositionalEncoding):
    """A learner's own encoding: score bias = the key's position (later keys weigh more), per head."""

    def __init__(self, num_heads):
        super().__init__()
        self.num_heads = num_heads

    @classmethod
    def from_config(cls, config):
        return cls(config.num_heads)

    def score_bias(self, q, q_positions, k_positions):
        return k_positions.to(q.dtype).expand(1, self.num_heads, q.shape[-2], k_positions.shape[-1])


def test_registered_encodings_build_and_run_like_the_others():
    register_encoding("recency", _Recency)
    try:
        assert "recency" in ENCODINGS
        model = TinyLM(9, encoding="recency", d_model=16, num_heads=2, num_layers=1)
        assert isinstance(model.encoding, _Recency) and model.encoding.num_heads == 2
        idx = torch.tensor([[1, 2, 3, 4, 5]])
        with_bias = model(idx)[0]
        model.replace_encoding(NoPE())
        assert not torch.allclose(with_bias, model(idx)[0], atol=1e-4)  # its score bias was used
        with pytest.raises(ValueError, match=r"name 'recency' is already registered for _Recency"):
            register_encoding("recency", SinusoidalEncoding)
    finally:
        ENCODINGS.pop("recency", None)


# ------------------------------------------------------------------ bad input: (id, call, exception, message)
def _lm(**kwargs):
    return TinyLM(5, **{"d_model": 8, "num_heads": 2, **kwargs})


LONG = torch.zeros(1, 4, dtype=torch.long)
BAD = [
    ("encoding kind", lambda: make_encoding("absolute", d_model=8, num_heads=2), ValueError,
     re.escape(f"kind must be one of {sorted(ENCODINGS)}")),
    ("make_encoding zero heads", lambda: make_encoding("alibi", d_model=8, num_heads=0), ValueError,
     r"num_heads must be >= 1, got 0"),
    ("make_encoding heads do not divide", lambda: make_encoding("rope", d_model=10, num_heads=4), ValueError,
     r"d_model must be divisible by num_heads, got d_model=10, num_heads=4"),
    ("make_encoding config and settings", lambda: make_encoding(TinyLMConfig(), d_model=8), TypeError,
     r"make_encoding\(config\) takes no other settings"),
    ("make_encoding unknown setting", lambda: make_encoding("rope", d_model=8, num_heads=2, rope_theta=5.0), TypeError,
     r"rope_theta"),
    ("config vocab zero", lambda: TinyLMConfig(0), ValueError, r"vocab_size must be >= 1"),
    ("config dropout NaN", lambda: TinyLMConfig(dropout=float("nan")), ValueError, r"dropout must be a finite number"),
    ("config dropout 1", lambda: TinyLMConfig(dropout=1.0), ValueError, r"dropout must be < 1"),
    ("config rope_base string", lambda: TinyLMConfig(rope_base="1e4"), TypeError, r"rope_base must be a number"),
    ("config rope_base inf", lambda: TinyLMConfig(rope_base=float("inf")), ValueError,
     r"rope_base must be a finite number"),
    ("config rope_scaling", lambda: TinyLMConfig(rope_scaling="linear"), TypeError, r"rope_scaling must be a dict"),
    ("config layers zero", lambda: TinyLMConfig(num_layers=0), ValueError, r"num_layers must be >= 1"),
    ("config Shaw clip", lambda: TinyLMConfig(max_relative_position=-1), ValueError,
     r"max_relative_position must be >= 0"),
    ("TinyLM encoding type", lambda: _lm(encoding=3), TypeError, r"encoding must be one of"),
    ("TinyLM encoding name", lambda: TinyLM(129, encoding="ropee"), ValueError,
     r"encoding must be one of .*'rope'.*got 'ropee'"),
    ("TinyLM zero heads", lambda: _lm(num_heads=0), ValueError, r"num_heads must be >= 1"),
    ("TinyLM vocab float", lambda: TinyLM(5.0), TypeError, r"vocab_size must be an int"),
    ("from_config not a config", lambda: TinyLM.from_config({"vocab_size": 5}), TypeError,
     r"config must be a TinyLMConfig"),
    ("TinyLM float idx", lambda: _lm()(torch.zeros(1, 4)), TypeError, r"idx must be an integer tensor"),
    ("TinyLM 1-D idx", lambda: _lm()(torch.zeros(4, dtype=torch.long)), ValueError,
     r"idx must have shape \(batch, seq\)"),
    ("TinyLM idx past vocab", lambda: _lm()(torch.tensor([[0, 5]])), ValueError,
     r"idx must hold token ids in \[0, vocab_size=5\), got min 0, max 5"),
    ("TinyLM negative idx", lambda: _lm()(torch.tensor([[-1, 2]])), ValueError,
     r"idx must hold token ids in \[0, vocab"),
    ("TinyLM targets shape", lambda: _lm()(LONG, torch.zeros(1, 3, dtype=torch.long)), ValueError,
     r"targets must have idx's shape \(1, 4\)"),
    ("TinyLM targets float", lambda: _lm()(LONG, torch.zeros(1, 4)), TypeError, r"targets must be an integer tensor"),
    ("TinyLM targets past vocab", lambda: _lm()(LONG, torch.full((1, 4), 7)), ValueError,
     r"targets must hold token ids in \[0, vocab_size=5\)"),
    ("TinyLM no targets", lambda: _lm()(torch.zeros(1, 0, dtype=torch.long), torch.zeros(1, 0, dtype=torch.long)),
     ValueError, r"targets must have idx's shape \(1, 0\) with at least one token"),
    ("TinyLM positions", lambda: _lm(encoding="rope")(LONG, positions=torch.arange(3)), ValueError,
     r"positions must have shape"),
    ("TinyLM positions batch", lambda: _lm()(LONG.expand(2, 4), positions=torch.zeros(3, 4, dtype=torch.long)),
     ValueError, r"positions of shape \(3, 4\) does not fit: expected batch 1 or 2"),
    ("TinyLM learned past max_len", lambda: _lm(encoding="learned", max_len=4)(torch.zeros(1, 6, dtype=torch.long)),
     ValueError, r"max_len=4"),
    ("register not a class", lambda: register_encoding("x", SinusoidalEncoding(8)), TypeError,
     r"cls must be a PositionalEncoding subclass"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ------------------------------------------------------------------ devices: cpu, meta, cuda when present
@pytest.mark.parametrize("kind", list(ENCODINGS))
def test_tinylm_stays_on_the_callers_device(kind, device):
    model = TinyLM(11, encoding=kind, d_model=16, num_heads=2, num_layers=1, max_len=8).to(device=device,
                                                                                            dtype=torch.float64)
    idx = torch.zeros(2, 5, dtype=torch.long, device=device)
    logits, loss = model(idx, idx)
    for out in (logits, loss):
        assert out.device.type == device.type and out.dtype == torch.float64


def test_tinylm_refuses_tensors_on_another_device(device):
    other = torch.device("meta" if device.type != "meta" else "cpu")
    model = _lm().to(device)
    idx = torch.zeros(1, 4, dtype=torch.long, device=device)
    with pytest.raises(ValueError, match=r"token_embedding must be on idx's device"):
        model(torch.zeros(1, 4, dtype=torch.long, device=other))
    with pytest.raises(ValueError, match=r"targets must be on idx's device"):
        model(idx, torch.zeros(1, 4, dtype=torch.long, device=other))
    with pytest.raises(ValueError, match=r"positions must be on the device of the tensor it indexes"):
        model(idx, positions=torch.arange(4, device=other))


def test_ignored_targets_are_not_scored():
    """-100 (F.cross_entropy's ignore_index) marks a position without a target: allowed, left out of the loss."""
    torch.manual_seed(0)
    model = TinyLM(7, encoding="rope", d_model=8, num_heads=2, num_layers=1)
    idx = torch.randint(0, 7, (2, 5))
    targets = torch.randint(0, 7, (2, 5))
    some_ignored = targets.clone()
    some_ignored[:, :2] = -100
    logits, loss = model(idx, some_ignored)
    expected = torch.nn.functional.cross_entropy(logits[:, 2:].reshape(-1, 7), targets[:, 2:].reshape(-1))
    torch.testing.assert_close(loss, expected)
    with pytest.raises(ValueError, match=r"targets must hold token ids in \[0, vocab_size=7\) or -100"):
        model(idx, torch.full((2, 5), -5))


@pytest.mark.parametrize("settings, exc, match", [
    (dict(rope_scaling={"rope_type": "linear", "factor": -1.0}), ValueError, r"scaling\['factor'\] must be >= 1"),
    (dict(d_model=6, num_heads=2), ValueError, r"RoPE needs an even head_dim.*d_model=6, num_heads=2"),
])
def test_config_checks_rope_settings_when_made(settings, exc, match):
    with pytest.raises(exc, match=match):
        TinyLMConfig(**settings)
    with pytest.raises(exc, match=match):
        TinyLM(10, **settings)


def test_all_ignored_targets_are_an_error_not_a_nan_loss():
    model = TinyLM(10, d_model=16, num_heads=2, num_layers=1)
    with pytest.raises(ValueError, match=r"targets must have at least one position that is not -100"):
        model(torch.tensor([[1, 2]]), torch.tensor([[-100, -100]]))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32])
def test_small_integer_token_ids_work(dtype):
    torch.manual_seed(0)
    model = TinyLM(10, encoding="learned", d_model=16, num_heads=2, num_layers=1, max_len=8)
    idx = torch.tensor([[1, 2, 9]])
    torch.testing.assert_close(model(idx.to(dtype))[0], model(idx)[0], rtol=0, atol=0)


def test_make_encoding_names_kind():
    with pytest.raises(TypeError, match=r"kind must be a name in \["):
        make_encoding(123)


def test_a_registered_encoding_checks_the_config_before_any_weight_is_drawn():
    class NeedsFourHeads(NoPE):
        @classmethod
        def check_config(cls, config):
            if config.num_heads != 4:
                raise ValueError(f"num_heads must be 4 for this encoding, got {config.num_heads}")

    register_encoding("needs_four_heads", NeedsFourHeads)
    try:
        TinyLMConfig(encoding="needs_four_heads", d_model=16, num_heads=4)
        with pytest.raises(ValueError, match="num_heads must be 4"):
            TinyLMConfig(encoding="needs_four_heads", d_model=16, num_heads=2)
    finally:
        del ENCODINGS["needs_four_heads"]
