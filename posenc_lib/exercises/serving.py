"""Exercises of notebook 13: positions in serving systems. A context shift on cached keys, the positions and
the mask of a speculative-decoding token tree, the slot and the keys of a rolling sliding-window buffer, and
RoBERTa-style positions for documents packed in one row.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting with "✓"
when it is right, and otherwise raises ExerciseError naming the mistake (the wrong sign of the shift, the
flattened index where the depth belongs, W + 1 or W - 1 keys where the window holds W ...). SOLUTIONS[name] is
a reference solution; CHECKS[name] the checker. The right answers come from posenc_lib.inference and
posenc_lib.rope, which tests/test_serving.py compares with transformers.

Conventions (as in posenc_lib.rope): "half" layout, pair i = (x[i], x[i + d/2]), turned counter-clockwise
by m * theta_i, theta_i = base ** (-2i/d).
"""
from __future__ import annotations

import torch

from ..i18n import tr
from ..inference import packed_position_ids, tree_mask, tree_positions
from ..rope import apply_rope
from ._common import ExerciseError, as_tensor, attempt, call, ignored, integers, keep_dtype, name_the_mistake, ok, same

__all__ = ["attempt", "check_context_shift", "check_tree_positions", "check_tree_mask", "check_ring_window",
           "check_packed_offsets"]



def _same_ints(a: torch.Tensor, b: torch.Tensor) -> bool:
    return tuple(a.shape) == tuple(b.shape) and torch.equal(a, b)


def _shifted(keys, n_keep, n_discard, base, turn, layout="half"):
    """The cache after dropping n_discard tokens after the first n_keep, the moved keys turned by `turn` (in
    `layout`'s pairs)."""
    moved = apply_rope(keys[n_keep + n_discard:], torch.full((keys.shape[0] - n_keep - n_discard,), turn), base=base,
                       layout=layout)
    return torch.cat((keys[:n_keep], moved))


