"""TinyLM: a small causal character-level Transformer whose only variable is its positional encoding.

    tokens (B, T) -> embed (B, T, D) -> encoding.add_to_input -> num_layers x [x + attn(ln(x)); x + mlp(ln(x))]
                  -> ln -> logits (B, T, vocab)

One encoding object is built by `make_encoding(kind, ...)` and shared by every layer (as T5 shares
its bias); each layer's attention calls its hooks (see posenc_lib.attention).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from . import _checks
from .absolute import LearnedEncoding, SinusoidalEncoding
from .alibi import ALiBi
from .attention import MultiHeadAttention, NoPE, PositionalEncoding, check_positions
from .relative import ShawRelativePosition, T5RelativeBias
from .rope import RotaryEmbedding

ENCODINGS = ("nope", "sinusoidal", "learned", "t5", "shaw", "rope", "alibi")


def make_encoding(kind: str, *, d_model: int, num_heads: int, max_len: int = 512, rope_base: float = 10000.0,
                  rope_scaling: dict | None = None, num_buckets: int = 32, max_distance: int = 128,
                  max_relative_position: int = 16) -> PositionalEncoding:
    """One encoding by name, ready to share between the layers of a (causal) model:

        'nope'        NoPE()                                           no hook: attention sees no order
        'sinusoidal'  SinusoidalEncoding(d_model)                      add_to_input: x + PE[pos]
        'learned'     LearnedEncoding(max_len, d_model)                add_to_input: x + P[pos], pos < max_len
        't5'          T5RelativeBias(num_heads, bidirectional=False)   score_bias: b[bucket(key - query), head]
        'shaw'        ShawRelativePosition(head_dim, max_relative_position)   score and value terms
        'rope'        RotaryEmbedding(head_dim, base=rope_base, scaling=rope_scaling)   rotate_qk
        'alibi'       ALiBi(num_heads)                                 score_bias: -m_h * |i - j|

    head_dim = d_model // num_heads. An unknown kind raises a ValueError listing the valid ones.
    """
    _checks.choice("kind", kind, ENCODINGS)
    head_dim = d_model // num_heads
    builders = {
        "nope": lambda: NoPE(),
        "sinusoidal": lambda: SinusoidalEncoding(d_model),
        "learned": lambda: LearnedEncoding(max_len, d_model),
        "t5": lambda: T5RelativeBias(num_heads, bidirectional=False, num_buckets=num_buckets,
                                     max_distance=max_distance),
        "shaw": lambda: ShawRelativePosition(head_dim, max_relative_position),
        "rope": lambda: RotaryEmbedding(head_dim, base=rope_base, scaling=rope_scaling),
        "alibi": lambda: ALiBi(num_heads),
    }
    return builders[kind]()


class Block(nn.Module):
    def __init__(self, d_model: int, num_heads: int, encoding: PositionalEncoding, dropout: float):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, num_heads, encoding=encoding, causal=True)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model),
                                 nn.Dropout(dropout))

    def forward(self, x, positions):
        x = x + self.attn(self.ln1(x), positions)
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """A causal LM: TinyLM(vocab_size, encoding="rope", d_model=64, num_heads=4, num_layers=2, max_len=512).

    forward(idx (B, T) int64, targets=None, positions=None) -> (logits (B, T, vocab), loss or None);
    loss is the mean next-token cross-entropy over all positions. `max_len` only bounds the learned
    encoding; the others take any length.
    """

    def __init__(self, vocab_size: int, *, encoding: str | PositionalEncoding = "rope", d_model: int = 64,
                 num_heads: int = 4, num_layers: int = 2, max_len: int = 512, dropout: float = 0.0, **encoding_kwargs):
        super().__init__()
        self.vocab_size = _checks.positive_int("vocab_size", vocab_size)
        _checks.positive_int("num_heads", num_heads)
        _checks.positive_int("num_layers", num_layers)
        if isinstance(encoding, str):
            self.kind = _checks.choice("encoding", encoding, ENCODINGS)
            kind = encoding

            def build():
                return make_encoding(kind, d_model=d_model, num_heads=num_heads, max_len=max_len, **encoding_kwargs)
        elif isinstance(encoding, PositionalEncoding):
            self.kind = type(encoding).__name__
            given = encoding

            def build():
                return given
        else:
            raise TypeError(f"encoding must be one of {list(ENCODINGS)} or a PositionalEncoding, got {encoding!r}")
        # The shared weights are drawn first and the encoding's own (learned table, T5 bias) last, so
        # the same seed gives the same token embedding, blocks and head whatever the encoding.
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, num_heads, NoPE(), dropout) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.replace_encoding(build())

    def replace_encoding(self, encoding: PositionalEncoding) -> None:
        """Swap the encoding in every layer (e.g. a RoPE with a context-extension scaling)."""
        if not isinstance(encoding, PositionalEncoding):
            raise TypeError(f"encoding must be a PositionalEncoding, got {type(encoding).__name__}")
        self.encoding = encoding
        for block in self.blocks:
            block.attn.encoding = encoding

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, positions: torch.Tensor | None = None):
        idx = _checks.int_tensor("idx", idx)
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (batch, seq), got {tuple(idx.shape)}")
        T = idx.shape[1]
        positions = (torch.arange(T, device=idx.device) if positions is None
                     else check_positions(positions, T, device=idx.device))
        x = self.encoding.add_to_input(self.token_embedding(idx), positions)  # (B, T, D)
        for block in self.blocks:
            x = block(x, positions)
        logits = self.head(self.ln_f(x))  # (B, T, vocab)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss
