"""TinyLM: a small causal character-level Transformer whose only variable is its positional encoding.

    tokens (B, T) -> embed (B, T, D) -> encoding.add_to_input -> num_layers x [x + attn(ln(x)); x + mlp(ln(x))]
                  -> ln -> logits (B, T, vocab)

Everything about a model is one `TinyLMConfig`. Its `encoding` names a class in the registry
`ENCODINGS` (name -> class), and that class builds itself from the config (`from_config`), so
adding an encoding is one `register_encoding` call, not another `if` here. The one encoding object
is shared by every layer (as T5 shares its bias); each layer's attention calls its hooks (see
posenc_lib.attention).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import nn
from torch.nn import functional as F

from . import _checks
from .absolute import LearnedEncoding, SinusoidalEncoding
from .alibi import ALiBi
from .attention import MultiHeadAttention, NoPE, PositionalEncoding, check_input
from .content import CoPE, ForgettingGate, PaTH
from .i18n import Text
from .relative import ShawRelativePosition, T5RelativeBias
from .relative_functions import FIRE, Kerple
from .rope import RotaryEmbedding
from .xpos import XPos

# The registry: name -> PositionalEncoding class. Iterating it gives the names.
ENCODINGS: dict[str, type[PositionalEncoding]] = {
    "nope": NoPE,                        # no hook: no position of its own (a causal mask still breaks symmetry)
    "sinusoidal": SinusoidalEncoding,    # add_to_input: x + PE[pos]
    "learned": LearnedEncoding,          # add_to_input: x + P[pos], pos < max_len
    "t5": T5RelativeBias,                # score_bias: b[bucket(key - query), head], causal buckets
    "shaw": ShawRelativePosition,        # score and value terms, clipped at max_relative_position
    "rope": RotaryEmbedding,             # rotate_qk with base rope_base and rope_scaling
    "alibi": ALiBi,                      # score_bias: -m_h * |i - j|
    "xpos": XPos,                        # rotate_qk: RoPE times zeta ** (query - key) / B (arXiv 2212.10554)
    "kerple": Kerple,                    # score_bias: -r1_h * log(1 + r2_h |i - j|), learned (arXiv 2205.09921)
    "fire": FIRE,                        # score_bias: MLP of log(c(i - j) + 1) / log(c max(L, i) + 1) (2310.04418)
    "cope": CoPE,                        # edit_scores: q_i . e[p_ij], p_ij = sum of sigmoid(q_i . k_l), l = j..i
    "fox": ForgettingGate,               # token_state log f_t; edit_scores: + sum_{l=j+1..i} log f_l
    "path": PaTH,                        # token_state (w_t, beta_t); edit_scores: q_i^T H_i ... H_{j+1} k_j
}

#: what a learner reads for an encoding's key (legends, tables, quiz options): the key itself in English, the
#: key and a gloss in Chinese, so a reader who does not know the key still knows the encoding
ENCODING_LABELS = {"nope": Text("nope", "nope（无位置编码）"),
                   "sinusoidal": Text("sinusoidal", "sinusoidal（正弦位置编码）"),
                   "learned": Text("learned", "learned（可学习位置嵌入）"), "t5": Text("t5", "t5（T5 相对偏置）"),
                   "shaw": Text("shaw", "shaw（Shaw 相对位置）"), "rope": Text("rope", "rope（旋转位置编码）"),
                   "alibi": Text("alibi", "alibi（ALiBi 线性偏置）"),
                   "xpos": Text("xpos", "xpos（带衰减的旋转位置编码）"),
                   "kerple": Text("kerple", "kerple（对数核偏置）"),
                   "fire": Text("fire", "fire（函数插值相对位置编码）"),
                   "cope": Text("cope", "cope（CoPE 上下文位置编码）"),
                   "fox": Text("fox", "fox（遗忘门 Forgetting Transformer）"),
                   "path": Text("path", "path（PaTH 累积 Householder 变换）")}


def encoding_label(name: str) -> str:
    """What a learner reads for encoding `name`: its key; in Chinese the key and a gloss (unknown keys as they are)."""
    return str(ENCODING_LABELS.get(name, name))


def register_encoding(name: str, cls: type[PositionalEncoding] | None = None):
    """Add an encoding class to ENCODINGS under `name` (your own, to train it like the others):
    register_encoding("mine", MyEncoding), or @register_encoding("mine") above the class. The class
    builds itself with `from_config(config)` (PositionalEncoding's default: cls())."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")

    def register(cls):
        if not (isinstance(cls, type) and issubclass(cls, PositionalEncoding)):
            raise TypeError(f"cls must be a PositionalEncoding subclass, got {cls!r}")
        if name in ENCODINGS and ENCODINGS[name] is not cls:
            raise ValueError(f"name {name!r} is already registered for {ENCODINGS[name].__name__}")
        ENCODINGS[name] = cls
        return cls

    return register if cls is None else register(cls)


@dataclass(frozen=True)
class TinyLMConfig:
    """Every setting of a TinyLM, checked when the config is made.

    vocab_size: tokens are ints in [0, vocab_size) (None: not needed, e.g. to build an encoding only).
    encoding: a name in ENCODINGS, or a PositionalEncoding module used as it is (then the encoding
    settings below are not used). max_len bounds the learned table only; rope_base and rope_scaling
    are RoPE's (rope_scaling in Hugging Face's rope_parameters form); num_buckets and max_distance
    T5's; max_relative_position Shaw's clipping distance k.
    """
    vocab_size: int | None = None
    encoding: str | PositionalEncoding = "rope"
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    max_len: int = 512
    dropout: float = 0.0
    rope_base: float = 10000.0
    rope_scaling: dict | None = None
    num_buckets: int = 32
    max_distance: int = 128
    max_relative_position: int = 16

    def __post_init__(self):
        if self.vocab_size is not None:
            _checks.positive_int("vocab_size", self.vocab_size)
        if isinstance(self.encoding, str):
            _checks.choice("encoding", self.encoding, ENCODINGS)
        elif not isinstance(self.encoding, PositionalEncoding):
            raise TypeError(f"encoding must be one of {sorted(ENCODINGS)} or a PositionalEncoding, "
                            f"got {self.encoding!r}")
        for name in ("d_model", "num_heads", "num_layers", "max_len", "num_buckets", "max_distance"):
            _checks.positive_int(name, getattr(self, name))
        _checks.positive_int("max_relative_position", self.max_relative_position, allow_zero=True)
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model must be divisible by num_heads, got d_model={self.d_model}, "
                             f"num_heads={self.num_heads}")
        _checks.positive_float("dropout", self.dropout, inclusive=True)
        if self.dropout >= 1:
            raise ValueError(f"dropout must be < 1, got {self.dropout}")
        _checks.positive_float("rope_base", self.rope_base, minimum=1.0)
        if self.rope_scaling is not None and not isinstance(self.rope_scaling, dict):
            raise TypeError(f"rope_scaling must be a dict or None, got {type(self.rope_scaling).__name__}")
        if isinstance(self.encoding, str):
            ENCODINGS[self.encoding].check_config(self)  # e.g. RoPE: an even head_dim, a valid rope_scaling

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads


