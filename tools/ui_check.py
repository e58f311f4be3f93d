"""The course as a learner uses it: every notebook in a real JupyterLab in headless Chromium.

`make test-ui` runs this file (a developer tool: not part of the installed package, not collected by
pytest). It drives Playwright directly rather than through pytest-playwright: that plugin gives a
browser `page` fixture, while most of this file is the JupyterLab server, the per-notebook runs and
the redraw timings, which it would not shorten.

1. Static reading (no execution): each STORED notebook is exported to HTML with nbconvert, as a
   reader on GitHub or nbviewer sees it. A notebook with plotting code must contain its figures as
   `<img src="data:image/png...">`; every cell that calls `plt.show()` at top level must have a stored
   PNG; no stored error output.
2. Live run: JupyterLab from this venv on 127.0.0.1 (random free port, random token), serving a
   throwaway copy of notebooks/ (the repo's files are never saved to). One headless Chromium
   (Debian's /usr/bin/chromium, driven by Playwright) opens each notebook in a fresh workspace,
   accepts the kernel dialog if one appears, clicks Run > Run All Cells and waits until the kernel is
   idle and every code cell has run. Per notebook it asserts: no error output (checked on the
   notebook model JupyterLab holds, so warnings on stderr are not errors), no "Error displaying
   widget", the ipywidgets views rendered; and for every interactive figure (a widget box holding an
   ipywidgets Image) it moves the FIRST control with the mouse (drags a slider's handle, picks
   another dropdown option, clicks another toggle button...) and asserts the image's bytes change,
   timing the move -> new image. Readability, in the notebook column a learner reads (file browser
   folded away, ~1200 px in the 1280-px window): the smallest text of every figure the kernel draws
   (measured in the kernel as it makes each PNG) must be at least MIN_TEXT_PX = 11 px on screen, no
   figure may be shown shrunk to fit, and no printed table row may wrap. It fails when a notebook shows
   an error, a control does not redraw, a notebook's median redraw exceeds --max-median-ms (300 ms), or
   a readability check fails.
Both editions are checked, each with its own server: notebooks/ with the interface in English and
notebooks/zh/ with it in Chinese (JupyterLab's zh_CN language pack, as `make lab-zh` serves it; the
Run menu is clicked by its Chinese name, so an English interface fails), after checking that the
system has a font with Chinese characters for Chromium.
Screenshots (one per notebook plus one per interactive figure) go to ui-screenshots/ and
ui-screenshots/zh/ (git-ignored).

Needs: `pip install -e ".[ui]"` (Playwright) and a Chromium: /usr/bin/chromium (Debian/Ubuntu:
`apt-get install chromium`), or --chromium PATH, or Playwright's own (`playwright install chromium`).
Usage: python tools/ui_check.py [notebooks/NN_x.ipynb | notebooks/zh/NN_x.ipynb ...] [--help for options]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIN_TEXT_PX = 11  # posenc_lib.plots._style.MIN_TEXT_PX (tests/test_project.py holds the two equal)
VENV_BIN = Path(sys.executable).parent  # `make test-ui` runs .venv/bin/python
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 "--disable-dev-shm-usage"]
# JupyterLab user settings for the throwaway server: never write back to the copies, no news toast.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}
# The two editions: where their notebooks are, the interface language (the Chinese edition is checked
# with JupyterLab in Chinese, as `make lab-zh` serves it: the zh_CN language pack, the "zh" extra) and
# the Run menu's name in it, which the check clicks.
LOCALE_SETTING = "@jupyterlab/translation-extension/plugin.jupyterlab-settings"
EDITIONS = {
    "en": {"folder": ROOT / "notebooks", "settings": LAB_SETTINGS, "run_menu": "Run", "shots": ""},
    "zh": {"folder": ROOT / "notebooks" / "zh", "settings": {**LAB_SETTINGS, LOCALE_SETTING: {"locale": "zh_CN"}},
           "run_menu": "运行", "shots": "zh"},
}
PLOT_CODE = re.compile(r"\bplt\.(show|subplots|figure|imshow|plot)\(|\.savefig\(|\brender_\w+\(")
TOP_LEVEL_SHOW = re.compile(r"^plt\.show\(", re.M)


class UICheckError(Exception):
    """A failure with a message meant for the person reading the CI log."""


# ----------------------------------------------------------------------------------------------
# 1. static reading
# ----------------------------------------------------------------------------------------------
@dataclass
class StaticResult:
    name: str
    html_pngs: int = 0
    plot_cells: int = 0
    problems: list = field(default_factory=list)


def check_static(path: Path) -> StaticResult:
    import nbformat
    from nbconvert import HTMLExporter

    res = StaticResult(path.name)
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if code and not any(c.get("execution_count") or c.get("outputs") for c in code):
        res.problems.append("stored notebook was never executed (no outputs): run `make refresh`")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        outputs = cell.get("outputs", [])
        pngs = sum("image/png" in o.get("data", {}) for o in outputs)
        if PLOT_CODE.search(cell.source):
            res.plot_cells += 1
        if TOP_LEVEL_SHOW.search(cell.source) and not pngs:
            res.problems.append(f"cell {i} calls plt.show() but has no stored PNG output")
        for o in outputs:
            if o.get("output_type") == "error":
                res.problems.append(f"cell {i} has a stored error output: {o.get('ename')}: "
                                    f"{o.get('evalue', '')[:120]}")
    body, _ = HTMLExporter().from_notebook_node(nb)
    res.html_pngs = len(re.findall(r"<img[^>]*\bsrc=\"data:image/png;base64,", body))
    if res.plot_cells and not res.html_pngs:
        res.problems.append(f"{res.plot_cells} cell(s) with plotting code but the exported HTML "
                            "holds no <img src=\"data:image/png...\">: the static figures are missing")
    return res


# ----------------------------------------------------------------------------------------------
# 2. the server
# ----------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """JupyterLab from this venv, serving a throwaway copy of the notebooks, in its own process group."""

    def __init__(self, notebooks_dir: Path, workdir: Path, startup_timeout: float, settings: dict):
        self.workdir = workdir
        self.port = free_port()
        self.token = secrets.token_hex(24)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "jupyter.log"
        # The served tree mirrors the repo: notebooks/ copied, every other top-level entry linked, so
        # paths such as ../data resolve exactly as in the checkout.
        tree = workdir / "repo"
        tree.mkdir()
        for entry in ROOT.iterdir():
            if entry.name in {".git", ".venv", "notebooks", "ui-screenshots"}:
                continue
            (tree / entry.name).symlink_to(entry)
        shutil.copytree(ROOT / "notebooks", tree / "notebooks",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        self.root_dir = tree / notebooks_dir.resolve().relative_to(ROOT)  # notebooks/ or notebooks/zh/
        for rel, values in settings.items():
            p = workdir / "lab-settings" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(values))
        env = dict(os.environ)
        env.pop("MPLBACKEND", None)  # a learner's kernel picks its backend itself (%matplotlib inline)
        env.update(JUPYTERLAB_SETTINGS_DIR=str(workdir / "lab-settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(workdir / "lab-workspaces"),
                   JUPYTER_CONFIG_DIR=str(workdir / "jupyter-config"),  # no user config (passwords...)
                   JUPYTER_DATA_DIR=str(workdir / "jupyter-data"),      # no user kernelspecs
                   JUPYTER_RUNTIME_DIR=str(workdir / "jupyter-runtime"),
                   PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}")
        jupyter = VENV_BIN / "jupyter"
        if not jupyter.exists():
            raise UICheckError(f"{jupyter} not found: run this with the project's venv python "
                               "(`make test-ui` does)")
        cmd = [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.root_dir}", "--LabApp.expose_app_in_browser=True",
               "--ServerApp.open_browser=False"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI runs as root
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     cwd=self.root_dir, start_new_session=True)
        deadline = time.monotonic() + startup_timeout
        while True:
            if self.proc.poll() is not None:
                raise UICheckError(f"JupyterLab exited with code {self.proc.returncode} while starting")
            try:
                self.api("GET", "/api/status", timeout=2)
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise UICheckError(f"JupyterLab did not answer on {self.base} within "
                                       f"{startup_timeout:.0f} s")
                time.sleep(0.25)

    def api(self, method: str, path: str, timeout: float = 10):
        req = urllib.request.Request(self.base + path, method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self):
        for s in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{s['id']}")

    def kernel_argv0(self) -> list[str]:
        """argv[0] of the kernel processes this server started (Linux /proc); [] when unknown."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) != self.proc.pid:
                    continue
                argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            if any(b"ipykernel" in a for a in argv):
                found.append(argv[0].decode())
        return found

    def log_tail(self, lines: int = 60) -> str:
        try:
            self.log.flush()
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)  # the server and the kernels it started
                self.proc.wait(timeout=15)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever survived, still only our group
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.log.close()


