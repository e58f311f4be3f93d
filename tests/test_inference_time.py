"""ReRoPE, Leaky ReRoPE, Self-Extend and log-n scaling (posenc_lib.inference_time) against per-element float64
references (each score is q rotated by the distance the method assigns, against the unrotated key), the protocol's
rules, a KV cache's decode against a full forward, bad input and the meta device."""
import math

import pytest
import torch

from posenc_lib.encoding_rules import encoding_rule_problems
from posenc_lib.inference import KVCache, decode_step
from posenc_lib.inference_time import LogNScaling, ReRoPE, SelfExtend, log_n_factor
from posenc_lib.model import TinyLM
from posenc_lib.rope import RotaryEmbedding

HD = 8


def _score(q, k, distance, base=10000.0):
    """<R_distance q, k> / sqrt(d), pairs (x[i], x[i + d/2]) rotated by distance * base ** (-2i/d), in float64.
    RoPE's <R_i q, R_j k> is this at distance i - j."""
    d = q.numel()
    total = 0.0
    for i in range(d // 2):
        angle = distance * base ** (-2 * i / d)
        q1, q2, k1, k2 = float(q[i]), float(q[i + d // 2]), float(k[i]), float(k[i + d // 2])
        total += (q1 * math.cos(angle) - q2 * math.sin(angle)) * k1 + (q2 * math.cos(angle) + q1 * math.sin(angle)) * k2
    return total / math.sqrt(d)


def _reference(q, k, qp, kp, distance_of, row_scale=lambda i: 1.0):
    """(B, H, Tq, Tk) scores: query i, key j scored at distance_of(i, j), times row_scale(i)."""
    B, H, Tq, _ = q.shape
    out = torch.empty(B, H, Tq, k.shape[2], dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            for a, i in enumerate(qp.tolist()):
                for c, j in enumerate(kp.tolist()):
                    out[b, h, a, c] = _score(q[b, h, a], k[b, h, c], distance_of(i, j)) * row_scale(i)
    return out


def _edited(enc, q, k, qp, kp):
    from posenc_lib.attention import ScoreInputs, _scores
    x = torch.zeros(q.shape[0], q.shape[2], q.shape[1] * q.shape[3], dtype=q.dtype)
    return enc.edit_scores(_scores(q, k), ScoreInputs(q, k, qp, kp, x, None))


QP, KP = torch.tensor([0, 3, 9, 20, 21]), torch.tensor([0, 1, 3, 8, 9, 12, 20, 21])


def _qk():
    torch.manual_seed(0)
    return torch.randn(1, 2, len(QP), HD, dtype=torch.float64), torch.randn(1, 2, len(KP), HD, dtype=torch.float64)


@pytest.mark.parametrize("k_factor", [None, 3.0])
def test_rerope_matches_its_distances(k_factor):
    q, k = _qk()
    w = 4
    enc = ReRoPE(RotaryEmbedding(HD), w, k=k_factor)

    def distance(i, j):
        d = i - j
        return d if d < w else (w if k_factor is None else w + (d - w) / k_factor)

    torch.testing.assert_close(_edited(enc, q, k, QP, KP), _reference(q, k, QP, KP, distance))


@pytest.mark.parametrize("window, group", [(4, 2), (6, 3), (5, 2)])
def test_self_extend_matches_the_authors_positions(window, group):
    q, k = _qk()
    enc = SelfExtend(RotaryEmbedding(HD), window, group)

    def distance(i, j):
        return i - j if i - j < window else (i // group + window - window // group) - j // group

    torch.testing.assert_close(_edited(enc, q, k, QP, KP), _reference(q, k, QP, KP, distance))


def test_self_extend_meets_rope_at_the_window_edge():
    """With G dividing W, the grouped distance at d = W is W: the two schemes agree at the edge."""
    w, g = 6, 3
    for i in range(w, 40):
        assert (i // g + w - w // g) - (i - w) // g == w


def test_log_n_scales_rows_past_the_training_length():
    q, k = _qk()
    enc = LogNScaling(RotaryEmbedding(HD), 8)
    got = _edited(enc, *enc.rope.rotate_qk(q, k, QP, KP), QP, KP)
    want = _reference(q, k, QP, KP, lambda i, j: i - j, lambda i: max(1.0, math.log(i + 1) / math.log(8)))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(log_n_factor(torch.tensor([0, 7, 8, 63]), 8),
                               torch.tensor([1.0, 1.0, math.log(9) / math.log(8), 2.0], dtype=torch.float64))


def test_log_n_option_of_rerope_scales_its_rows():
    q, k = _qk()
    plain, scaled = ReRoPE(RotaryEmbedding(HD), 4), ReRoPE(RotaryEmbedding(HD), 4, log_n_length=8)
    factor = log_n_factor(QP, 8)[None, None, :, None]
    torch.testing.assert_close(_edited(scaled, q, k, QP, KP), _edited(plain, q, k, QP, KP) * factor)


def test_within_the_window_every_method_is_the_trained_rope():
    """No distance reaches the window: the scores are RoPE's (log-n: within the training length)."""
    torch.manual_seed(1)
    rope = RotaryEmbedding(HD)
    model = TinyLM(17, encoding=rope, d_model=16, num_heads=2, num_layers=2).eval()
    ids = torch.randint(0, 17, (2, 6))
    with torch.no_grad():
        want, _ = model(ids)
        for enc in (ReRoPE(rope, 6), ReRoPE(rope, 6, k=4.0), SelfExtend(rope, 6, 2), LogNScaling(rope, 6)):
            model.replace_encoding(enc)
            torch.testing.assert_close(model(ids)[0], want, atol=1e-6, rtol=0)


def _methods():
    rope = RotaryEmbedding(16)
    return {"rerope": ReRoPE(rope, 3), "leaky": ReRoPE(rope, 3, k=2.0, log_n_length=4),
            "self_extend": SelfExtend(rope, 4, 2, log_n_length=4), "log_n": LogNScaling(rope, 4)}


@pytest.mark.parametrize("name", list(_methods()))
def test_keeps_the_protocols_rules(name):
    assert encoding_rule_problems(_methods()[name]) == []


@pytest.mark.parametrize("rotated", [True, False])
@pytest.mark.parametrize("name", list(_methods()))
def test_decoding_from_a_kv_cache_equals_the_full_forward(name, rotated):
    """Prefill 4 tokens, then one a step past every window and training length: the logits of a full forward
    within 1e-5, and different from plain RoPE's past the window (the method is not a no-op)."""
    encoding = _methods()[name]
    torch.manual_seed(0)
    model = TinyLM(23, encoding=encoding, d_model=64, num_heads=4, num_layers=2).eval()
    ids = torch.randint(0, 23, (2, 12), generator=torch.Generator().manual_seed(1))
    cache = KVCache(2, rotated=rotated)
    with torch.no_grad():
        full, _ = model(ids)
        steps = [decode_step(model, ids[:, :4], cache)]
        steps += [decode_step(model, ids[:, t:t + 1], cache) for t in range(4, ids.shape[1])]
        model.replace_encoding(encoding.rope)
        rope, _ = model(ids)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=0)
    assert (rope[:, -1] - full[:, -1]).abs().max() > 1e-3


def test_partial_rope_and_interleaved_layout_are_kept():
    """The method rotates as the model's RoPE does: with a partial, interleaved RoPE and a window past every
    distance, ReRoPE gives that RoPE's scores."""
    torch.manual_seed(2)
    rope = RotaryEmbedding(HD, layout="interleaved", partial_rotary_factor=0.5)
    q, k = torch.randn(1, 2, 5, HD), torch.randn(1, 2, 5, HD)
    pos = torch.arange(5)
    from posenc_lib.attention import _scores
    torch.testing.assert_close(_edited(ReRoPE(rope, 10), q, k, pos, pos), _scores(*rope.rotate_qk(q, k, pos, pos)))
    # and past the window, the far scores rotate only the rotary slice: the copied dims score as plain dot products
    far = _edited(ReRoPE(rope, 1), q, k, pos, pos)
    assert not torch.allclose(far, _scores(*rope.rotate_qk(q, k, pos, pos)))


@pytest.mark.parametrize("name", list(_methods()))
def test_on_the_meta_device(name):
    enc = _methods()[name].to("meta")
    q = torch.empty(2, 4, 7, 16, device="meta")
    pos = torch.arange(7, device="meta")
    if name == "log_n":
        q, _ = enc.rotate_qk(q, q, pos, pos)
    out = _edited(enc, q, q, pos, pos)
    assert out.device.type == "meta" and out.shape == (2, 4, 7, 7)


@pytest.mark.parametrize("call, error, message", [
    (lambda: ReRoPE(torch.nn.Linear(2, 2), 4), TypeError, "rope must be the trained model's"),
    (lambda: ReRoPE(RotaryEmbedding(8), 0), ValueError, "window must be >= 1"),
    (lambda: ReRoPE(RotaryEmbedding(8), 4, k=1.0), ValueError, "k must be > 1.0"),
    (lambda: ReRoPE(RotaryEmbedding(8), 4, log_n_length=1), ValueError, "log_n_length must be >= 2"),
    (lambda: SelfExtend(RotaryEmbedding(8), 4, 0), ValueError, "group must be >= 1"),
    (lambda: SelfExtend(RotaryEmbedding(8), 4.0, 2), TypeError, "window must be an int"),
    (lambda: LogNScaling(RotaryEmbedding(8), None), TypeError, "train_len must be an int"),
    (lambda: log_n_factor(torch.arange(3.0), 8), TypeError, "q_positions must be an integer tensor"),
    (lambda: _edited(ReRoPE(RotaryEmbedding(8), 2), torch.randn(1, 1, 3, 6), torch.randn(1, 1, 3, 6),
                     torch.arange(3), torch.arange(3)), ValueError, "dim=8"),
])
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("name", ["rerope", "leaky", "self_extend", "log_n"])
def test_attention_with_each_method_compiles_as_one_graph(name):
    """No host read in the hot path: torch.compile(fullgraph=True) (dynamo's tracing, the "eager" backend) traces a
    causal MultiHeadAttention with the method, and gives the eager result."""
    from posenc_lib.attention import MultiHeadAttention
    torch.manual_seed(0)
    mha = MultiHeadAttention(64, 4, encoding=_methods()[name], causal=True)
    x, positions = torch.randn(2, 12, 64), torch.arange(3, 15)
    torch._dynamo.reset()
    fn = torch.compile(lambda t, p: mha(t, p), fullgraph=True, backend="eager")
    torch.testing.assert_close(fn(x, positions), mha(x, positions), atol=1e-6, rtol=0)
