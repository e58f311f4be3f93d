"""Checker of notebook 14, section 2 (posenc_lib.exercises.content): typical wrong answers for CoPE's positions get
the message that names the mistake (keys after the query counted, a count from the first token, the key's or the
query's own gate left out, a sum over the queries, gates changed in place, a float32 result), right answers in
other valid forms pass, and the right answer is what the library's CoPE computes."""
import math

import torch
from exercise_mistakes import assert_named, each_mistake

from posenc_lib.content import CoPE
from posenc_lib.exercises import content as ex

S = ex.SOLUTIONS


def _in_place(gates):
    gates.mul_(torch.ones(gates.shape, dtype=gates.dtype).tril())
    return gates.flip(-1).cumsum(-1).flip(-1)


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("no causal mask", ex.check_cope_positions, lambda g: g.flip(-1).cumsum(-1).flip(-1),
     ["keys after the query", "l <= i"]),
    ("from the first token", ex.check_cope_positions, lambda g: g.tril().cumsum(-1), ["from the first token"]),
    ("key left out", ex.check_cope_positions, lambda g: S["cope_positions"](g) - g, ["key j's own gate"]),
    ("query left out", ex.check_cope_positions, lambda g: S["cope_positions"](g) - g.diagonal()[:, None],
     ["query's own token"]),
    ("over the queries", ex.check_cope_positions, lambda g: S["cope_positions"](g.T).T, ["over the queries"]),
    ("in place", ex.check_cope_positions, _in_place, ["in place"]),
    ("float32", ex.check_cope_positions, lambda g: S["cope_positions"](g).float(), ["torch.float32", "gates"]),
    ("shape", ex.check_cope_positions, lambda g: S["cope_positions"](g)[-1], ["shape (6, 6)"]),
    ("something else", ex.check_cope_positions, lambda g: 2 * S["cope_positions"](g), ["largest gap"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_other_valid_forms_pass(capsys):
    """Any value above the diagonal (the mask hides it), a loop, a list of lists."""
    ex.check_cope_positions(lambda g: S["cope_positions"](g) + torch.ones_like(g).triu(1) * 7.0)
    ex.check_cope_positions(lambda g: torch.tensor([[sum(g[i, m].item() for m in range(j, i + 1)) if j <= i else 0.0
                                                     for j in range(g.shape[1])] for i in range(g.shape[0])],
                                                   dtype=g.dtype))
    ex.check_cope_positions(lambda g: S["cope_positions"](g).tolist())
    ex.check_cope_positions(S["cope_positions"])
    assert capsys.readouterr().out.count("✓ ") == 4


def test_the_right_answer_is_the_librarys_cope():
    """gates = sigmoid(q k^T / sqrt(d)) give CoPE.positions (npos large enough that the cap never binds)."""
    gen = torch.Generator().manual_seed(0)
    q, k = (torch.randn(1, 1, 8, 4, generator=gen, dtype=torch.float64) for _ in range(2))
    gates = torch.sigmoid(q[0, 0] @ k[0, 0].T / math.sqrt(4))
    torch.testing.assert_close(S["cope_positions"](gates), CoPE(4, npos=20).positions(q, k)[0, 0], atol=1e-12, rtol=0)