# ------------------------------------------------------------------------------- a context shift
def check_context_shift(fn) -> None:
    """fn(cached_keys (n, d), n_keep, n_discard, base) -> (n - n_discard, d): the cache after llama.cpp's shift.
    The keys were cached rotated, key j at position j (half layout); keep the first n_keep, drop the next
    n_discard, and turn every later key so that it sits n_discard positions earlier."""
    gen = torch.Generator().manual_seed(13)
    d, n, base = 8, 10, 100.0
    raw = torch.randn(n, d, generator=gen, dtype=torch.float64)
    keys = apply_rope(raw, torch.arange(n), base=base)                          # cached rotated at 0 .. n-1
    for n_keep, n_discard in ((2, 3), (0, 4)):
        before = keys.clone()
        got = as_tensor(call(fn, keys, n_keep, n_discard, base, what=tr("your function", "你的函数")),
                        tr("your keys", "你的键"))
        if not torch.equal(keys, before):
            raise ExerciseError(tr("your function changed the cached keys in place: return new tensors",
                                   "你的函数原地改动了缓存的键：请返回新的张量"))
        kept = list(range(n_keep)) + list(range(n_keep + n_discard, n))
        want = apply_rope(raw[kept], torch.arange(len(kept)), base=base)        # as if rotated there from scratch
        if same(got, want, atol=1e-5):
            keep_dtype(got, keys, tr("your function", "你的函数"), name="cached_keys")  # a cache stays in its dtype
            continue
        if tuple(got.shape) != tuple(want.shape):
            raise ExerciseError(tr(f"expected {len(kept)} keys of size {d}, shape {tuple(want.shape)}, got "
                                   f"{tuple(got.shape)}", f"应当剩下 {len(kept)} 个大小为 {d} 的键，形状 "
                                   f"{tuple(want.shape)}，得到的是 {tuple(got.shape)}"))
        name_the_mistake(got, [
            (_shifted(keys, n_keep, n_discard, base, n_discard),
             tr(f"wrong sign of the shift: the moved keys must turn by R(-n_discard) = R(-{n_discard}) to sit "
                f"{n_discard} positions earlier; you turned them by R(+{n_discard}), {2 * n_discard} positions "
                f"away from where they should be", f"平移的符号反了：移动的键应当转 R(-n_discard) = R(-{n_discard})，"
                f"往前挪 {n_discard} 个位置；你转的是 R(+{n_discard})，离正确位置差了 {2 * n_discard} 个位置")),
            (_shifted(keys, n_keep, n_discard, base, 0),
             tr("the moved keys were not turned: they still carry their old positions, so the next query "
                "(numbered after the kept tokens) sees them n_discard positions too far away",
                "移动的键没有旋转：它们还带着旧的位置，于是下一个查询（编号接在保留的 token 之后）"
                "看它们时距离多了 n_discard")),
            (_shifted(keys, 0, n_discard, base, -n_discard) if n_keep else None,
             tr("you dropped the first tokens: llama.cpp keeps the first n_keep (the system prompt) and drops the "
                "n_discard after them",
                "你丢掉的是开头的 token：llama.cpp 保留开头的 n_keep 个（系统提示），丢掉它们之后的 n_discard 个")),
            (apply_rope(keys[kept], torch.full((len(kept),), -n_discard), base=base),
             tr("you turned the first n_keep keys too: they stay where they are, only the keys after the dropped "
                "ones move", "你把开头 n_keep 个键也转了：它们留在原位，只有被丢弃部分之后的键才移动")),
            (_shifted(keys, n_keep, n_discard, 10000.0, -n_discard), ignored("base", f"{base:g}", 10000)),
            (_shifted(keys, n_keep, n_discard, base, -n_discard, layout="interleaved"),
             tr("you turned neighbouring dims (2i, 2i+1) together, the interleaved layout; the keys were cached in "
                "the half layout, so R(-n_discard) must turn the pairs (x[i], x[i + d/2]) that rotated them",
                "你把相邻维度 (2i, 2i+1) 当成一对来转，这是交错布局；这些键是按对半拆分布局缓存的，所以 "
                "R(-n_discard) 必须转当初旋转它们的那些对 (x[i], x[i + d/2])")),
            *[(_shifted(keys, n_keep, n_discard, base, -(n_discard + off)),
               tr(f"off by one: you turned the moved keys by R({-(n_discard + off)}); dropping n_discard = {n_discard} "
                  f"tokens moves each later key exactly {n_discard} positions earlier",
                  f"差了一：你把移动的键转了 R({-(n_discard + off)})；丢掉 n_discard = {n_discard} 个 token，"
                  f"之后的每个键正好往前挪 {n_discard} 个位置")) for off in (1, -1)],
        ], lambda a, b: b is not None and same(a, b, atol=1e-5))
        raise ExerciseError(tr(f"for n_keep={n_keep}, n_discard={n_discard} the keys differ from the kept tokens "
                               f"rotated at 0 .. {len(kept) - 1} (largest gap {float((got - want).abs().max()):.3g})",
                               f"n_keep={n_keep}、n_discard={n_discard} 时，"
                               f"你的键和保留的 token 在 0 .. {len(kept) - 1} 处旋转的结果不同（最大差 "
                               f"{float((got - want).abs().max()):.3g}）"))
    ok(tr("kept keys stay, the moved ones turn by R(-n_discard): the cache of the kept text, without recomputing a "
          "key.",
          "保留的键不动，移动的键转 R(-n_discard)：得到保留文本的缓存，一个键也不用重算。"))


# ------------------------------------------------------------------------------- a token tree
_TREES = ((-1, 0, 0, 1, 1, 2, 2), (-1, 0, 1, 1, 0, 4, 5), (-1, 0, 0, 0, 2))