# ----------------------------------------------------------------------------------------------
# 3. the browser side
# ----------------------------------------------------------------------------------------------
# State of the open notebook as JupyterLab's own model holds it (window.jupyterapp exists because the
# server runs with --LabApp.expose_app_in_browser).
STATE_JS = r"""(name) => {
  const app = window.jupyterapp;
  if (!app) return {ready: false, why: 'window.jupyterapp missing'};
  let panel = null;
  for (const w of app.shell.widgets('main')) { if (w.context && w.context.path.endsWith(name)) panel = w; }
  if (!panel || !panel.content || !panel.content.model) return {ready: false, why: 'notebook panel not open'};
  const ctx = panel.sessionContext;
  const kernel = ctx && ctx.session && ctx.session.kernel;
  const cells = [];
  const model = panel.content.model;
  const nodes = panel.content.widgets;
  for (let i = 0; i < model.cells.length; i++) {
    const c = model.cells.get(i);
    if (c.type !== 'code') continue;
    const src = c.sharedModel.getSource();
    const errors = [];
    let views = 0;
    for (let j = 0; j < c.outputs.length; j++) {
      const o = c.outputs.get(j);
      if (o.type === 'error') { const js = o.toJSON(); errors.push(`${js.ename}: ${js.evalue}`); }
      if (o.data && o.data['application/vnd.jupyter.widget-view+json']) views += 1;
    }
    const prompt = nodes[i] && nodes[i].node.querySelector('.jp-InputPrompt');
    cells.push({i, empty: src.trim() === '', first: src.split('\n')[0].slice(0, 80),
                count: c.executionCount, running: prompt ? prompt.textContent.includes('*') : false,
                errors, views});
  }
  return {ready: true, status: kernel ? kernel.status : (ctx && ctx.hasNoKernel ? 'no kernel' : 'starting'),
          kernelName: kernel ? kernel.name : null, busySeen: !!window.__uicBusySeen,
          dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText.slice(0, 200)),
          cells};
}"""

# Watch the kernel from the moment before Run All: a busy status (so a stored execution count is
# never mistaken for a finished run), and errors raised in widget callbacks (comm messages), which
# JupyterLab shows in its log console, not in the cell.
WATCH_KERNEL_JS = r"""(name) => {
  const app = window.jupyterapp;
  for (const w of app.shell.widgets('main')) {
    if (w.context && w.context.path.endsWith(name)) {
      window.__uicBusySeen = false;
      window.__uicCallbackErrors = [];
      const ctx = w.sessionContext;
      const onIopub = (_, msg) => {
        if (msg.header.msg_type === 'error' && msg.parent_header && msg.parent_header.msg_type === 'comm_msg')
          window.__uicCallbackErrors.push(`${msg.content.ename}: ${msg.content.evalue}`);
      };
      const hook = (kernel) => { if (!kernel) return;
        kernel.statusChanged.connect((_, s) => { if (s === 'busy') window.__uicBusySeen = true; });
        kernel.iopubMessage.connect(onIopub); };
      hook(ctx.session.kernel);
      ctx.kernelChanged.connect((_, change) => hook(change.newValue));
      return true;
    }
  }
  return false;
}"""

CONTROL_SELECTOR = (".widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-toggle-button, "
                    ".widget-checkbox, .widget-radio, .widget-select, .widget-select-multiple, "
                    ".widget-text, .widget-play, .widget-button, .widget-colorpicker, .widget-datepicker")

