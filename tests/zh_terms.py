"""The Chinese edition's vocabulary: for each concept the one term the course uses, and the variants that
tests/test_zh_terms.py refuses in the Chinese notebooks' markdown, their printed outputs and README.zh.md.

Each record: the concept (in English), the term, the variants refused (regular expressions), and `gloss`,
a pattern for the one place a variant may stand beside the term (注意力汇聚点（attention sink）).

Exempt from the check, and only these (EXEMPT says the same to a reader of a failure):
  * code: fenced blocks, `code spans`, math ($...$), link targets, HTML tags; identifiers in printed
    outputs such as attention_mask (a variant is matched as a word of its own, never inside an
    identifier);
  * verbatim quotations of the seed notes: a span in “…”, "…" or 「…」 that occurs word for word in a
    seed file (../shared/seeds/*.txt, when it is present);
  * an English title or message quoted whole (a span in “…” or "…" with no Chinese in it: a paper's
    title such as "Efficient Streaming Language Models with Attention Sinks");
  * the glossary's alias column (notebook 09's glossary, the column headed 别名), which lists the
    seed notes' own names on purpose, and its English column.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Term:
    concept: str             # the concept, in English
    term: str                # the one Chinese term for it
    refused: tuple[str, ...]  # regular expressions for the variants a test refuses
    gloss: str = ""          # where a variant may appear: right after the term (bold or not), in （…）
    note: str = field(default="", compare=False)


ASCII_WORD = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"

TERMS = (
    Term("a notebook of the course", "notebook", (r"笔记本(?!电脑)",),
         note="笔记本电脑 (a laptop) is another word"),
    Term("what to see in a figure", "看图要点", (r"要看什么", r"看什么")),
    Term("an attention mask", "掩码", (ASCII_WORD.format(r"[Mm]ask(?:s|ed|ing)?"),),
         gloss=r"掩码(?:\*\*)?（[A-Za-z _]*masks?(?=[）；，])"),
    Term("an attention sink", "注意力汇聚点",
         (r"汇聚(?!点)", r"注意力池", r"注意力槽", ASCII_WORD.format(r"[Ss]inks?")),
         gloss=r"注意力汇聚点(?:\*\*)?（attention sinks?(?=[）；，])"),
    Term("MLA's latent vector", "潜向量", (r"潜在向量", r"潜变量", r"隐向量")),
    Term("a full-attention layer (Gemma's own words keep 局部/全局)", "全注意力层", (r"全局注意力层",)),
    Term("the diagonal spread (relative.diagonal_spread: the largest range along a diagonal)", "对角线极差",
         (r"对角线的?变化幅度", r"最大变化幅度", r"对角线的?偏差", r"对角线的?离散度?")),
    Term("the sinusoidal position encoding", "正弦位置编码",
         (r"三角函数式", r"正余弦位置编码", r"固定位置编码", r"Sinusoidal ?位置编码")),
    Term("the [sin | cos] table (concatenated layout)", "拼接", (r"串联", r"级联", r"连接(?:布局|表)")),
    Term("a learned position embedding", "可学习位置嵌入",
         (r"可训练(?:的)?位置", r"(?<!可)学习[的得到]?位置(?:编码|嵌入)", r"可学习的?位置编码",
          r"学习式位置", r"可学习的?绝对位置(?:编码|嵌入)")),
    Term("the turns criterion (notebook 08)", "圈数判据", (r"圈数准则", r"圈数标准", r"转数”?判据", r"“转数”")),
    Term("a slow / a fast pair of dimensions", "慢速对 / 快速对", (r"(?<![很尽])慢对", r"(?<![很尽赶])快对(?![齐准])")),
    Term("a reference solution", "参考解答", (r"参考答案",)),
    Term("a hidden state", "隐藏状态", (r"隐状态", r"隐层状态")),
    Term("a published model", "已发布模型", (r"公开模型", r"公开的模型", r"公开检查点")),
    Term("a skew-symmetric matrix (M^T = -M; notebook 14)", "反对称", (r"斜对称",)),
    Term("the generator M of exp(tM) (notebook 14)", "生成元", (r"生成矩阵", r"无穷小生成")),
    Term("the Forgetting Transformer's forget gate", "遗忘门", (r"忘记门", r"遗忘闸")),
    Term("a positional head (an attention head that attends by position)", "位置头",
         (r"位置注意力头", r"位置性的?注意力头")),
    Term("a token (the course keeps the English word)", "token", (r"词元",)),
    Term("a position that depends on the content (CoPE, FoX, PaTH)", "依赖内容的位置",
         (r"内容相关的?位置", r"取决于内容的位置")),
)

EXEMPT = ("code (fenced blocks, `code spans`, $math$, link targets, HTML tags) and identifiers",
          "verbatim seed quotations (“…”, \"…\", 「…」 found word for word in ../shared/seeds/)",
          "English titles quoted whole (“…” or \"…\" with no Chinese in it)",
          "the glossary's alias and English columns (09, the table with a column headed 别名)")