def check_tree_positions(fn) -> None:
    """fn(parents, start) -> (N,) positions of the tree's nodes: parents[i] is node i's parent (-1 for the
    root); the root sits at `start`, the position after the verified prefix."""
    for parents in _TREES:
        for start in (0, 5):
            got = integers(call(fn, list(parents), start, what=tr("your function", "你的函数")),
                           tr("your positions", "你的位置"))
            want = tree_positions(list(parents), start=start)
            got = got.reshape(-1)
            if _same_ints(got, want):
                continue
            name_the_mistake(got, [
                (torch.arange(len(parents)) + start,
                 tr("those are the nodes' flattened indices: a node's position is its depth (siblings are "
                    "alternatives for the same next token and share one position)",
                    "这是节点展平后的序号：节点的位置是它的深度（兄弟节点是同一个下一 token 的不同候选，"
                    "共用一个位置）")),
                (want + 1, tr("off by one: the root is the first new token, at `start` itself",
                              "差了一：根节点就是第一个新 token，位置正是 `start`")),
                (want - start, tr(f"you ignored `start`: the tree follows the prefix, so add start = {start}",
                                  f"你没有用 `start`：树接在前缀之后，要加上 start = {start}")),
            ], _same_ints)
            raise ExerciseError(tr(f"for parents {list(parents)} and start {start} expected {want.tolist()}, got "
                                   f"{got.tolist()}", f"parents 为 {list(parents)}、start 为 {start} 时应为 "
                                   f"{want.tolist()}，得到的是 {got.tolist()}"))
    ok(tr("each node at start + its depth: every root-to-leaf path is numbered as if decoded alone.",
          "每个节点在 start + 深度：每条从根到叶的路径的编号都和单独解码时一样。"))


def check_tree_mask(fn) -> None:
    """fn(parents) -> (N, N) bool, True where node i (row) may attend node j (column) within the tree."""
    for parents in _TREES:
        got = as_tensor(call(fn, list(parents), what=tr("your function", "你的函数")), tr("your mask", "你的掩码"))
        want = tree_mask(list(parents))
        if (tuple(got.shape) == tuple(want.shape) and got.is_floating_point() and torch.equal(got == 0, want)
                and bool(torch.isinf(got[~want]).all())):
            raise ExerciseError(tr("you returned an additive mask (0 where a node may attend, -inf elsewhere): the "
                                   "exercise asks for a bool tensor, True where node i may attend node j (attention "
                                   "makes the additive form itself; read as a bool, your 0 says 'not allowed')",
                                   "你返回的是加性掩码（可以关注处为 0，其余为 -inf）：题目要的是 bool 张量，节点 i "
                                   "可以关注节点 j 处为 True（注意力会自己做出加性形式；按 bool 读，"
                                   "你的 0 意思是“不允许”）"))
        if tuple(got.shape) == tuple(want.shape) and torch.equal(got.bool(), want):
            continue
        if tuple(got.shape) != tuple(want.shape):
            raise ExerciseError(tr(f"expected an (N, N) = {tuple(want.shape)} mask, got {tuple(got.shape)}",
                                   f"掩码应为 (N, N) = {tuple(want.shape)}，得到的是 {tuple(got.shape)}"))
        got = got.bool()
        n = len(parents)
        name_the_mistake(got, [
            (torch.ones(n, n, dtype=torch.bool).tril(),
             tr("that is the causal mask of the flattened tree: a node then sees its siblings and their subtrees, "
                "which are other continuations of the same prefix; a node sees only itself and its ancestors",
                "这是把树展平后的因果掩码：这样节点会看到兄弟节点及其子树，而它们是同一前缀的其他续写；"
                "节点只能看到自己和祖先")),
            (want & ~torch.eye(n, dtype=torch.bool),
             tr("the diagonal is missing: every node attends to itself, as every token does",
                "对角线缺了：每个节点都要关注自己，和每个 token 一样")),
            (want.T, tr("transposed: row i is the query; it sees its ancestors (earlier), not its descendants",
                        "转置了：第 i 行是查询，它看的是祖先（更早的），不是后代")),
        ], lambda a, b: torch.equal(a, b))
        wrong = (got != want).nonzero()[0].tolist()
        raise ExerciseError(tr(f"for parents {list(parents)}: entry (row {wrong[0]}, column {wrong[1]}) should be "
                               f"{bool(want[wrong[0], wrong[1]])}", f"parents 为 {list(parents)} 时：第 {wrong[0]} 行、"
                               f"第 {wrong[1]} 列应为 {bool(want[wrong[0], wrong[1]])}"))
    ok(tr("each node sees itself and its ancestors: the tree verifies every path in one forward pass.",
          "每个节点看到自己和祖先：一次前向就验证了所有路径。"))