# Interactive figures: widget boxes holding an ipywidgets Image. Marks them and their controls
# with data-uic-* attributes for the locators.
FIND_FIGURES_JS = r"""(sel) => {
  const kind = (c) => c.querySelector('.noUi-handle') ? 'slider'
    : c.classList.contains('widget-dropdown') ? 'dropdown'
    : c.classList.contains('widget-toggle-buttons') ? 'togglebuttons'
    : c.classList.contains('widget-toggle-button') ? 'togglebutton'
    : c.classList.contains('widget-checkbox') ? 'checkbox'
    : c.classList.contains('widget-radio') ? 'radio'
    : (c.classList.contains('widget-select') || c.classList.contains('widget-select-multiple')) ? 'select'
    : c.classList.contains('widget-text') ? 'text'
    : c.classList.contains('widget-button') ? 'button' : 'other:' + c.className;
  const figs = [];
  document.querySelectorAll('.jp-OutputArea-output img.widget-image').forEach((img) => {
    const box = img.parentElement;
    if (!box || !box.classList.contains('widget-box')) return;
    const k = figs.length;
    box.setAttribute('data-uic-fig', k);
    img.setAttribute('data-uic-img', k);
    const ctrls = [...box.querySelectorAll(sel)].filter((el) => {
      for (let p = el.parentElement; p && p !== box; p = p.parentElement) if (p.matches(sel)) return false;
      return true;
    });
    ctrls.forEach((c, j) => c.setAttribute('data-uic-ctrl', `${k}-${j}`));
    const cell = box.closest('.jp-Cell');
    // A control a person can move: a dropdown needs a second option, a slider a range.
    const movable = (c) => {
      const s = c.querySelector('select'); if (s) return s.options.length > 1;
      const h = c.querySelector('.noUi-handle'); if (h) return h.getAttribute('aria-valuemin') !== h.getAttribute('aria-valuemax');
      if (c.classList.contains('widget-toggle-buttons')) return c.querySelectorAll('button').length > 1;
      return !c.querySelector(':disabled');
    };
    const label = ctrls.length ? (ctrls[0].querySelector('.widget-label')?.textContent || '') : '';
    figs.push({k, cell: cell ? Number(cell.getAttribute('data-windowed-list-index')) : null,
               title: (box.querySelector('.widget-html-content')?.textContent || '').trim().slice(0, 60),
               kinds: ctrls.map(kind), label: label.trim(), movable: ctrls.map(movable),
               natural: [img.naturalWidth, img.naturalHeight], shown: [img.clientWidth, img.clientHeight]});
  });
  return figs;
}"""

WIDGET_HEALTH_JS = r"""() => {
  const outs = [...document.querySelectorAll('.jp-OutputArea-output')];
  const text = (e) => e.textContent || '';
  return {
    views: outs.filter(e => e.querySelector(':scope > .jupyter-widgets')).length,
    loading: outs.filter(e => /Loading widget\.\.\./.test(text(e))).length,
    broken: outs.filter(e => /Error displaying widget|Error creating widget/.test(text(e)))
                .map(e => text(e).slice(0, 200)),
    images: [...document.querySelectorAll('.jp-OutputArea-output img.widget-image')]
              .map(i => !!i.getAttribute('src') && i.complete && i.naturalWidth > 0),
  };
}"""

DIGEST_JS = r"""async (src) => {
  const buf = await (await fetch(src)).arrayBuffer();
  const d = await crypto.subtle.digest('SHA-256', buf);
  return [...new Uint8Array(d)].map(b => b.toString(16).padStart(2, '0')).join('') + ':' + buf.byteLength;
}"""

# Arm a recorder on figure k: the user-action time (event.timeStamp of the pointerup / change /
# keydown that commits the move) and the time the image's src changes and the new image loads.
ARM_JS = r"""(k) => {
  const img = document.querySelector(`img[data-uic-img="${k}"]`);
  const rec = {src0: img.src, action: null, change: null, load: null, src1: null, changes: 0};
  if (window.__uicRec && window.__uicRec.cleanup) window.__uicRec.cleanup();
  window.__uicRec = rec;
  const onEv = (e) => { if (rec.action === null) rec.action = e.timeStamp; };
  const types = ['pointerup', 'change', 'keydown'];
  types.forEach(t => document.addEventListener(t, onEv, true));
  const onLoad = () => { if (rec.change !== null && rec.load === null && img.src === rec.src1) rec.load = performance.now(); };
  img.addEventListener('load', onLoad);
  const obs = new MutationObserver(() => {
    if (img.src !== rec.src0) {
      rec.changes += 1;
      if (rec.change === null) { rec.change = performance.now(); rec.src1 = img.src; }
      if (img.complete && img.naturalWidth > 0 && rec.load === null && img.src === rec.src1) onLoad();
    }
  });
  obs.observe(img, {attributes: true, attributeFilter: ['src']});
  rec.cleanup = () => { obs.disconnect(); img.removeEventListener('load', onLoad);
                        types.forEach(t => document.removeEventListener(t, onEv, true)); };
  return rec.src0;
}"""

# Read-only look into the kernel (a user expression: no output, no execution count, nothing
# assigned): redraw_count and last_redraw_seconds of every InteractiveFigure, to tell how much of a
# redraw seen in the browser is spent in the kernel.
KERNEL_EXPR_JS = r"""async ([name, expr]) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path.endsWith(name)) {
      const fut = w.sessionContext.session.kernel.requestExecute(
        {code: '', silent: true, store_history: false, user_expressions: {r: expr}});
      const reply = await fut.done;
      const r = reply.content.user_expressions.r;
      return r && r.status === 'ok' ? r.data['text/plain'] : null;
    }
  }
  return null;
}"""
FIGURE_TIMES_EXPR = ("__import__('json').dumps({k: [v.redraw_count, v.last_redraw_seconds] for k, v in "
                     "__import__('ipywidgets').widgets.widget._instances.items() if isinstance(v, "
                     "__import__('posenc_lib.widgets._base', fromlist=['_']).InteractiveFigure)})")

# Installed in the kernel (through a user expression) before Run All: every figure the kernel turns into
# a PNG (inline output and widget images alike go through FigureCanvasBase.print_figure) is measured once
# for its smallest text, in pixels at the figure's dpi (posenc_lib.plots._style.smallest_text).
TEXT_AUDIT_CODE = """
import weakref, matplotlib.backend_bases as _uic_b
from posenc_lib.plots._style import smallest_text as _uic_smallest
__uic_text_audit, _uic_seen = [], weakref.WeakSet()
_uic_print = _uic_b.FigureCanvasBase.print_figure
def _uic_audited(self, *args, **kwargs):
    fig = self.figure
    if fig not in _uic_seen and fig.axes:
        _uic_seen.add(fig)
        px, text = _uic_smallest(fig)
        __uic_text_audit.append([round(px, 1), text[:40], round(fig.get_figwidth() * fig.dpi)])
    return _uic_print(self, *args, **kwargs)
_uic_b.FigureCanvasBase.print_figure = _uic_audited
"""
TEXT_AUDIT_INSTALL = f"exec({TEXT_AUDIT_CODE!r}) or 'installed'"
TEXT_AUDIT_EXPR = "__import__('json').dumps(__uic_text_audit)"

