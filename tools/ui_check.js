// In-page probes of tools/ui_check.py, installed in every page with Playwright's add_init_script as
// `window.uic`. What they read is JupyterLab's own model of the open notebook (window.jupyterapp
// exists because the server runs with --LabApp.expose_app_in_browser), the kernel's messages, and
// what the browser's layout and clock say; the clicks and drags themselves are Playwright's.
window.uic = {
  panel(name) {
    const app = window.jupyterapp;
    if (!app) return null;
    return [...app.shell.widgets('main')].find(w => w.context && w.context.path.endsWith(name)) || null;
  },

  // The notebook as JupyterLab holds it: kernel status, and per code cell its execution count, whether
  // it is running, its error outputs (the model's, so warnings on stderr are not errors), widget views.
  state(name) {
    const panel = this.panel(name);
    if (!panel || !panel.content || !panel.content.model)
      return {ready: false, why: window.jupyterapp ? 'notebook panel not open' : 'window.jupyterapp missing'};
    const ctx = panel.sessionContext;
    const kernel = ctx && ctx.session && ctx.session.kernel;
    const model = panel.content.model, nodes = panel.content.widgets, cells = [];
    for (let i = 0; i < model.cells.length; i++) {
      const c = model.cells.get(i);
      if (c.type !== 'code') continue;
      const src = c.sharedModel.getSource(), errors = [];
      let views = 0;
      for (let j = 0; j < c.outputs.length; j++) {
        const o = c.outputs.get(j);
        if (o.type === 'error') { const js = o.toJSON(); errors.push(`${js.ename}: ${js.evalue}`); }
        if (o.data && o.data['application/vnd.jupyter.widget-view+json']) views += 1;
      }
      const prompt = nodes[i] && nodes[i].node.querySelector('.jp-InputPrompt');
      cells.push({i, empty: src.trim() === '', first: src.split('\n')[0].slice(0, 80), count: c.executionCount,
                  running: prompt ? prompt.textContent.includes('*') : false, errors, views});
    }
    return {ready: true, status: kernel ? kernel.status : (ctx && ctx.hasNoKernel ? 'no kernel' : 'starting'),
            kernelName: kernel ? kernel.name : null, cells};
  },

  // wait_for_function predicates: the notebook open with an idle kernel (or a dialog to answer) ...
  opened(name) {
    if (document.querySelector('.jp-Dialog')) return true;
    const st = this.state(name);
    return st.ready && st.status === 'idle';
  },

  // ... and Run All finished: the kernel was seen busy, is idle, no cell runs or waits to run (unless
  // one failed), unchanged for half a second; or a dialog or a dead kernel ends the wait early.
  runSettled(name) {
    if (document.querySelector('.jp-Dialog')) return true;
    const st = this.state(name);
    if (!st.ready) return false;
    if (['dead', 'restarting', 'autorestarting', 'unknown', 'no kernel'].includes(st.status)) return true;
    const running = st.cells.filter(c => c.running).length;
    const pending = st.cells.filter(c => !c.empty && c.count === null).length;
    const sig = `${st.status} ${running} ${pending}`;
    if (sig !== this.sig) { this.sig = sig; this.since = performance.now(); }
    const hasCode = st.cells.some(c => !c.empty), failed = st.cells.some(c => c.errors.length);
    const done = (this.busySeen || !hasCode) && st.status === 'idle' && !running && (!pending || failed);
    return done && performance.now() - this.since >= 500;
  },

  // Watch the kernel from before Run All: a busy status (so a stored execution count is never taken
  // for a finished run), and errors raised in widget callbacks (comm messages), which JupyterLab shows
  // in its log console, not in the cell.
  watch(name) {
    const panel = this.panel(name);
    if (!panel) return false;
    this.busySeen = false;
    this.callbackErrors = [];
    const hook = (kernel) => {
      if (!kernel) return;
      kernel.statusChanged.connect((_, s) => { if (s === 'busy') this.busySeen = true; });
      kernel.iopubMessage.connect((_, msg) => {
        if (msg.header.msg_type === 'error' && msg.parent_header && msg.parent_header.msg_type === 'comm_msg')
          this.callbackErrors.push(`${msg.content.ename}: ${msg.content.evalue}`);
      });
    };
    hook(panel.sessionContext.session.kernel);
    panel.sessionContext.kernelChanged.connect((_, change) => hook(change.newValue));
    return true;
  },

  // A read-only look into the kernel: a user expression (no output, no execution count, nothing assigned).
  async kernelExpr(name, expr) {
    const fut = this.panel(name).sessionContext.session.kernel.requestExecute(
      {code: '', silent: true, store_history: false, user_expressions: {r: expr}});
    const r = (await fut.done).content.user_expressions.r;
    return r && r.status === 'ok' ? r.data['text/plain'] : null;
  },

  // Interactive figures: widget boxes holding an ipywidgets Image, marked with data-uic-* attributes for
  // Playwright's locators, each with its controls (outermost ones), their kinds and whether a person
  // could move them (a dropdown needs a second option, a slider a range).
  figures(sel) {
    const kinds = [['slider', c => c.querySelector('.noUi-handle')], ['dropdown', '.widget-dropdown'],
      ['togglebuttons', '.widget-toggle-buttons'], ['togglebutton', '.widget-toggle-button'],
      ['checkbox', '.widget-checkbox'], ['radio', '.widget-radio'], ['select', '.widget-select, .widget-select-multiple'],
      ['text', '.widget-text'], ['button', '.widget-button']];
    const kind = c => (kinds.find(([, t]) => typeof t === 'string' ? c.matches(t) : t(c)) || ['other:' + c.className])[0];
    const movable = (c) => {
      const s = c.querySelector('select'); if (s) return s.options.length > 1;
      const h = c.querySelector('.noUi-handle');
      if (h) return h.getAttribute('aria-valuemin') !== h.getAttribute('aria-valuemax');
      if (c.classList.contains('widget-toggle-buttons')) return c.querySelectorAll('button').length > 1;
      return !c.querySelector(':disabled');
    };
    const figs = [];
    document.querySelectorAll('.jp-OutputArea-output img.widget-image').forEach((img) => {
      const box = img.parentElement;
      if (!box || !box.classList.contains('widget-box')) return;
      const k = figs.length;
      box.setAttribute('data-uic-fig', k);
      img.setAttribute('data-uic-img', k);
      const outermost = (el) => { const a = el.parentElement.closest(sel); return !a || !box.contains(a); };
      const ctrls = [...box.querySelectorAll(sel)].filter(outermost);
      ctrls.forEach((c, j) => c.setAttribute('data-uic-ctrl', `${k}-${j}`));
      const cell = box.closest('.jp-Cell');
      figs.push({k, cell: cell ? Number(cell.getAttribute('data-windowed-list-index')) : null,
                 title: (box.querySelector('.widget-html-content')?.textContent || '').trim().slice(0, 60),
                 label: (ctrls[0]?.querySelector('.widget-label')?.textContent || '').trim(),
                 kinds: ctrls.map(kind), movable: ctrls.map(movable),
                 natural: [img.naturalWidth, img.naturalHeight], shown: [img.clientWidth, img.clientHeight]});
    });
    return figs;
  },

  // A control's value as a person reads it.
  value(el) {
    const h = el.querySelector('.noUi-handle');
    if (h) return h.getAttribute('aria-valuenow') || h.getAttribute('aria-valuetext');
    const s = el.querySelector('select'); if (s) return [...s.selectedOptions].map(o => o.value).join(',');
    if (el.classList.contains('widget-toggle-buttons'))
      return [...el.querySelectorAll('.mod-active')].map(b => b.textContent).join(',');
    if (el.classList.contains('widget-toggle-button')) return String(el.classList.contains('mod-active'));
    const i = el.querySelector('input');
    if (i) return (i.type === 'checkbox' || i.type === 'radio')
      ? [...el.querySelectorAll('input')].map(x => x.checked ? 1 : 0).join('') : i.value;
    return el.textContent;
  },

  // The redraw clock, on figure k: the time of the user action (event.timeStamp of the pointerup /
  // change / keydown that commits the move) and the time the image's src changes and the new image loads.
  arm(k) {
    const img = document.querySelector(`img[data-uic-img="${k}"]`);
    if (this.rec) this.rec.cleanup();
    const rec = this.rec = {src0: img.src, action: null, change: null, load: null, src1: null};
    const onEvent = (e) => { if (rec.action === null) rec.action = e.timeStamp; };
    const types = ['pointerup', 'change', 'keydown'];
    types.forEach(t => document.addEventListener(t, onEvent, true));
    const onLoad = () => { if (rec.change !== null && rec.load === null && img.src === rec.src1) rec.load = performance.now(); };
    img.addEventListener('load', onLoad);
    const obs = new MutationObserver(() => {
      if (img.src === rec.src0) return;
      if (rec.change === null) { rec.change = performance.now(); rec.src1 = img.src; }
      if (img.complete && img.naturalWidth > 0) onLoad();
    });
    obs.observe(img, {attributes: true, attributeFilter: ['src']});
    rec.cleanup = () => { obs.disconnect(); img.removeEventListener('load', onLoad);
                          types.forEach(t => document.removeEventListener(t, onEvent, true)); };
    return rec.src0;
  },

  // The bytes behind an image's (blob:) URL, as a digest: a new image must differ from the old one.
  async digest(src) {
    const buf = await (await fetch(src)).arrayBuffer();
    const d = await crypto.subtle.digest('SHA-256', buf);
    return [...new Uint8Array(d)].map(b => b.toString(16).padStart(2, '0')).join('') + ':' + buf.byteLength;
  },

  // What a learner sees of the outputs in the notebook column: each PNG at its own size or shrunk to
  // fit, and each printed table row (three or more lines of one output with columns aligned by two or
  // more spaces) on one line or wrapped; widths from the browser's own layout and font metrics.
  layout() {
    const panel = [...document.querySelectorAll('.jp-NotebookPanel')].find(p => p.offsetParent !== null);
    const images = [...document.querySelectorAll('.jp-OutputArea-output img')].filter(i => i.naturalWidth > 0)
      .map(i => ({natural: i.naturalWidth, shown: i.clientWidth}));
    const ctx = document.createElement('canvas').getContext('2d');
    const wraps = [];
    for (const pre of document.querySelectorAll('.jp-OutputArea-output pre')) {
      const cs = getComputedStyle(pre);
      ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
      const room = pre.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const rows = pre.textContent.split('\n').filter(line => /\S {2,}\S.*\S {2,}\S/.test(line));
      if (rows.length < 3) continue;
      for (const line of rows) {
        const width = ctx.measureText(line).width;
        if (width > room + 1) wraps.push({width: Math.round(width), room: Math.round(room), line: line.slice(0, 70)});
      }
    }
    return {column: panel ? panel.clientWidth : null, images, wraps};
  },
};
