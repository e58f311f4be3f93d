"""Kerple and FIRE (posenc_lib.relative_functions) against per-element float64 references written from the papers'
formulas, their registration, gradients, bad input and the meta device."""
import math

import pytest
import torch

from posenc_lib.encoding_rules import encoding_rule_problems
from posenc_lib.model import ENCODINGS, TinyLM, make_encoding
from posenc_lib.relative_functions import FIRE, Kerple


def _q(heads=3, seq=6, batch=2):
    return torch.randn(batch, heads, seq, 4, dtype=torch.float64)


@pytest.mark.parametrize("variant", ["log", "power"])
def test_kerple_matches_a_per_element_reference(variant):
    torch.manual_seed(0)
    enc = Kerple(3, variant=variant).double()
    with torch.no_grad():
        enc.r1.copy_(torch.tensor([0.5, 1.7, 0.001]))  # the last below eps: read as eps = 0.01
        enc.r2.copy_(torch.tensor([0.3, 2.5, 0.9]))    # power: 2.5 read as 2
    qp, kp = torch.tensor([3, 7, 8]), torch.tensor([0, 2, 3, 5, 7, 8])
    got = enc(_q(seq=3), qp, kp).detach()
    assert got.shape == (1, 3, 3, 6)
    for h in range(3):
        r1, r2 = max(float(enc.r1[h].detach()), 0.01), max(float(enc.r2[h].detach()), 0.01)
        r2 = r2 if variant == "log" else min(r2, 2.0)
        for i in range(3):
            for j in range(6):
                d = abs(int(qp[i]) - int(kp[j]))
                want = -r1 * math.log(1 + r2 * d) if variant == "log" else -r1 * d ** r2
                assert float(got[0, h, i, j]) == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_kerple_init_and_gradients_follow_the_authors():
    """log: r1 in (0, 2), r2 in (0, 1); power: coefficient (0, 1), exponent (0, 2). A parameter below eps is read
    as eps but still gets a gradient (straight through), and the power kernel's gradient is finite at distance 0."""
    torch.manual_seed(0)
    log, power = Kerple(64), Kerple(64, variant="power")
    assert 0 < log.r1.min() and log.r1.max() < 2 and 0 < log.r2.min() and log.r2.max() < 1
    assert power.r1.max() < 1 and 1 < power.r2.max() < 2
    for enc in (log, power):
        with torch.no_grad():
            enc.r1[0] = -0.5
        enc(torch.randn(1, 64, 5, 4)).sum().backward()
        assert torch.isfinite(enc.r1.grad).all() and torch.isfinite(enc.r2.grad).all()
        assert enc.r1.grad[0] != 0


def _fire_reference(enc, qp, kp):
    """Loops: f(log(c |i - j| + 1) / (log(c max(L, i) + 1) + eps)), f the MLP evaluated on one number at a time."""
    c, mult, eps = float(enc.c.detach()), float(enc.L_multiplier.detach()), enc.eps
    big_l = abs(mult * float(enc.init_L))
    out = torch.empty(enc.num_heads, len(qp), len(kp), dtype=torch.float64)
    for a, i in enumerate(qp.tolist()):
        for b, j in enumerate(kp.tolist()):
            x = math.log(abs(c * (i - j)) + 1) / (math.log(abs(c * max(big_l, i)) + 1) + eps)
            out[:, a, b] = enc.mlp(torch.tensor([[x]], dtype=torch.float64))[0].detach()
    return out


def test_fire_matches_a_per_element_reference():
    torch.manual_seed(0)
    enc = FIRE(2, init_L=5.0).double()
    with torch.no_grad():
        enc.c.fill_(0.7)
        enc.L_multiplier.fill_(-1.2)  # |L_mult * L0| = 6
    qp, kp = torch.tensor([2, 6, 9, 30]), torch.arange(31)
    got = enc(_q(heads=2, seq=4), qp, kp)
    torch.testing.assert_close(got[0], _fire_reference(enc, qp, kp))


def test_fire_maps_every_causal_distance_into_zero_one():
    """Progressive interpolation: for keys j <= i, psi(i - j) / psi(max(L, i)) lies in [0, 1], at any length."""
    enc = FIRE(2, init_L=8.0)
    positions = torch.arange(5000)
    with torch.no_grad():
        x = enc.normalized_distance(positions[-3:], positions)
    assert float(x.min()) == 0.0 and float(x.max()) <= 1.0


def test_registered_and_keep_the_rules():
    assert ENCODINGS["kerple"] is Kerple and ENCODINGS["fire"] is FIRE
    assert make_encoding("fire", d_model=32, num_heads=2, max_len=96).init_L.item() == 96.0
    for name in ("kerple", "fire"):
        assert encoding_rule_problems(name) == [], name
    assert encoding_rule_problems(Kerple(4, variant="power")) == []


@pytest.mark.parametrize("name", ["kerple", "fire"])
def test_trains_its_parameters(name):
    """A TinyLM step moves the encoding's own parameters (they are in model.parameters())."""
    torch.manual_seed(0)
    model = TinyLM(11, encoding=name, d_model=16, num_heads=2, num_layers=1)
    before = [p.detach().clone() for p in model.encoding.parameters()]
    ids = torch.randint(0, 11, (2, 9))
    _, loss = model(ids[:, :-1], ids[:, 1:])
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert any(not torch.equal(b, p) for b, p in zip(before, model.encoding.parameters()))


@pytest.mark.parametrize("enc", [Kerple(3), Kerple(3, variant="power"), FIRE(3)])
def test_on_the_meta_device(enc):
    q = torch.empty(2, 3, 5, 4, device="meta")
    out = enc.to("meta")(q, torch.arange(5, device="meta"))
    assert out.device.type == "meta" and out.shape == (1, 3, 5, 5)


@pytest.mark.parametrize("call, error, message", [
    (lambda: Kerple(0), ValueError, "num_heads must be >= 1"),
    (lambda: Kerple(2, variant="linear"), ValueError, "variant must be one of"),
    (lambda: Kerple(2, eps=0.0), ValueError, "eps must be > 0"),
    (lambda: Kerple(2)(torch.randn(1, 3, 4, 4)), ValueError, "num_heads=2"),
    (lambda: Kerple(2)(torch.randn(1, 2, 4, 4), torch.arange(4.0)), TypeError, "integer"),
    (lambda: FIRE(2, mlp_width=0), ValueError, "mlp_width must be >= 1"),
    (lambda: FIRE(2, init_c=-0.1), ValueError, "init_c must be > 0"),
    (lambda: FIRE(2, init_L=0.0), ValueError, "init_L must be > 0"),
    (lambda: FIRE(2)(torch.randn(1, 2, 4, 4), torch.arange(3)), ValueError, "q_positions must have shape"),
    (lambda: FIRE(2)(torch.randint(0, 3, (1, 2, 4, 4))), TypeError, "floating-point"),
])
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