# ------------------------------------------------------------------------------- a rolling window
_RING_CASES = ((9, 4), (3, 4), (4, 4), (20, 6), (1, 4))  # (1, 4): a stream shorter than the window


def check_ring_window(fn) -> None:
    """fn(position, window) -> (slot, visible): the slot of a ring buffer of `window` slots that the token at
    `position` (a stream starting at 0) is written to, and the text positions of the keys its query sees
    under the sliding window (itself included), oldest first."""
    for position, window in _RING_CASES:
        answer = call(fn, position, window, what=tr(f"your function({position}, {window})",
                                                    f"你的函数({position}, {window})"))
        if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
            raise ExerciseError(tr("return two things: (slot, visible)", "请返回两个值：(slot, visible)"))
        slots = integers(answer[0], tr("your slot", "你的槽位"))  # a float slot is named, never rounded
        if slots.numel() != 1:
            raise ExerciseError(tr(f"the slot is one number, got shape {tuple(slots.shape)}",
                                   f"槽位是一个数，得到的形状是 {tuple(slots.shape)}"))
        slot = int(slots.reshape(-1)[0])
        visible = integers(answer[1], tr("your list", "你的列表"), flat=True).tolist()
        if slot == position // window and position // window != position % window:
            raise ExerciseError(tr(f"{slot} = {position} // {window} is how many times the ring has wrapped round; the "
                                   f"slot is the remainder, {position} % {window} = {position % window}",
                                   f"{slot} = {position} // {window} 是环形缓冲区绕了几圈；槽位是余数，"
                                   f"{position} % {window} = {position % window}"))
        if slot != position % window:
            raise ExerciseError(tr(f"the token at position {position} goes to slot {position} % {window} = "
                                   f"{position % window} (over the token {position - window}), got {slot}",
                                   f"位置 {position} 的 token 写进槽位 {position} % {window} = {position % window}"
                                   f"（覆盖 token {position - window}），你给的是 {slot}"))
        right = list(range(max(position - window + 1, 0), position + 1))
        if visible == right:
            continue
        name_the_mistake(visible, [
            (list(range(max(position - window, 0), position + 1)),
             tr("W + 1 keys: the window of W counts the new token, so the query sees W - 1 past keys plus itself "
                "(transformers' cache keeps sliding_window - 1)", "W + 1 个键：W 的窗口包括新 token 自己，"
                "查询看到的是 W - 1 个过去的键加上自己（transformers 的缓存保留 sliding_window - 1 个）")),
            (list(range(max(position - window + 2, 0), position + 1)),
             tr("W - 1 keys in all: W - 1 is the number of PAST keys; with the new one the query sees W",
                "一共只有 W - 1 个键：W - 1 是过去的键的个数；加上新的一个，查询看到 W 个")),
            (list(reversed(right)),
             tr("newest first: list the visible keys oldest first, by text position (a mask row reads left to "
                "right)", "你把最新的放在了前面：可见的键要按文本位置从旧到新排列（掩码的一行从左往右读）")),
            (list(range(position - window + 1, position + 1)),
             tr(f"positions below 0: before the stream has {window} tokens the query sees only positions 0 .. "
                f"{position}; start at max(position - W + 1, 0)",
                f"出现了小于 0 的位置：流里还不到 {window} 个 token 时，查询只看得到位置 0 .. {position}；"
                "要从 max(position - W + 1, 0) 开始")),
            (sorted(p % window for p in right),
             tr("those are slots: RoPE and the mask need the keys' text positions; the slot only says where a "
                "key is stored", "这些是槽位：RoPE 和掩码要的是键在文本中的位置；槽位只说明键存在哪里")),
        ], lambda a, b: a == b)
        raise ExerciseError(tr(f"at position {position} with W = {window} the query sees {right}, got {visible}",
                               f"位置 {position}、W = {window} 时查询看到的是 {right}，得到的是 {visible}"))
    ok(tr("slot = position % W, and the query sees its own key and the W - 1 before it, by text position.",
          "槽位 = 位置 % W，查询按文本位置看到自己的键和它之前的 W - 1 个。"))


