# Sphinx's configuration of the web edition, shared by both editions: site/build.py runs Sphinx once per
# edition on a folder of copied notebooks, with `language` set to "en" or "zh_CN".
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # posenc_site, the extension beside this file

project = "posenc"
author = "the posenc authors"
copyright = "the posenc authors"
extensions = ["myst_nb", "posenc_site"]

# The notebooks as stored: their outputs are nbval's fixtures, so nothing is re-executed.
nb_execution_mode = "off"
nb_render_markdown_format = "myst"  # a text/markdown output (09's tables) gets mathematics like the prose
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# The notebooks link to headings by JupyterLab's anchors (`06_rope.ipynb#7.-Common-mistakes`), which MyST's
# own slugs do not know; site/build.py gives every heading that anchor too, and tools/site_check.py checks in
# Chromium that every link lands, so MyST's "local id not found" warning would only repeat itself per link.
suppress_warnings = ["myst.xref_missing"]

# MathJax 3 from the site's own _static/mathjax (posenc_site copies it there), never from a CDN.
mathjax_path = "mathjax/tex-chtml.js"
# An unknown macro is a TeX error (MathJax's error box, which tools/site_check.py looks for), not its name
# quietly shown in red as MathJax's noundefined package would do.
mathjax3_config = {"tex": {"packages": {"[-]": ["noundefined"]}}}

html_theme = "sphinx_book_theme"
html_title = "posenc"
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["posenc-site.css"]
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": False,  # the page's own box links the notebook (and says how to run it)
    "use_fullscreen_button": False,
    "footer_content_items": [],
}
html_copy_source = True
html_sourcelink_suffix = ""  # _sources/NN_name.ipynb is the notebook itself, for the page's download link
html_show_sourcelink = False
html_use_index = False
html_domain_indices = False
html_last_updated_fmt = None
# The search page would fetch every result page to quote it, which a browser refuses on a site opened
# from disk (file://); the results list the pages' titles and sections without the quotes.
html_show_search_summary = False

# The Chinese edition's search index: jieba splits the text into words, and the course's terms (09's
# glossary) are added to its dictionary, so that 外推 or 旋转位置编码 is one word there, not 能外 + 推.
html_search_options = {"dict": str(Path(__file__).parent / "zh-words.txt")}
# light, as the figures are (white backgrounds); also spares the theme's console error on a first visit
html_context = {"default_mode": "light"}