# What a learner sees of the outputs in the notebook column: each figure's PNG shown at its own size or
# shrunk to fit, and each printed table row (three or more lines of one output with columns aligned by two
# or more spaces) on one line or wrapped. Widths from the browser's own layout and font metrics.
LAYOUT_JS = r"""() => {
  const panel = [...document.querySelectorAll('.jp-NotebookPanel')].find(p => p.offsetParent !== null);
  const images = [...document.querySelectorAll('.jp-OutputArea-output img')].filter(i => i.naturalWidth > 0)
    .map(i => ({natural: i.naturalWidth, shown: i.clientWidth}));
  const ctx = document.createElement('canvas').getContext('2d');
  const wraps = [];
  for (const pre of document.querySelectorAll('.jp-OutputArea-output pre')) {
    const cs = getComputedStyle(pre);
    ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
    const room = pre.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    // a table: three or more lines of one output whose columns are aligned with 2+ spaces
    const rows = pre.textContent.split('\n').filter(line => /\S {2,}\S.*\S {2,}\S/.test(line));
    if (rows.length < 3) continue;
    for (const line of rows) {
      const width = ctx.measureText(line).width;
      if (width > room + 1) wraps.push({width: Math.round(width), room: Math.round(room), line: line.slice(0, 70)});
    }
  }
  return {column: panel ? panel.clientWidth : null, images, wraps};
}"""

READ_REC_JS = r"""() => { const r = window.__uicRec; return r ? {action: r.action, change: r.change, load: r.load,
  src1: r.src1, changes: r.changes} : null; }"""

CONTROL_VALUE_JS = r"""(el) => {
  const h = el.querySelector('.noUi-handle'); if (h) return h.getAttribute('aria-valuenow') || h.getAttribute('aria-valuetext');
  const s = el.querySelector('select'); if (s) return [...s.selectedOptions].map(o => o.value).join(',');
  const act = [...el.querySelectorAll('.mod-active')].map(b => b.textContent); if (el.classList.contains('widget-toggle-buttons')) return act.join(',');
  if (el.classList.contains('widget-toggle-button')) return String(el.classList.contains('mod-active'));
  const i = el.querySelector('input'); if (i) return (i.type === 'checkbox' || i.type === 'radio') ? [...el.querySelectorAll('input')].map(x => x.checked ? 1 : 0).join('') : i.value;
  return el.textContent;
}"""


@dataclass
class Redraw:
    fig: int
    cell: int | None
    kind: str
    method: str
    before: str
    after: str
    ms: float | None
    ok: bool
    problem: str = ""
    kernel_ms: float | None = None


@dataclass
class LiveResult:
    name: str
    load_s: float = float("nan")
    run_s: float = float("nan")
    figures: int = 0
    controls: int = 0
    redraws: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    kernel: str = ""
    notes: list = field(default_factory=list)
    min_text_px: float | None = None   # the smallest figure text on screen, in px
    column_px: int | None = None       # the notebook column's width

    @property
    def ok_redraws(self):
        return [r for r in self.redraws if r.ok]

    @property
    def median_ms(self):
        ms = [r.ms for r in self.ok_redraws if r.ms is not None]
        return statistics.median(ms) if ms else None

    @property
    def median_kernel_ms(self):
        ms = [r.kernel_ms for r in self.ok_redraws if r.kernel_ms is not None]
        return statistics.median(ms) if ms else None

    @property
    def max_ms(self):
        ms = [r.ms for r in self.ok_redraws if r.ms is not None]
        return max(ms) if ms else None