# ------------------------------------------------------------------------------- packed RoBERTa positions
_PACKED_CASES = (((3, 2, 4), 1), ((5,), 1), ((2, 2), 0))


def check_packed_offsets(fn) -> None:
    """fn(lengths, padding_idx) -> (sum(lengths),) the RoBERTa position ids of documents of these lengths
    packed in one row, each document numbered as if it were alone: from padding_idx + 1."""
    for lengths, padding_idx in _PACKED_CASES:
        got = integers(call(fn, list(lengths), padding_idx, what=tr("your function", "你的函数")),
                       tr("your positions", "你的位置"))  # float ids are named, never rounded
        got = got.reshape(-1)
        want = packed_position_ids(list(lengths)) + padding_idx + 1
        if _same_ints(got, want):
            continue
        total = sum(lengths)
        name_the_mistake(got, [
            (torch.arange(total) + padding_idx + 1,
             tr("the positions run on across the documents (what RoBERTa's own rule does on a packed row: it counts "
                "every non-pad token); restart them at padding_idx + 1 for each document",
                "位置跨文档连续计数了（RoBERTa 自己的规则在打包的一行上就是这样：它数的是所有非填充 token）；"
                "每个文档都要从 padding_idx + 1 重新开始")),
            (want - padding_idx - 1, tr("RoBERTa's positions start at padding_idx + 1, not at 0: rows 0 .. padding_idx "
                                        "of its table are never used for real tokens",
                                        "RoBERTa 的位置从 padding_idx + 1 开始，不是从 0："
                                        "表的 0 .. padding_idx 行不会给真实 token 用")),
            (want - 1, tr("off by one: the first real token gets padding_idx + 1, the pad itself gets padding_idx",
                          "差了一：第一个真实 token 是 padding_idx + 1，填充本身才是 padding_idx")),
            *([(want - padding_idx + 1, ignored("padding_idx", padding_idx, 1))] if padding_idx != 1 else []),
        ], _same_ints)
        raise ExerciseError(tr(f"for lengths {list(lengths)} and padding_idx {padding_idx} expected {want.tolist()}, "
                               f"got {got.tolist()}",
                               f"lengths 为 {list(lengths)}、padding_idx 为 {padding_idx} 时应为 "
                               f"{want.tolist()}，得到的是 {got.tolist()}"))
    ok(tr("every packed document starts again at padding_idx + 1, as it would alone.",
          "每个打包的文档都重新从 padding_idx + 1 开始，和单独输入时一样。"))


# ------------------------------------------------------------------------------- reference solutions
def _solution_context_shift(cached_keys, n_keep, n_discard, base=10000.0):
    half = cached_keys.shape[-1] // 2
    angle = -n_discard * base ** (-torch.arange(half, dtype=torch.float64) / half)    # R(-n_discard)
    moved = cached_keys[n_keep + n_discard:]
    x1, x2 = moved[:, :half], moved[:, half:]
    turned = torch.cat((x1 * angle.cos() - x2 * angle.sin(), x2 * angle.cos() + x1 * angle.sin()), -1)
    return torch.cat((cached_keys[:n_keep], turned.to(cached_keys.dtype)))


def _solution_tree_positions(parents, start=0):
    depth = []
    for p in parents:
        depth.append(0 if p < 0 else depth[p] + 1)
    return torch.tensor(depth) + start


def _solution_tree_mask(parents):
    n = len(parents)
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        j = i
        while j >= 0:                     # walk up to the root: i sees itself and every ancestor
            mask[i, j] = True
            j = parents[j]
    return mask


def _solution_ring_window(position, window):
    return position % window, list(range(max(position - window + 1, 0), position + 1))


def _solution_packed_offsets(lengths, padding_idx):
    return torch.cat([torch.arange(n) for n in lengths]) + padding_idx + 1


SOLUTIONS: dict = {
    "context_shift": _solution_context_shift,
    "tree_positions": _solution_tree_positions,
    "tree_mask": _solution_tree_mask,
    "ring_window": _solution_ring_window,
    "packed_offsets": _solution_packed_offsets,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}
