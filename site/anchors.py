"""A notebook heading's anchor as JupyterLab makes it (`createHeaderId` in @jupyterlab/rendermime): the
heading's text as rendered, its spaces replaced by "-". Rendered text: markdown emphasis and code markers
gone, a link's text kept, HTML tags gone, math left as its TeX source (typeset after the anchor is made).
The notebooks link to headings by these anchors (tests/test_notebook_links.py checks every link), and the
web edition (site/build.py) gives each heading the same anchor, so the same links work there."""
import re

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def jupyterlab_anchor(heading: str) -> str:
    text = re.sub(r"`([^`]*)`", r"\1", heading)                      # code spans: their text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)             # links: their text
    text = re.sub(r"<[^>]+>", "", text)                              # HTML tags
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)                 # bold
    text = re.sub(r"(?<![\w$])([*_])(?!\s)(.+?)(?<!\s)\1(?![\w$])", r"\2", text)   # emphasis
    return text.strip().replace(" ", "-")
