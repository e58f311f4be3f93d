"""Study time per notebook, the measure issue 37 set: markdown words at 200 a minute (Chinese: characters
divided by 2, plus the Latin words among them) + 5 minutes per exercise. The *core path* leaves out every
section whose heading carries "(Optional)" (zh "（选学）"), up to the next heading of the same or a higher
level, and everything from a heading that starts "Appendix" (zh "附录") to the end.

    python tools/study_time.py           # the README's study-time table, both languages (what the test holds)
    python tools/study_time.py --write   # rewrite that table in README.md and README.zh.md
"""
import argparse
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS_PER_MINUTE = 200
MINUTES_PER_EXERCISE = 5
CORE_LIMIT_MINUTES = 60
OPTIONAL = ("(Optional)", "（选学）")
APPENDIX = ("Appendix", "附录")
# An exercise opens a paragraph with its bold number: "**6.2 Angles.**" (or "**Exercise 6.2**", "**练习 6.2**").
# One marked optional in its title ("**9.5 (Optional) ...**", zh "（选学）"/"（选做）") is not on the core path.
EXERCISE = re.compile(r"^\*\*(?:Exercise |练习 ?)?\d+\.\d+(?!\d)(.*)$", re.M)
OPTIONAL_EXERCISE = ("(Optional)", "（选学）", "（选做）")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# The tracks besides the full course (README and 00): notebook numbers, each counted by its core path.
TRACKS = {"interview": ("01", "02", "03", "06", "09"), "engineer": ("06", "10", "12", "13")}
START, END = "<!-- study-time: tools/study_time.py --write -->", "<!-- /study-time -->"


def words(text):
    """Reading words: Latin tokens, plus Chinese characters counted two to a word."""
    return len(CJK.sub(" ", text).split()) + len(CJK.findall(text)) / 2


def sections(nb):
    """(markdown text, core?) per block of lines between headings, in order."""
    lines = [line for cell in nb["cells"] if cell["cell_type"] == "markdown"
             for line in "".join(cell["source"]).splitlines()]
    skip_below, appendix, block, core, out = None, False, [], True, []
    for line in lines:
        head = HEADING.match(line)
        if head:
            out.append(("\n".join(block), core))
            level, title = len(head.group(1)), head.group(2)
            title_text = re.sub(r"^[\d.]+\s*", "", title)
            if skip_below is not None and level <= skip_below:
                skip_below = None
            if title_text.startswith(APPENDIX):
                appendix = True
            if skip_below is None and any(m in title for m in OPTIONAL):
                skip_below = level
            block, core = [], not appendix and skip_below is None
        block.append(line)
    out.append(("\n".join(block), core))
    return out


def study_time(path):
    """{"core": minutes, "total": minutes, "exercises": (core, total)} for one notebook file."""
    parts = sections(json.loads(Path(path).read_text(encoding="utf-8")))

    def minutes(chosen, core_only=False):
        text = "\n".join(t for t, _ in chosen)
        titles = EXERCISE.findall(text)
        n_ex = sum(not (core_only and any(m in t[:40] for m in OPTIONAL_EXERCISE)) for t in titles)
        return words(text) / WORDS_PER_MINUTE + MINUTES_PER_EXERCISE * n_ex, n_ex

    core, core_ex = minutes([p for p in parts if p[1]], core_only=True)
    total, total_ex = minutes(parts)
    return {"core": math.ceil(core), "total": math.ceil(total), "exercises": (core_ex, total_ex)}


def notebooks(lang):
    folder = ROOT / "notebooks" / ("zh" if lang == "zh" else "")
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


LABELS = {
    "en": {"head": "| notebook | core path (min) | with optional parts (min) | exercises |", "full": "full course",
           "interview": "interview track: 01–03, 06, 09 (with the interview sheet)",
           "engineer": "engineer's track: 06, 10, 12, 13"},
    "zh": {"head": "| notebook | 核心路径（分钟） | 含选学部分（分钟） | 练习 |", "full": "完整课程",
           "interview": "面试路线：01–03、06、09（含速答卡）", "engineer": "工程路线：06、10、12、13"},
}


def table(lang):
    """The README's table: each notebook's study time, then the full course and the two tracks."""
    times = {p.name[:2]: (p, study_time(p)) for p in notebooks(lang)}
    lab = LABELS[lang]
    rows = [lab["head"], "|---|---|---|---|"]
    for path, t in times.values():
        rows.append(f"| `{path.stem}` | {t['core']} | {t['total']} | {t['exercises'][1]} |")

    def row(name, nums):
        chosen = [times[n][1] for n in nums if n in times]
        core, total = sum(t["core"] for t in chosen), sum(t["total"] for t in chosen)
        ex = sum(t["exercises"][1] for t in chosen)
        return f"| {name} | {core} | {total} | {ex} |"

    rows.append(row(f"**{lab['full']}**", list(times)))
    rows += [row(lab[name], nums) for name, nums in TRACKS.items()]
    return "\n".join(rows)


def readme(lang):
    return ROOT / ("README.zh.md" if lang == "zh" else "README.md")


def stored_table(lang):
    """The table between the markers in the README, or None."""
    text = readme(lang).read_text(encoding="utf-8")
    if START not in text:
        return None
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the table in both READMEs")
    args = parser.parse_args(argv)
    for lang in ("en", "zh"):
        new = table(lang)
        if args.write:
            path = readme(lang)
            text = path.read_text(encoding="utf-8")
            if START not in text:
                sys.exit(f"study_time: {path.name} has no {START!r} marker to write under")
            head, rest = text.split(START, 1)
            path.write_text(f"{head}{START}\n{new}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
        print(f"{readme(lang).name}:\n{new}\n")


if __name__ == "__main__":
    main()