def make_encoding(kind: str | TinyLMConfig, **settings) -> PositionalEncoding:
    """One encoding, ready to share between the layers of a (causal) model:

        make_encoding(config)                                  from a TinyLMConfig
        make_encoding("rope", d_model=64, num_heads=4, **fields)   the same, the fields given here

    ENCODINGS[name].from_config(config) builds it; see the registry for what each name builds.
    An unknown kind raises a ValueError listing the valid ones.
    """
    if isinstance(kind, TinyLMConfig):
        if settings:
            raise TypeError(f"make_encoding(config) takes no other settings, got {sorted(settings)}")
        config = kind
    else:
        if isinstance(kind, str):
            _checks.choice("kind", kind, ENCODINGS)
        elif not isinstance(kind, PositionalEncoding):
            raise TypeError(f"kind must be a name in {sorted(ENCODINGS)}, a TinyLMConfig or a PositionalEncoding, "
                            f"got {type(kind).__name__} ({kind!r})")
        config = TinyLMConfig(encoding=kind, **settings)
    if isinstance(config.encoding, PositionalEncoding):
        return config.encoding
    return ENCODINGS[config.encoding].from_config(config)


IGNORE_INDEX = -100  # a target that is not scored (F.cross_entropy's default ignore_index)


class Block(nn.Module):
    def __init__(self, d_model: int, num_heads: int, encoding: PositionalEncoding, dropout: float):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        # the model adds an input encoding once, before the first block, not in every layer
        self.attn = MultiHeadAttention(d_model, num_heads, encoding=encoding, causal=True, apply_input_encoding=False)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model),
                                 nn.Dropout(dropout))

    def forward(self, x, positions, **cache_args):  # cache_args: MultiHeadAttention's cache, layer, valid, window
        x = x + self.attn(self.ln1(x), positions, **cache_args)
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """A causal LM: TinyLM(vocab_size, encoding="rope", d_model=64, num_heads=4, num_layers=2, max_len=512,
    dropout=0.0, **encoding_settings), or TinyLM.from_config(TinyLMConfig(...)): the same fields.

    forward(idx (B, T) ints in [0, vocab_size), targets=None, positions=None) -> (logits (B, T, vocab),
    loss or None); targets: the next tokens, same shape as idx, IGNORE_INDEX (-100, as in
    F.cross_entropy) where a position has none; loss is the mean next-token cross-entropy over the
    positions with a target. `config` holds the settings it was built from.
    """

    def __init__(self, vocab_size: int, *, encoding: str | PositionalEncoding = "rope", d_model: int = 64,
                 num_heads: int = 4, num_layers: int = 2, max_len: int = 512, dropout: float = 0.0,
                 **encoding_settings):
        super().__init__()
        _checks.positive_int("vocab_size", vocab_size)
        config = TinyLMConfig(vocab_size, encoding=encoding, d_model=d_model, num_heads=num_heads,
                              num_layers=num_layers, max_len=max_len, dropout=dropout, **encoding_settings)
        self.config, self.vocab_size = config, vocab_size
        self.kind = encoding if isinstance(encoding, str) else type(encoding).__name__
        # The shared weights are drawn first and the encoding's own (learned table, T5 bias) last, so
        # the same seed gives the same token embedding, blocks and head whatever the encoding.
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, num_heads, NoPE(), dropout) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.replace_encoding(make_encoding(config))

    @classmethod
    def from_config(cls, config: TinyLMConfig) -> TinyLM:
        if not isinstance(config, TinyLMConfig):
            raise TypeError(f"config must be a TinyLMConfig, got {type(config).__name__}")
        settings = {f.name: getattr(config, f.name) for f in fields(config)}
        return cls(settings.pop("vocab_size"), **settings)

    def replace_encoding(self, encoding: PositionalEncoding) -> None:
        """Swap the encoding in every layer (e.g. a RoPE with a context-extension scaling)."""
        if not isinstance(encoding, PositionalEncoding):
            raise TypeError(f"encoding must be a PositionalEncoding, got {type(encoding).__name__}")
        self.encoding = encoding
        for block in self.blocks:
            block.attn.encoding = encoding

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, positions: torch.Tensor | None = None):
        idx = _checks.int_tensor("idx", idx).long()  # nn.Embedding takes int64 (or int32) only
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (batch, seq), got {tuple(idx.shape)}")
        if targets is not None:
            _checks.int_tensor("targets", targets)
        _checks.same_device("idx", idx, token_embedding=self.token_embedding.weight, targets=targets)
        _check_token_ids("idx", idx, self.vocab_size)
        if targets is not None:
            if targets.shape != idx.shape or not targets.numel():
                raise ValueError(f"targets must have idx's shape {tuple(idx.shape)} with at least one token (the "
                                 f"loss is their mean), got {tuple(targets.shape)}")
            _check_token_ids("targets", targets, self.vocab_size, ignore_index=IGNORE_INDEX)
            if targets.device.type != "meta" and bool((targets == IGNORE_INDEX).all()):
                raise ValueError(f"targets must have at least one position that is not {IGNORE_INDEX} "
                                 f"(the loss is the mean over scored positions), got none")
        x = self.token_embedding(idx)  # (B, T, D)
        positions = check_input(x, positions)
        x = self.encoding.add_to_input(x, positions)
        for block in self.blocks:
            x = block(x, positions)
        logits = self.head(self.ln_f(x))  # (B, T, vocab)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


def _check_token_ids(name: str, ids: torch.Tensor, vocab_size: int, *, ignore_index: int | None = None) -> None:
    """Token ids must lie in [0, vocab_size), or equal ignore_index (not checkable on the meta device,
    which has no values)."""
    if ids.device.type == "meta" or not ids.numel():
        return
    if ignore_index is not None:
        ids = ids[ids != ignore_index]
        if not ids.numel():
            return
    low, high = (int(v) for v in torch.aminmax(ids))
    if low < 0 or high >= vocab_size:
        extra = "" if ignore_index is None else f" or {ignore_index} (not scored)"
        raise ValueError(f"{name} must hold token ids in [0, vocab_size={vocab_size}){extra}, "
                         f"got min {low}, max {high}")