class Runner:
    def __init__(self, server: LabServer, browser, args, shots: Path, run_menu: str):
        self.server, self.args, self.shots, self.run_menu = server, args, shots, run_menu
        # One context for all notebooks so JupyterLab's static files come from the HTTP cache;
        # each notebook gets its own page and its own fresh workspace.
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(30_000)

    def run_notebook(self, path: Path) -> LiveResult:
        res = LiveResult(path.name)
        page = self.context.new_page()
        console_errors = []
        page.on("pageerror", lambda e: console_errors.append(f"page error: {e}"))
        page.on("console", lambda m: console_errors.append(f"console.{m.type}: {m.text[:200]}")
                if m.type == "error" else None)
        try:
            self._run(page, path, res)
        except UICheckError as e:
            res.problems.append(str(e))
        except Exception as e:  # playwright timeouts and the like: report, keep going
            res.problems.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            if self.args.verbose:
                traceback.print_exc()
        finally:
            try:
                page.screenshot(path=str(self.shots / f"{path.stem}.png"))
            except Exception:
                pass
            if (res.problems or res.errors) and console_errors:
                res.problems.append("browser console: " + " | ".join(console_errors[:5]))
            page.close()
            try:
                self.server.shutdown_kernels()  # free the CPU and memory before the next notebook
            except Exception as e:
                res.problems.append(f"could not shut the kernel down: {e}")
        return res

    # -- steps -------------------------------------------------------------------------------
    def _state(self, page, name):
        return page.evaluate(STATE_JS, name)

    def _accept_dialogs(self, page, res) -> None:
        for dialog in page.locator(".jp-Dialog").all():
            text = dialog.inner_text()[:200].replace("\n", " ")
            accept = dialog.locator(".jp-mod-accept")
            if accept.count():
                accept.first.click()
                res.notes.append(f"accepted dialog: {text}")
            else:
                raise UICheckError(f"unexpected dialog without an accept button: {text}")

    def _run(self, page, path: Path, res: LiveResult):
        a, name = self.args, path.name
        self.name = name
        workspace = f"uicheck-{secrets.token_hex(4)}"
        t0 = time.monotonic()
        page.goto(f"{self.server.base}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.server.token}",
                  wait_until="domcontentloaded", timeout=a.load_timeout * 1000)
        # JupyterLab loaded, notebook open, kernel idle (accepting a kernel dialog if one shows up).
        deadline = time.monotonic() + a.load_timeout
        st = {}
        while True:
            if page.locator(".jp-Dialog").count():
                self._accept_dialogs(page, res)
            st = self._state(page, name)
            if st.get("ready") and st["status"] == "idle":
                break
            if time.monotonic() > deadline:
                raise UICheckError(f"notebook did not open with an idle kernel within {a.load_timeout} s "
                                   f"(last state: {st.get('why') or st.get('status')})")
            time.sleep(0.25)
        res.load_s = time.monotonic() - t0
        if st["kernelName"] != "python3":
            res.problems.append(f"kernel is {st['kernelName']!r}, expected the venv's default 'python3'")
        if not page.evaluate(WATCH_KERNEL_JS, name):
            raise UICheckError("could not attach to the notebook's kernel")
        # The notebook column a learner reads in: the file browser folded away (Ctrl+B), so the
        # notebook gets the window's width (~1200 px in the 1280-px window).
        page.evaluate("() => { const s = window.jupyterapp.shell; if (!s.leftCollapsed) s.collapseLeft(); }")
        if page.evaluate(KERNEL_EXPR_JS, [name, TEXT_AUDIT_INSTALL]) != "'installed'":
            res.problems.append("could not install the figure text audit in the kernel")

        # Run > Run All Cells, with the mouse, as a learner would.
        # (the menu is found by its name in the edition's interface language: "运行" in Chinese)
        menu = page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(self.run_menu)}$"))
        if not menu.count():
            labels = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
            raise UICheckError(f"no {self.run_menu!r} menu in the menu bar {labels}: is the interface in the "
                               "edition's language (the zh_CN language pack for notebooks/zh)?")
        menu.click()
        page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
        t_run = time.monotonic()
        deadline = t_run + a.run_timeout
        last_change, last_sig = t_run, None
        while True:
            time.sleep(0.25)
            if page.locator(".jp-Dialog").count():
                text = page.locator(".jp-Dialog").first.inner_text()[:200].replace("\n", " ")
                raise UICheckError(f"dialog during the run (kernel died?): {text}")
            st = self._state(page, name)
            cells = st["cells"]
            errors = [c for c in cells if c["errors"]]
            running = [c for c in cells if c["running"]]
            pending = [c for c in cells if not c["empty"] and c["count"] is None]
            if st["status"] in ("dead", "restarting", "autorestarting", "unknown", "no kernel"):
                raise UICheckError(f"kernel is {st['status']} during the run (did it crash or run out of memory?)")
            sig = (st["status"], len(running), len(pending))
            if sig != last_sig:
                last_sig, last_change = sig, time.monotonic()
            has_code = any(not c["empty"] for c in cells)
            done = ((st["busySeen"] or not has_code) and st["status"] == "idle" and not running
                    and (not pending or errors))
            if done and time.monotonic() - last_change >= 0.5:  # idle and stable for half a second
                break
            if time.monotonic() > deadline:
                stuck = (running or pending or [{"i": "?", "first": ""}])[0]
                raise UICheckError(f"run did not finish within {a.run_timeout} s (kernel {st['status']}; "
                                   f"{len(running)} cell(s) running, {len(pending)} not run; first: cell "
                                   f"{stuck['i']} `{stuck['first']}`)")
        res.run_s = time.monotonic() - t_run
        for c in errors:
            res.errors.append(f"cell {c['i']} `{c['first']}`: " + "; ".join(e[:160] for e in c["errors"]))
        if pending and not errors:
            res.problems.append(f"{len(pending)} code cell(s) never ran, first: cell {pending[0]['i']}")
        self._check_kernel_python(res)

        # Every widget view the kernel displayed is rendered (the ipywidgets JupyterLab extension
        # works: without it JupyterLab falls back to the text repr), and every widget image loaded.
        expected_views = sum(c["views"] for c in cells)
        deadline = time.monotonic() + a.widget_timeout
        while True:
            health = page.evaluate(WIDGET_HEALTH_JS)
            settled = not health["loading"] and all(health["images"])
            if settled and health["views"] >= expected_views:
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.25)
        for b in health["broken"]:
            res.errors.append(f"widget not displayed: {b}")
        if health["loading"]:
            res.problems.append(f"{health['loading']} widget(s) still 'Loading widget...' after "
                                f"{a.widget_timeout} s: is the ipywidgets JupyterLab extension installed?")
        if health["views"] < expected_views:
            res.problems.append(f"the kernel displayed {expected_views} widget(s) but {health['views']} "
                                "rendered: is the ipywidgets JupyterLab extension (jupyterlab_widgets) "
                                "installed in the venv?")
        if not all(health["images"]):
            res.problems.append(f"{health['images'].count(False)} widget image(s) empty or not loaded")

        self._check_readability(page, res)
        figs = page.evaluate(FIND_FIGURES_JS, CONTROL_SELECTOR)
        res.figures = len(figs)
        res.controls = sum(len(f["kinds"]) for f in figs)
        page.mouse.move(2, 2)
        for f in figs:
            if not f["kinds"]:
                res.problems.append(f"interactive figure {f['k']} (cell {f['cell']}) has no control")
                continue
            if f["shown"][0] > 1.05 * f["natural"][0]:
                res.notes.append(f"figure {f['k']} (cell {f['cell']}): its {f['natural'][0]}x{f['natural'][1]} PNG "
                                 f"is shown stretched to {f['shown'][0]}x{f['shown'][1]} px (blurry)")
            # The first control; when it has nothing to move to (e.g. a device dropdown whose only
            # option is "cpu"), the first one that has, as a learner would do.
            j = next((j for j, m in enumerate(f["movable"]) if m), None)
            if j is None:
                res.problems.append(f"interactive figure {f['k']} (cell {f['cell']}): none of its "
                                    f"{len(f['kinds'])} control(s) can be moved (single options, disabled)")
                continue
            if j:
                res.notes.append(f"figure {f['k']} (cell {f['cell']}): its first control ({f['kinds'][0]}) "
                                 f"has nothing to move to here; moved control {j + 1} ({f['kinds'][j]})")
            for move in range(a.moves):
                r = self._move_and_time(page, f, j, move)
                res.redraws.append(r)
                if not r.ok:
                    res.problems.append(f"figure {f['k']} `{f['title'] or f['label']}` (cell {f['cell']}), "
                                        f"control {j + 1} ({r.kind}): {r.problem}")
                    break
            try:
                page.locator(f'[data-uic-fig="{f["k"]}"]').screenshot(
                    path=str(self.shots / f"{path.stem}.fig{f['k']}.png"))
            except Exception:
                pass
        for e in page.evaluate("() => window.__uicCallbackErrors || []"):
            res.errors.append(f"error raised in a widget callback (shown in the log console): {e[:200]}")
        # The notebook screenshot: the first interactive figure (or the top) in view.
        if figs:
            page.locator('[data-uic-fig="0"]').scroll_into_view_if_needed()
        page.mouse.move(2, 2)
        time.sleep(0.2)

    def _check_readability(self, page, res: LiveResult):
        """The smallest text of every figure the kernel drew (>= MIN_TEXT_PX), each figure shown at its own
        size (not shrunk to the column), and no printed table row wrapped."""
        import ast
        text = page.evaluate(KERNEL_EXPR_JS, [self.name, TEXT_AUDIT_EXPR])
        audit = json.loads(ast.literal_eval(text)) if text else []
        layout = page.evaluate(LAYOUT_JS)
        res.column_px = layout["column"]
        shrink = min((i["shown"] / i["natural"] for i in layout["images"]), default=1.0)
        if audit:
            px, words, _ = min(audit)
            res.min_text_px = px * min(shrink, 1.0)  # on screen: a shrunk PNG shrinks its text too
            if res.min_text_px < MIN_TEXT_PX:
                res.problems.append(f"figure text {words!r} is {res.min_text_px:.1f} px high on screen "
                                    f"(< {MIN_TEXT_PX} px)")
        for i in layout["images"]:
            if i["shown"] < 0.98 * i["natural"]:
                res.problems.append(f"a {i['natural']}-px-wide figure is shown shrunk to {i['shown']} px in a "
                                    f"{layout['column']}-px notebook column: its text shrinks with it")
        for w in layout["wraps"][:5]:
            res.problems.append(f"a printed table row needs {w['width']} px but has {w['room']} px, so it wraps: "
                                f"{w['line']!r}")
        if len(layout["wraps"]) > 5:
            res.problems.append(f"... and {len(layout['wraps']) - 5} more wrapped table rows")

    def _check_kernel_python(self, res: LiveResult):
        argv0 = self.server.kernel_argv0()
        if not argv0:
            res.kernel = "(kernel process not found via /proc)"
            return
        res.kernel = argv0[0]
        outside = [p for p in argv0 if Path(p).parent != VENV_BIN]
        if outside:
            res.problems.append(f"kernel runs {outside[0]}, not the venv's python in {VENV_BIN}")

    def _centre(self, page, ctrl) -> None:
        """Scroll the control to the middle of the notebook area (not half under the toolbar). The
        notebook lays out off-screen cells lazily (content-visibility), so the page shifts while it
        scrolls: repeat until the control stays put inside the viewport."""
        last = None
        for _ in range(20):
            ctrl.evaluate("e => e.scrollIntoView({block: 'center', inline: 'nearest'})")
            page.wait_for_timeout(150)
            box = ctrl.bounding_box()
            pos = box and (round(box["x"]), round(box["y"]))
            if box and pos == last and 0 <= box["y"] and box["y"] + box["height"] <= page.viewport_size["height"]:
                return
            last = pos
        raise UICheckError(f"could not scroll the control into a steady place in view (last box {box})")

    def _figure_times(self, page) -> dict:
        try:
            import ast
            text = page.evaluate(KERNEL_EXPR_JS, [self.name, FIGURE_TIMES_EXPR])
            return json.loads(ast.literal_eval(text)) if text else {}
        except Exception:
            return {}

    def _move_and_time(self, page, f, j: int, move: int) -> Redraw:
        k = f["k"]
        times0 = self._figure_times(page)
        kind = f["kinds"][j]
        ctrl = page.locator(f'[data-uic-ctrl="{k}-{j}"]')
        self._centre(page, ctrl)
        before = page.evaluate(CONTROL_VALUE_JS, ctrl.element_handle())
        src0 = page.evaluate(ARM_JS, k)
        digest0 = page.evaluate(DIGEST_JS, src0)
        page.evaluate(ARM_JS, k)  # re-arm: the fetch above must not count as the action
        r = Redraw(k, f["cell"], kind, "", before, "", None, False)
        try:
            r.method = method = self._move(page, ctrl, kind, move, rearm=lambda: page.evaluate(ARM_JS, k))
        except UICheckError as e:
            r.problem = str(e)
            return r
        deadline = time.monotonic() + self.args.redraw_timeout
        rec = None
        while time.monotonic() < deadline:
            rec = page.evaluate(READ_REC_JS)
            if rec and rec["load"] is not None:
                break
            time.sleep(0.01)  # poll at ~10 ms; the times themselves come from the page's clock
        r.after = page.evaluate(CONTROL_VALUE_JS, ctrl.element_handle())
        if not rec or rec["change"] is None:
            r.problem = (f"moved it ({method}; value {before} -> {r.after}) but the image did not change "
                         f"within {self.args.redraw_timeout} s"
                         if r.after != before else f"{method} did not change its value ({before})")
            return r
        if rec["action"] is None:
            r.problem = "the image changed but no user event was seen (internal error of the check)"
            return r
        end = rec["load"] if rec["load"] is not None else rec["change"]
        r.ms = end - rec["action"]
        if r.ms < 0:
            r.problem = "the image changed before the move was committed (continuous_update on?)"
            return r
        digest1 = page.evaluate(DIGEST_JS, rec["src1"]) if rec["src1"] else None
        if digest1 == digest0:
            r.problem = f"value {before} -> {r.after}: a new image arrived but its bytes are identical"
            return r
        r.ok = True
        changed = [v for key, v in self._figure_times(page).items()
                   if key in times0 and v[0] != times0[key][0]]
        if len(changed) == 1:
            r.kernel_ms = changed[0][1] * 1000
        return r

    def _move(self, page, ctrl, kind: str, move: int, rearm) -> str:
        """Move the control once, as a person would; the last input event is what ARM_JS times."""
        if kind == "slider":
            handle = ctrl.locator(".noUi-handle").first
            track = ctrl.locator(".noUi-base").first.bounding_box()
            hb = handle.bounding_box()
            x0, y0 = hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2
            frac = (x0 - track["x"]) / max(track["width"], 1)
            dx = track["width"] * 0.35 * (-1 if frac > 0.5 else 1)
            hit = page.evaluate("([x, y]) => { const e = document.elementFromPoint(x, y); "
                                "return e ? (e.closest('.noUi-handle') ? 'handle' : e.className || e.tagName) : null; }",
                                [x0, y0])
            if hit != "handle":
                raise UICheckError(f"the slider handle is not under the mouse at ({x0:.0f}, {y0:.0f}): "
                                   f"{hit} is (covered or off screen)")
            before = handle.get_attribute("aria-valuenow")
            page.mouse.move(x0, y0)
            page.mouse.down()
            page.mouse.move(x0 + dx, y0, steps=8)
            page.mouse.up()
            if handle.get_attribute("aria-valuenow") != before:
                return f"dragged the handle {dx:+.0f} px"
            # The drag did not take: click on the track away from the handle instead.
            rearm()
            page.mouse.click(x0 + dx, y0)
            return f"dragged the handle {dx:+.0f} px (no change), then clicked the track there"
        if kind in ("dropdown", "select"):
            sel = ctrl.locator("select").first
            n = sel.locator("option").count()
            cur = sel.evaluate("s => s.selectedIndex")
            target = (cur + 1) % n if n > 1 else 0
            sel.select_option(index=target)
            return f"selected option {target}"
        if kind == "togglebuttons":
            buttons = ctrl.locator("button")
            n = buttons.count()
            active = [i for i in range(n) if "mod-active" in (buttons.nth(i).get_attribute("class") or "")]
            target = next((i for i in range(n) if i not in active), 0)
            buttons.nth(target).click()
            return f"clicked button {target}"
        if kind in ("togglebutton", "button"):
            ctrl.click()
            return "clicked it"
        if kind == "checkbox":
            ctrl.locator("input").first.click()
            return "clicked the checkbox"
        if kind == "radio":
            radios = ctrl.locator("input[type=radio]")
            n = radios.count()
            target = next((i for i in range(n) if not radios.nth(i).is_checked()), 0)
            radios.nth(target).click()
            return f"clicked radio {target}"
        if kind == "text":
            box = ctrl.locator("input").first
            value = box.input_value()
            try:
                new = str(int(value) + (1 if move % 2 == 0 else -1))
            except ValueError:
                try:
                    new = repr(float(value) * (1.5 if move % 2 == 0 else 1 / 1.5) or 1.0)
                except ValueError:
                    new = value + "x"
            box.click(click_count=3)
            page.keyboard.type(new)
            page.keyboard.press("Enter")
            return f"typed {new} + Enter"
        raise UICheckError(f"do not know how to move a control of kind {kind}")


