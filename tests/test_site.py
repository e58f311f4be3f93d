"""The web edition's build (site/build.py) without Sphinx: which stored outputs become slider notes.
The built site itself is checked in Chromium by tools/site_check.py (`make test-ui`)."""
import base64
import importlib.util
import json
from pathlib import Path

import pytest

import posenc_lib
from posenc_lib.widgets import sinusoidal_explorer

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("site_build", ROOT / "site" / "build.py")
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)


def _text_output(text: str, output_type: str = "execute_result") -> dict:
    return {"output_type": output_type, "metadata": {}, "data": {"text/plain": [text]}, "execution_count": 1}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_build_knows_a_live_figure_by_the_text_the_library_stores(lang):
    posenc_lib.set_language(lang)
    try:
        stored = sinusoidal_explorer()._repr_mimebundle_()["text/plain"]  # what a stored notebook keeps
    finally:
        posenc_lib.set_language("en")
    assert build.is_live_figure(_text_output(stored))


def test_only_live_figures_become_slider_notes(tmp_path):
    live = "[live figure with sliders: run this cell in JupyterLab; the static figure above shows the same]"
    cells = [{"cell_type": "code", "source": "explorer()", "metadata": {}, "outputs": [_text_output(live)]},
             {"cell_type": "code", "source": "[1, 2]", "metadata": {}, "outputs": [_text_output("[1, 2]")]},
             {"cell_type": "code", "source": "print('[JupyterLab]')", "metadata": {},
              "outputs": [{"output_type": "stream", "name": "stdout", "text": ["[JupyterLab] and more\n"]}]}]
    source = tmp_path / "01_x.ipynb"
    source.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    for lang in ("en", "zh"):
        copied = tmp_path / f"copy-{lang}.ipynb"
        assert build.copy_notebook(source, copied, lang) == 1
        out = json.loads(copied.read_text())["cells"]
        assert build.SLIDER_NOTE[lang] in out[0]["outputs"][0]["data"]["text/html"]
        assert out[1:] == cells[1:]  # a list printed in brackets, a print naming JupyterLab: left as they are


def test_headings_get_jupyterlabs_anchors_and_attachments_become_files(tmp_path):
    """The notebooks link to headings by JupyterLab's anchors, which Sphinx does not make: the copy puts an
    element with that id before each heading (not inside fenced code); an attachment becomes a file beside it."""
    png = base64.b64encode(b"\x89PNG fake").decode()
    cells = [{"cell_type": "markdown", "metadata": {}, "attachments": {"cjk.png": {"image/png": png}},
              "source": "## 6. Why RoPE won\n\ntext ![ok](attachment:cjk.png)\n\n```\n# not a heading\n```\n"}]
    source = tmp_path / "06_x.ipynb"
    source.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (tmp_path / "out").mkdir()
    build.copy_notebook(source, tmp_path / "out" / "06_x.ipynb", "en")
    cell = json.loads((tmp_path / "out" / "06_x.ipynb").read_text())["cells"][0]
    assert cell["source"].startswith('<a id="6.-Why-RoPE-won"></a>\n\n## 6. Why RoPE won')
    assert cell["source"].count("<a id=") == 1 and "attachments" not in cell
    assert "](06_x-cjk.png)" in cell["source"]
    assert (tmp_path / "out" / "06_x-cjk.png").read_bytes() == b"\x89PNG fake"
