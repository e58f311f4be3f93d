"""The claims notebooks 00 and 01 make about order and precision, checked on the library's own modules
(posenc_lib.model.Block, TinyLM, MultiHeadAttention, attention) rather than on the notebooks' toy setup:

- a whole Transformer block (LayerNorm, attention, FFN, residuals) with no encoding and no mask is
  permutation-equivariant, and so are a per-token tagger and a next-token head put on top of it;
- with no encoding, one causal layer sees a query's visible prefix as a set (permuting the prefix leaves
  the last token unchanged), two stacked causal layers see its order (NoPE's docstring says so too);
- uniform causal attention over a value only the first token carries counts positions: 1/(t+1);
- bfloat16 and float16 store 7 and 10 mantissa bits, 8 and 11 significant: 257 and 2049 are lost.
"""
import math

import pytest
import torch
from torch import nn

from posenc_lib import NoPE, TinyLM, attention
from posenc_lib.model import Block


def _block(d_model: int, num_heads: int, *, causal: bool, seed: int) -> Block:
    torch.manual_seed(seed)
    block = Block(d_model, num_heads, NoPE(), 0.0).double().eval()
    block.attn.causal = causal  # TinyLM's block is causal; the same block without the mask is an encoder's
    return block


@pytest.mark.parametrize("seed", range(4))
def test_a_full_block_without_mask_is_equivariant(seed):
    blocks = [_block(16, 4, causal=False, seed=seed + i) for i in range(2)]
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 7, 16, generator=gen, dtype=torch.float64)
    perm = torch.randperm(7, generator=gen)
    positions = torch.arange(7)

    def stack(h):
        for block in blocks:
            h = block(h, positions)
        return h

    with torch.no_grad():
        out, out_perm = stack(x), stack(x[:, perm])
        assert torch.allclose(out_perm, out[:, perm], atol=1e-12)
        assert not torch.allclose(out_perm, out, atol=1e-3)  # equivariant, not invariant
        tagger = nn.Linear(16, 5).double()  # a per-token readout is equivariant too: just as blind
        assert torch.allclose(tagger(out_perm), tagger(out)[:, perm], atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_next_token_head_sees_order_only_through_the_mask(seed):
    # the row of a token predicts the next token; token 0 moved to position 1 ("我 爱 北京" -> "爱 我 北京")
    x = torch.randn(1, 5, 16, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    swapped = [1, 0, 2, 3, 4]
    head = nn.Linear(16, 11).double()
    positions = torch.arange(5)
    with torch.no_grad():
        for causal in (False, True):
            block = _block(16, 4, causal=causal, seed=seed)
            at_0 = head(block(x, positions))[0, 0]                   # the token at position 0
            at_1 = head(block(x[:, swapped], positions))[0, 1]      # the same token, now at position 1
            if causal:
                assert (at_0 - at_1).abs().max() > 1e-3
            else:
                assert torch.allclose(at_0, at_1, atol=1e-12)


def _last_logits(model, ids):
    with torch.no_grad():
        return model(ids[None])[0][0, -1]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("length", [3, 6])
def test_one_causal_layer_sees_the_prefix_as_a_set(seed, length):
    torch.manual_seed(seed)
    model = TinyLM(12, encoding="nope", d_model=16, num_heads=2, num_layers=1).double()
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randperm(12, generator=gen)[:length]
    reference = _last_logits(model, ids)
    for _ in range(5):
        prefix = torch.randperm(length - 1, generator=gen)
        shuffled = torch.cat([ids[:-1][prefix], ids[-1:]])
        assert torch.allclose(_last_logits(model, shuffled), reference, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("encoding, num_layers", [("nope", 2), ("nope", 3), ("sinusoidal", 1)])
def test_two_causal_layers_or_an_encoding_see_the_order_inside_the_prefix(seed, encoding, num_layers):
    torch.manual_seed(seed)
    model = TinyLM(3, encoding=encoding, d_model=16, num_heads=2, num_layers=num_layers).double()
    original, first_two_swapped = torch.tensor([0, 1, 2]), torch.tensor([1, 0, 2])  # 我 爱 北京, 爱 我 北京
    moved = (_last_logits(model, original) - _last_logits(model, first_two_swapped)).abs().max()
    assert moved > 1e-4


def test_nope_docstring_states_the_one_layer_two_layer_difference():
    doc = " ".join(NoPE.__doc__.split())
    assert "One causal layer still sees a query's visible prefix as an unordered set" in doc
    assert "two stacked causal layers already see the order" in doc
    assert "Haviv et al. 2022" in doc and "Kazemnejad et al. 2023" in doc


@pytest.mark.parametrize("length", [1, 2, 7, 30])
def test_uniform_causal_attention_counts_positions(length):
    values = torch.zeros(length, 1, dtype=torch.float64)
    values[0] = 1.0  # only the first token (<bos>) carries a 1
    flat = torch.zeros(length, 1, dtype=torch.float64)  # equal scores everywhere
    counted = attention(flat, flat, values, causal=True)[:, 0]
    assert torch.allclose(counted, 1 / torch.arange(1, length + 1, dtype=torch.float64))


@pytest.mark.parametrize("dtype, stored, first_lost", [(torch.bfloat16, 7, 257), (torch.float16, 10, 2049),
                                                       (torch.float32, 23, 2 ** 24 + 1)])
def test_mantissa_bits_and_the_first_integer_lost(dtype, stored, first_lost):
    significant = 1 - round(math.log2(torch.finfo(dtype).eps))  # eps = 2 ** (1 - significant bits)
    assert significant == stored + 1  # the leading 1 is implicit
    assert first_lost == 2 ** significant + 1
    below = torch.arange(min(first_lost, 4097))  # every integer up to 2 ** significant (all of them for 16 bits)
    below = below[below < first_lost]
    assert torch.equal(below.to(dtype).to(torch.int64), below)
    assert torch.tensor(first_lost).to(dtype).item() == first_lost - 1  # rounds to the even neighbour below