# ----------------------------------------------------------------------------------------------
# 4. main
# ----------------------------------------------------------------------------------------------
def launch_browser(p, chromium: str | None):
    path = chromium or os.environ.get("CHROMIUM") or "/usr/bin/chromium"
    kwargs = dict(headless=True, args=CHROMIUM_ARGS)
    if Path(path).exists():
        return p.chromium.launch(executable_path=path, **kwargs), path
    try:  # no system Chromium: Playwright's own, if `playwright install chromium` was run
        return p.chromium.launch(**kwargs), p.chromium.executable_path
    except Exception as e:
        raise UICheckError(f"no Chromium at {path} and no Playwright browser ({str(e).splitlines()[0]}); "
                           "Debian/Ubuntu: `apt-get install chromium`, or pass --chromium PATH") from None


def chinese_font_for_browser() -> bool:
    """Whether fontconfig, where Chromium on Linux finds its fonts, has a font with Chinese characters
    (elsewhere, without fc-list, assume the system has one)."""
    try:
        listed = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return True
    return bool(listed.stdout.strip())


def fmt(x, spec=".1f", none="-"):
    return none if x is None or x != x else format(x, spec)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", type=Path,
                    help="notebooks to check (default: both editions, notebooks/ and notebooks/zh/)")
    ap.add_argument("--chromium", help="Chromium binary (default: $CHROMIUM or /usr/bin/chromium)")
    ap.add_argument("--max-median-ms", type=float, default=300.0,
                    help="fail when a notebook's median move->new image time exceeds this (default 300)")
    ap.add_argument("--moves", type=int, default=2,
                    help="moves of each figure's first control (default 2: there and back)")
    ap.add_argument("--startup-timeout", type=float, default=120)
    ap.add_argument("--load-timeout", type=float, default=120, help="s to open a notebook with an idle kernel")
    ap.add_argument("--run-timeout", type=float, default=300, help="s for Run All per notebook")
    ap.add_argument("--widget-timeout", type=float, default=30, help="s for widgets to render after the run")
    ap.add_argument("--redraw-timeout", type=float, default=15, help="s to wait for a new image after a move")
    ap.add_argument("--screenshots", type=Path, default=ROOT / "ui-screenshots")
    ap.add_argument("--static-only", action="store_true", help="only the nbconvert HTML check")
    ap.add_argument("--live-only", action="store_true", help="skip the nbconvert HTML check")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)

    paths = [p.resolve() for p in a.notebooks] or [
        p for edition in EDITIONS.values() for p in sorted(edition["folder"].glob("[0-9][0-9]_*.ipynb"))]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"UI FAILED: no such notebook: {', '.join(missing)}")
        return 2
    if not paths:
        print("UI FAILED: no notebooks found (notebooks/[0-9][0-9]_*.ipynb)")
        return 2
    by_folder = {edition["folder"]: name for name, edition in EDITIONS.items()}
    strangers = sorted({str(p.parent) for p in paths if p.parent not in by_folder})
    if strangers:
        print(f"UI FAILED: notebooks must be in notebooks/ or notebooks/zh/, not {', '.join(strangers)}")
        return 2
    t_start = time.monotonic()
    failed, n_live, n_bad, n_bad_static, n_redraws = False, 0, 0, 0, 0
    for name, edition in EDITIONS.items():
        chosen = [p for p in paths if p.parent == edition["folder"]]
        if not chosen:
            continue
        print(f"==== the {'English' if name == 'en' else 'Chinese'} edition: {len(chosen)} notebook(s) in "
              f"{edition['folder'].relative_to(ROOT)}/")
        result = check_edition(chosen, edition, a)
        if isinstance(result, int):  # could not run at all
            return result
        ed_failed, live, static = result
        failed |= ed_failed
        n_live += len(live)
        n_bad += sum(1 for r in live if r.errors or r.problems or not all(x.ok for x in r.redraws)
                     or (r.median_ms is not None and r.median_ms > a.max_median_ms))
        n_bad_static += sum(1 for s in static.values() if s.problems)
        n_redraws += sum(len(r.ok_redraws) for r in live)
    what = "static only" if a.static_only else f"{n_bad} failed live"
    print(f"UI {'FAILED' if failed else 'PASSED'}: {len(paths)} notebook(s), {what}, "
          f"{n_bad_static} failed static, {n_redraws} redraw(s), {time.monotonic() - t_start:.0f} s")
    return 1 if failed else 0


def check_edition(paths: list, edition: dict, a):
    """The static and live checks of one edition's notebooks: (failed, live results, static results),
    or an exit code when the check cannot run."""
    failed = False

    static = {}
    if not a.live_only:
        print(f"== static reading: {len(paths)} notebook(s) exported to HTML with nbconvert (stored outputs)")
        for p in paths:
            try:
                s = check_static(p)
            except Exception as e:
                s = StaticResult(p.name, problems=[f"nbconvert failed: {type(e).__name__}: {e}"])
            static[p.name] = s
            print(f"   {p.name:<32} {s.html_pngs:3d} PNG figure(s) in HTML, {s.plot_cells:3d} cell(s) with "
                  f"plotting code  {'ok' if not s.problems else 'FAIL'}")
            for msg in s.problems:
                print(f"      - {msg}")
            failed |= bool(s.problems)
    if a.static_only:
        return failed, [], static

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("UI FAILED: Playwright is not installed in this venv: `.venv/bin/pip install -e '.[ui]'` "
              "(`make test-ui` does it)")
        return 2

    if edition["shots"] == "zh" and not chinese_font_for_browser():
        print("   FAIL: no font with Chinese characters (fc-list :lang=zh is empty): Chromium would draw the "
              "Chinese edition as boxes. Install one: apt-get install fonts-wqy-microhei (or fonts-noto-cjk)")
        failed = True
    shots = a.screenshots / edition["shots"]
    shots.mkdir(parents=True, exist_ok=True)
    for old in shots.glob("*.png"):
        old.unlink()
    live: list[LiveResult] = []
    server = None
    workdir = Path(tempfile.mkdtemp(prefix="posenc-ui-"))
    show_log = False
    try:
        load = (f", load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
                if hasattr(os, "getloadavg") else "")
        print(f"== live run: JupyterLab ({VENV_BIN / 'jupyter'}) + headless Chromium{load}")
        server = LabServer(paths[0].parent, workdir, a.startup_timeout, edition["settings"])
        print(f"   server on {server.base} (random port and token), serving a copy of {paths[0].parent}")
        with sync_playwright() as p:
            browser, chromium = launch_browser(p, a.chromium)
            try:
                print(f"   browser: {chromium} (Chromium {browser.version})")
                runner = Runner(server, browser, a, shots, edition["run_menu"])
                for path in paths:
                    r = runner.run_notebook(path)
                    live.append(r)
                    bad = bool(r.errors or r.problems or not all(x.ok for x in r.redraws))
                    slow = r.median_ms is not None and r.median_ms > a.max_median_ms
                    print(f"   {path.name:<32} run {fmt(r.run_s)} s, {r.figures} figure(s), {r.controls} "
                          f"control(s), {len(r.ok_redraws)} redraw(s), median {fmt(r.median_ms, '.0f')} ms (kernel "
                          f"{fmt(r.median_kernel_ms, '.0f')} ms)"
                          f"  {'FAIL' if bad or slow else 'ok'}", flush=True)
                    for e in r.errors:
                        print(f"      - error output: {e}")
                    for msg in r.problems:
                        print(f"      - {msg}")
                    for msg in r.notes:
                        print(f"      note: {msg}")
                    if slow:
                        where = (f" ({r.median_kernel_ms:.0f} ms of it in the kernel's redraw)"
                                 if r.median_kernel_ms is not None else "")
                        print(f"      - median redraw {r.median_ms:.0f} ms > {a.max_median_ms:.0f} ms{where}")
                    if a.verbose:
                        for x in r.redraws:
                            print(f"      fig {x.fig} cell {x.cell} {x.kind}: {x.method}, {x.before} -> "
                                  f"{x.after}, {fmt(x.ms, '.0f')} ms (kernel {fmt(x.kernel_ms, '.0f')} ms) "
                                  f"{'ok' if x.ok else x.problem}")
                    failed |= bad or slow
                    show_log |= bad
            finally:
                browser.close()
    except UICheckError as e:
        print(f"== FAILED: {e}")
        failed = show_log = True
    except KeyboardInterrupt:
        print("== FAILED: interrupted")
        failed = show_log = True
    except Exception:
        traceback.print_exc()
        failed = show_log = True
    finally:
        if server is not None:
            if show_log:
                print("== JupyterLab log (tail):")
                print(server.log_tail())
            server.stop()
            try:
                shutil.copy(server.log_path, shots / "jupyter.log")
            except OSError:
                pass
        shutil.rmtree(workdir, ignore_errors=True)

    if live:
        kernels = sorted({r.kernel for r in live if r.kernel})
        print(f"\n   kernel python: {', '.join(kernels) or '?'}")
        head = (f"   {'notebook':<30} {'load s':>6} {'run s':>6} {'figs':>4} {'ctrls':>5} {'redraws':>7} "
                f"{'median ms':>9} {'kernel ms':>9} {'max ms':>6} {'text px':>7} {'HTML PNGs':>9}  result")
        print(head)
        for r in live:
            s = static.get(r.name)
            bad = (r.errors or r.problems or not all(x.ok for x in r.redraws)
                   or (r.median_ms is not None and r.median_ms > a.max_median_ms) or (s and s.problems))
            print(f"   {r.name:<30} {fmt(r.load_s):>6} {fmt(r.run_s):>6} {r.figures:>4} {r.controls:>5} "
                  f"{len(r.ok_redraws):>7} {fmt(r.median_ms, '.0f'):>9} {fmt(r.median_kernel_ms, '.0f'):>9} "
                  f"{fmt(r.max_ms, '.0f'):>6} {fmt(r.min_text_px):>7} "
                  f"{(s.html_pngs if s else '-'):>9}  {'FAIL' if bad else 'ok'}")
        print(f"   screenshots: {shots}")
    return failed, live, static


if __name__ == "__main__":
    sys.exit(main())
