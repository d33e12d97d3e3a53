// Timeline: objects as rows (kind / namespace / name), a mark per change,
// gaps hatched across the rows of the streams they affect; a condition
// (CEL over object, asked of GET api/v1/find) draws the intervals during
// which it held as bars on the rows and dims the other rows. Drawn on a
// canvas, only the rows in view, so that 10,000 objects and 100,000 changes
// stay responsive. Zoom and pan with the mouse or the keyboard.

import { get, pages, follow } from '../api.js';
import { TimelineData, treeRows, firstAtOrAfter, objectKey, foundIntervals, MARK, MARK_NAMES } from '../shape.js';
import { h, ms, fmtTime, relTime, timeEl, hashFor, parseHash, setParams, notice, plural, objectParams, debounce, toRFC3339, streamLabel } from '../util.js';

export const title = 'Timeline';

const ROW = 20;
const HEADER = 30;
const LABEL = 300;
// A condition's intervals: a teal bar, hatched toward an end the journal
// cannot tell (a gap, before the first complete list).
const BAR = 'rgba(0, 137, 123, 0.28)';
const COLORS = { [MARK.ADDED]: '#2e7d32', [MARK.MODIFIED]: '#1565c0', [MARK.DELETED]: '#c62828', [MARK.RELIST]: '#6d6d6d', [MARK.INFERRED]: '#c62828' };

export async function render(root, params, ctx) {
  const scope = { cluster: params.cluster, namespace: params.namespace, resource: params.resource, since: params.since, until: params.until };
  const header = h('div', { class: 'view-head' },
    h('h1', {}, 'Timeline'),
    h('p', { class: 'muted' }, describeScope(scope)));
  const status = h('p', { class: 'status', role: 'status' }, 'Loading records…');
  root.append(header, status);

  const data = new TimelineData();
  const t0 = performance.now();
  let pagesRead = 0;
  const controller = new AbortController();
  let tl = null;
  const cleanup = () => { controller.abort(); if (tl) tl.destroy(); };
  // The first page is drawn at once; later pages are added as they come,
  // redrawing at most every half second, so a large journal never blocks the
  // page while it loads.
  let lastBuild = 0;
  const load = (async () => {
    for await (const page of pages('records', { ...scope, types: 'event,gap', bodies: 'false', limit: 1000 }, controller.signal)) {
      data.add(page.items || []);
      pagesRead++;
      status.textContent = `Loading records… ${plural(data.count, 'change')} of ${plural(data.objects.size, 'object')} so far`;
      if (!tl && data.objects.size) {
        tl = new Timeline(root, data, params);
        lastBuild = performance.now();
      } else if (tl && performance.now() - lastBuild > 500) {
        tl.rebuild();
        lastBuild = performance.now();
      }
      await new Promise((r) => setTimeout(r, 0));
    }
  })();
  try {
    await load;
  } catch (err) {
    if (controller.signal.aborted) return cleanup;
    throw err;
  }
  if (ctx.stale()) return cleanup;
  const loaded = performance.now();
  if (!tl) {
    if (data.gaps.size) tl = new Timeline(root, data, params);
    else {
      status.replaceChildren(notice('info', 'No change recorded in this scope. ', h('a', { href: hashFor('overview', { tz: params.tz }) }, 'See the streams')));
      return cleanup;
    }
  }
  tl.rebuild();
  const built = performance.now();
  if (params.live === '1') tl.follow(scope);
  status.textContent = `${plural(data.count, 'change')} of ${plural(data.objects.size, 'object')}, ${plural([...data.gaps.values()].reduce((n, l) => n + l.length, 0), 'gap')}; loaded in ${((loaded - t0) / 1000).toFixed(2)} s (${plural(pagesRead, 'page')}), laid out and drawn in ${Math.round(built - loaded)} ms.`;
  window.krplyTimeline = tl.api({ loadMs: loaded - t0, layoutMs: built - loaded, pages: pagesRead });
  return cleanup;
}

function describeScope(s) {
  const parts = [];
  parts.push(s.resource ? `resource ${s.resource}` : 'every resource');
  parts.push(s.namespace ? `namespace ${s.namespace}` : 'every namespace');
  if (s.since || s.until) parts.push(`from ${s.since || 'the beginning'} to ${s.until || 'now'}`);
  if (s.cluster) parts.push(`cluster ${s.cluster}`);
  return `Changes to ${parts.join(', ')}. Each row is an object; each mark a change as krply observed it.`;
}

class Timeline {
  constructor(root, data, params) {
    this.data = data;
    this.params = params;
    this.collapsed = new Set((params.collapsed || '').split(',').filter(Boolean));
    this.filter = params.filter || '';
    this.selected = params.sel || '';
    this.from = ms(params.from);
    this.to = ms(params.to);
    this.fitted = Number.isNaN(this.from) || Number.isNaN(this.to);
    this.scope = { cluster: params.cluster, namespace: params.namespace, resource: params.resource, since: params.since, until: params.until };
    this.cond = params.cond || '';
    this.matches = null; // objectKey -> intervals, while a condition is shown

    this.filterInput = h('input', { type: 'search', placeholder: 'filter objects (press /)', value: this.filter, 'aria-label': 'Filter objects', oninput: () => this.filterSoon() });
    this.filterSoon = debounce(() => { this.filter = this.filterInput.value; this.relayout(); this.saveState(); }, 120);
    const btn = (label, title, fn) => h('button', { type: 'button', title, onclick: fn }, label);
    this.toolbar = h('div', { class: 'toolbar' }, this.filterInput,
      btn('−', 'Zoom out (-)', () => this.zoom(2)), btn('+', 'Zoom in (+)', () => this.zoom(0.5)),
      btn('◀', 'Pan earlier (←)', () => this.pan(-0.25)), btn('▶', 'Pan later (→)', () => this.pan(0.25)),
      btn('Fit', 'Show all recorded time (0)', () => this.fit()),
      h('label', { class: 'follow' }, h('input', { type: 'checkbox', checked: params.live === '1', onchange: (e) => { location.hash = hashFor('timeline', { ...parseHash().params, live: e.target.checked ? '1' : '' }); } }), ' follow new records'),
      legend());
    // The condition: find's expressions, asked on Enter or the button.
    this.condInput = h('input', { type: 'text', id: 'cond-input', class: 'cond-input', value: this.cond, spellcheck: 'false', autocomplete: 'off',
      placeholder: 'condition, e.g. object.spec.replicas < 2', 'aria-label': 'Condition: a CEL expression over object', 'aria-describedby': 'cond-status' });
    this.condStatus = h('div', { id: 'cond-status', class: 'cond-status small', 'aria-live': 'polite' });
    this.condForm = h('form', { class: 'toolbar cond', dataset: { state: 'off' }, onsubmit: (e) => { e.preventDefault(); this.setCondition(this.condInput.value.trim()); } },
      h('label', { for: 'cond-input' }, 'Condition'), this.condInput,
      h('button', { type: 'submit', title: 'Find when the condition held (Enter)' }, 'Find'),
      h('button', { type: 'button', title: 'Show every object again', onclick: () => { this.condInput.value = ''; this.setCondition(''); } }, 'Clear'),
      h('span', { class: 'muted small' }, h('span', { class: 'cond-chip', 'aria-hidden': 'true' }), ' true (hatched: an end the journal cannot tell); objects never true are dimmed'),
      this.condStatus);
    this.live = h('span', { class: 'muted small live', role: 'status' });
    this.range = h('p', { class: 'muted small range' });
    this.canvas = h('canvas', { tabindex: '0', role: 'application', 'aria-roledescription': 'timeline', 'aria-label': 'Timeline of changes. Arrow keys up and down choose an object, left and right pan, plus and minus zoom, Enter opens the object or folds a group.' });
    this.spacer = h('div', { class: 'tl-spacer' }, this.canvas);
    this.scroller = h('div', { class: 'tl-scroll' }, this.spacer);
    this.tip = h('div', { class: 'tl-tip', role: 'tooltip', hidden: true });
    this.details = h('section', { class: 'tl-details', 'aria-live': 'polite' });
    this.gapList = h('section', { class: 'tl-gaps' });
    this.el = h('div', { class: 'timeline' }, this.toolbar, this.condForm, this.range, this.live, h('div', { class: 'tl-frame' }, this.scroller, this.tip), this.details, this.gapList);
    root.append(this.el);
    this.hatch = hatchPattern(this.canvas.getContext('2d'));
    this.condHatch = hatchPattern(this.canvas.getContext('2d'), 'rgba(0, 137, 123, 0.12)', '#00796b');
    this.bind();
    this.rebuild();
    this.resizeObs = new ResizeObserver(() => this.resize());
    this.resizeObs.observe(this.scroller);
    if (this.cond) this.setCondition(this.cond);
  }

  // setCondition asks find when expr held over the view's scope and window
  // and draws the answer; an empty expr clears it. The expression goes into
  // the URL (cond), so that a link shows the same. With refresh (new
  // records arrived while following), the bars shown stay until the new
  // answer replaces them.
  async setCondition(expr, { refresh = false } = {}) {
    if (expr !== this.cond) {
      this.cond = expr;
      this.saveState();
    }
    if (this.condAbort) this.condAbort.abort();
    clearTimeout(this.condSoon);
    this.condSoon = 0;
    if (!refresh || !expr) {
      this.matches = null;
      this.found = null;
    }
    if (!expr) {
      this.condInFlight = false;
      this.condStatus.replaceChildren();
      this.condForm.dataset.state = 'off';
      this.renderDetails();
      this.draw();
      return;
    }
    const ac = new AbortController();
    this.condAbort = ac;
    if (!refresh) {
      this.condForm.dataset.state = 'loading';
      this.condStatus.replaceChildren('Asking find…');
    }
    const started = performance.now();
    this.condDirty = false;
    this.condInFlight = true;
    try {
      const found = await get('find', { ...this.scope, expr }, ac.signal);
      if (ac.signal.aborted) return;
      this.condTook = performance.now() - started;
      this.found = found;
      this.matches = foundIntervals(found);
      this.condForm.dataset.answers = String(Number(this.condForm.dataset.answers || 0) + 1);
      this.condStatus.replaceChildren(...this.condSummary());
      this.condForm.dataset.state = 'ready';
    } catch (err) {
      if (ac.signal.aborted) return;
      this.matches = null;
      this.found = null;
      // The server's words: a compile error names the line, the column
      // and a hint.
      const what = err.param === 'expr' ? 'The condition does not compile: ' : 'find failed: ';
      this.condStatus.replaceChildren(h('span', { class: 'cond-error', role: 'alert' }, h('strong', {}, what), err.message || String(err)));
      this.condForm.dataset.state = 'error';
    }
    this.condInFlight = false;
    if (this.condDirty) this.condStale();
    this.renderDetails();
    this.draw();
  }

  condSummary() {
    const f = this.found;
    let intervals = 0;
    let unknown = 0;
    for (const list of this.matches.values()) {
      intervals += list.length;
      unknown += list.filter((iv) => iv.startUnknown || iv.endUnknown).length;
    }
    const shown = this.objects.filter((o) => this.matches.has(objectKey(o))).length;
    const out = [h('span', { class: 'cond-summary' },
      `${plural(this.matches.size, 'object')} matched (${shown} of the ${plural(this.objects.length, 'row')} here), ${plural(intervals, 'interval')}`,
      unknown ? `, ${unknown} with an end unknown` : '',
      `; ${plural(f.evaluated || 0, 'version')} evaluated of ${(f.versions || 0).toLocaleString('en')} read. The other rows are dimmed.`)];
    const notes = [...(f.warnings || []), ...(f.missing || []).map((m) => `${m.streamID ? streamLabel(m.streamID) : 'a part of the scope'} not searched: ${m.reason}`)];
    if (notes.length) out.push(h('ul', { class: 'cond-warnings' }, notes.map((w) => h('li', {}, w))));
    return out;
  }

  // dimmed says whether a row is an object the condition was never true of.
  dimmed(row) { return !!this.matches && row.type === 'object' && !this.matches.has(objectKey(row.object)); }

  // follow appends the records the change feed (GET api/v1/watch) delivers
  // after the last one loaded, so the timeline grows as the journal does.
  follow(scope) {
    this.feed = new AbortController();
    const params = { ...scope, types: 'event,gap', bodies: 'false' };
    follow(params, this.data.lastSeq, (rec) => {
      this.data.add([rec]);
      this.liveState(`following new records; ${plural(this.data.count, 'change')} now`);
      if (!this.liveSoon) this.liveSoon = setTimeout(() => { this.liveSoon = 0; this.rebuild(); }, 200);
      if (this.cond) this.condStale();
    }, (state) => this.liveState(state), this.feed.signal);
  }

  // condStale asks the condition again after new records arrived: find
  // reads the whole scope, so at most one answer is awaited at a time, and
  // the next is asked no sooner than 2 s, or four times the last answer's
  // time, after the records that made it stale.
  condStale() {
    this.condDirty = true;
    // An answer awaited asks again when it comes, if it is stale.
    if (this.condSoon || this.condInFlight) return;
    const wait = Math.max(2000, 4 * (this.condTook || 0));
    this.condSoon = setTimeout(() => {
      this.condSoon = 0;
      if (this.cond && !this.condInFlight && this.condForm.dataset.state === 'ready') this.setCondition(this.cond, { refresh: true });
    }, wait);
  }

  liveState(text) { this.live.textContent = text ? `Live: ${text}` : ''; }

  destroy() {
    if (this.feed) this.feed.abort();
    clearTimeout(this.liveSoon);
    // A view left behind changes nothing: not the next view's URL, not its canvas.
    if (this.saveSoon) this.saveSoon.cancel();
    if (this.filterSoon) this.filterSoon.cancel();
    if (this.condAbort) this.condAbort.abort();
    clearTimeout(this.condSoon);
    if (this.frame) cancelAnimationFrame(this.frame);
    this.resizeObs.disconnect();
    window.removeEventListener('keydown', this.onSlash);
    if (window.krplyTimeline && window.krplyTimeline.owner === this) delete window.krplyTimeline;
  }

  rebuild() {
    this.objects = this.data.build();
    if (this.fitted) this.fit(false);
    this.relayout();
  }

  relayout() {
    this.rows = treeRows(this.objects, { filter: this.filter, collapsed: this.collapsed });
    this.spacer.style.height = `${HEADER + this.rows.length * ROW + 4}px`;
    if (this.matches) this.condStatus.replaceChildren(...this.condSummary());
    this.renderGaps();
    this.renderDetails();
    this.draw();
  }

  fit(draw = true) {
    const min = this.data.min;
    const max = Math.max(this.data.max, Date.now());
    if (!Number.isFinite(min)) return;
    const pad = Math.max((max - min) * 0.03, 1000);
    this.from = min - pad;
    this.to = max + pad;
    this.fitted = true;
    if (draw) { this.draw(); this.saveState(); }
  }

  zoom(factor, at) {
    const c = at === undefined ? (this.from + this.to) / 2 : at;
    const w = Math.max((this.to - this.from) * factor, 50);
    const k = (c - this.from) / (this.to - this.from);
    this.from = c - w * k;
    this.to = this.from + w;
    this.fitted = false;
    this.draw();
    this.saveState();
  }

  pan(fraction) {
    const d = (this.to - this.from) * fraction;
    this.from += d;
    this.to += d;
    this.fitted = false;
    this.draw();
    this.saveState();
  }

  saveState() {
    this.saveSoon = this.saveSoon || debounce(() => setParams({
      filter: this.filter,
      cond: this.cond,
      from: this.fitted ? '' : toRFC3339(this.from),
      to: this.fitted ? '' : toRFC3339(this.to),
      sel: this.selected,
      collapsed: [...this.collapsed].join(','),
    }), 250);
    this.saveSoon();
  }

  width() { return this.scroller.clientWidth; }
  xOf(t) { return LABEL + ((t - this.from) / (this.to - this.from)) * (this.width() - LABEL - 8); }
  tOf(x) { return this.from + ((x - LABEL) / (this.width() - LABEL - 8)) * (this.to - this.from); }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = this.scroller.clientWidth;
    const hgt = this.scroller.clientHeight;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(hgt * dpr);
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${hgt}px`;
    this.draw();
  }

  draw() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.paint(); });
  }

  paint() {
    const t0 = performance.now();
    const ctx = this.canvas.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    const W = this.scroller.clientWidth;
    const H = this.scroller.clientHeight;
    const top = this.scroller.scrollTop;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    const first = Math.max(0, Math.floor(top / ROW));
    const last = Math.min(this.rows.length, Math.ceil((top + H - HEADER) / ROW) + 1);
    const right = W - 8;
    let marks = 0;
    for (let i = first; i < last; i++) {
      const row = this.rows[i];
      const y = HEADER + i * ROW - top;
      if (i % 2) { ctx.fillStyle = '#f6f7f9'; ctx.fillRect(0, y, W, ROW); }
      if (row.key === this.selected) { ctx.fillStyle = '#fff3c4'; ctx.fillRect(0, y, W, ROW); }
      // Gaps: hatched across the row, from the last evidence before them to the relist.
      for (const g of row.gaps) {
        if (g.to < this.from || g.from > this.to) continue;
        const x0 = Math.max(LABEL, this.xOf(g.from));
        const x1 = Math.min(right, this.xOf(g.to));
        ctx.fillStyle = this.hatch;
        ctx.fillRect(x0, y + 1, Math.max(x1 - x0, 2), ROW - 2);
      }
      const dim = this.dimmed(row);
      if (this.matches && row.type === 'object') this.paintIntervals(ctx, this.matches.get(objectKey(row.object)), y, right);
      if (dim) ctx.globalAlpha = 0.3;
      if (row.type === 'object') marks += this.paintMarks(ctx, row.object, y, right);
      ctx.globalAlpha = 1;
      // The label column, drawn last so that marks never cover it.
      ctx.fillStyle = row.key === this.selected ? '#fff3c4' : i % 2 ? '#f6f7f9' : '#ffffff';
      ctx.fillRect(0, y, LABEL, ROW);
      const x = 8 + row.depth * 16;
      if (row.type === 'object') {
        ctx.fillStyle = dim ? '#c4c8cf' : row.object.alive ? '#1b1f24' : '#8a8f98';
        ctx.fillText(clip(ctx, row.label + (row.object.alive ? '' : row.object.m[row.object.m.length - 1] === MARK.INFERRED ? '  (deleted, inferred)' : '  (deleted)'), LABEL - x - 8), x, y + ROW / 2);
      } else {
        ctx.fillStyle = '#1b1f24';
        ctx.font = 'bold 12px system-ui, sans-serif';
        const open = !this.collapsed.has(row.key);
        ctx.fillText(clip(ctx, `${open ? '▾' : '▸'} ${row.label} (${row.count})`, LABEL - x - 8), x, y + ROW / 2);
        ctx.font = '12px system-ui, sans-serif';
      }
    }
    ctx.strokeStyle = '#d0d4da';
    ctx.beginPath();
    ctx.moveTo(LABEL + 0.5, HEADER);
    ctx.lineTo(LABEL + 0.5, H);
    ctx.stroke();
    this.paintAxis(ctx, W);
    this.range.replaceChildren('Showing ', timeEl(toRFC3339(this.from)), ' to ', timeEl(toRFC3339(this.to)), ` — ${plural(this.rows.filter((r) => r.type === 'object').length, 'object')} of ${this.objects.length}.`);
    this.lastPaint = { ms: performance.now() - t0, marks, rows: last - first };
  }

  // paintIntervals draws the intervals during which the condition held: a
  // bar from its start to its end (to the row's end while it is open),
  // hatched over its last pixels toward an end that is unknown.
  paintIntervals(ctx, list, y, right) {
    for (const iv of list || []) {
      const open = Number.isNaN(iv.to);
      if ((!open && iv.to < this.from) || iv.from > this.to) continue;
      const x0 = Math.max(LABEL, this.xOf(iv.from));
      const x1 = open ? right : Math.min(right, this.xOf(iv.to));
      const w = Math.max(x1 - x0, 2);
      const stub = Math.min(16, w / 2);
      const hatchStart = iv.startUnknown && this.xOf(iv.from) >= LABEL ? stub : 0;
      const hatchEnd = iv.endUnknown && !open && this.xOf(iv.to) <= right ? stub : 0;
      ctx.fillStyle = BAR;
      ctx.fillRect(x0 + hatchStart, y + 4, w - hatchStart - hatchEnd, ROW - 8);
      ctx.fillStyle = this.condHatch;
      if (hatchStart) ctx.fillRect(x0, y + 4, hatchStart, ROW - 8);
      if (hatchEnd) ctx.fillRect(x0 + w - hatchEnd, y + 4, hatchEnd, ROW - 8);
    }
  }

  paintMarks(ctx, o, y, right) {
    const i0 = firstAtOrAfter(o.t, this.from);
    const i1 = firstAtOrAfter(o.t, this.to + 1e-3);
    const cy = y + ROW / 2;
    let lastX = -1;
    let lastM = -1;
    let n = 0;
    for (let i = i0; i < i1; i++) {
      const x = Math.round(this.xOf(o.t[i]));
      const m = o.m[i];
      if (x === lastX && m === lastM) continue; // same pixel, same kind: drawn once
      lastX = x;
      lastM = m;
      if (x < LABEL || x > right) continue;
      drawMark(ctx, m, x, cy);
      n++;
    }
    return n;
  }

  paintAxis(ctx, W) {
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, W, HEADER);
    ctx.strokeStyle = '#d0d4da';
    ctx.beginPath();
    ctx.moveTo(0, HEADER - 0.5);
    ctx.lineTo(W, HEADER - 0.5);
    ctx.stroke();
    ctx.fillStyle = '#4a5160';
    ctx.font = '11px system-ui, sans-serif';
    const span = this.to - this.from;
    const step = niceStep(span / Math.max(2, Math.floor((W - LABEL) / 150)));
    const start = Math.ceil(this.from / step) * step;
    for (let t = start; t <= this.to; t += step) {
      const x = this.xOf(t);
      ctx.strokeStyle = '#e5e8ec';
      ctx.beginPath();
      ctx.moveTo(x + 0.5, HEADER - 6);
      ctx.lineTo(x + 0.5, HEADER);
      ctx.stroke();
      ctx.fillText(fmtTime(t, { date: step >= 86400e3, millis: step < 1000 }), x - 30, HEADER / 2);
    }
    // "Now": time after it is not yet observed by anyone.
    const nx = this.xOf(Date.now());
    if (nx > LABEL && nx < W) {
      ctx.strokeStyle = '#8e24aa';
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(nx + 0.5, HEADER);
      ctx.lineTo(nx + 0.5, this.scroller.clientHeight);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, LABEL, HEADER - 1);
    ctx.fillStyle = '#1b1f24';
    ctx.font = 'bold 12px system-ui, sans-serif';
    ctx.fillText('kind / namespace / name', 8, HEADER / 2);
    ctx.font = '12px system-ui, sans-serif';
  }

  rowAt(clientY) {
    const r = this.canvas.getBoundingClientRect();
    const y = clientY - r.top;
    if (y < HEADER) return -1;
    const i = Math.floor((y - HEADER + this.scroller.scrollTop) / ROW);
    return i < this.rows.length ? i : -1;
  }

  // hit finds what is under a point: a row, and on it a mark or a gap.
  hit(clientX, clientY) {
    const i = this.rowAt(clientY);
    if (i < 0) return null;
    const row = this.rows[i];
    const x = clientX - this.canvas.getBoundingClientRect().left;
    if (x < LABEL) return { row, index: i, label: true };
    if (row.type === 'object') {
      const o = row.object;
      const t = this.tOf(x);
      const tol = ((this.to - this.from) / (this.width() - LABEL)) * 5;
      let best = -1;
      const j = firstAtOrAfter(o.t, t - tol);
      for (let k = j; k < o.t.length && o.t[k] <= t + tol; k++) if (best < 0 || Math.abs(o.t[k] - t) < Math.abs(o.t[best] - t)) best = k;
      if (best >= 0) return { row, index: i, mark: best };
    }
    const t = this.tOf(x);
    if (this.matches && row.type === 'object') {
      const interval = (this.matches.get(objectKey(row.object)) || []).find((iv) => iv.from <= t && (Number.isNaN(iv.to) || t < iv.to));
      if (interval) return { row, index: i, interval, t };
    }
    const gap = row.gaps.find((g) => g.from <= t && t <= g.to);
    return { row, index: i, gap, t };
  }

  bind() {
    this.scroller.addEventListener('scroll', () => { this.tip.hidden = true; this.draw(); });
    this.canvas.addEventListener('wheel', (e) => {
      if (e.ctrlKey || e.altKey) {
        e.preventDefault();
        const x = e.clientX - this.canvas.getBoundingClientRect().left;
        this.zoom(e.deltaY > 0 ? 1.25 : 0.8, x > LABEL ? this.tOf(x) : undefined);
      } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        e.preventDefault();
        this.pan((e.deltaX || e.deltaY) / 1000);
      }
    }, { passive: false });
    let drag = null;
    this.canvas.addEventListener('pointerdown', (e) => {
      const x = e.clientX - this.canvas.getBoundingClientRect().left;
      if (x > LABEL) { drag = { x: e.clientX, from: this.from, to: this.to, moved: false }; this.canvas.setPointerCapture(e.pointerId); }
    });
    this.canvas.addEventListener('pointermove', (e) => {
      if (drag) {
        const dx = e.clientX - drag.x;
        if (Math.abs(dx) > 3) drag.moved = true;
        const dt = (dx / (this.width() - LABEL)) * (drag.to - drag.from);
        this.from = drag.from - dt;
        this.to = drag.to - dt;
        this.fitted = false;
        this.draw();
        return;
      }
      this.hover(e);
    });
    this.canvas.addEventListener('pointerup', (e) => {
      const d = drag;
      drag = null;
      if (d && d.moved) { this.saveState(); return; }
      this.click(e);
    });
    this.canvas.addEventListener('pointerleave', () => { this.tip.hidden = true; });
    this.canvas.addEventListener('keydown', (e) => this.key(e));
    this.onSlash = (e) => {
      if (e.key === '/' && !e.target.closest('input, textarea, select')) { e.preventDefault(); this.filterInput.focus(); }
    };
    window.addEventListener('keydown', this.onSlash);
  }

  hover(e) {
    const hit = this.hit(e.clientX, e.clientY);
    if (!hit || hit.label || (hit.mark === undefined && !hit.gap && !hit.interval)) { this.tip.hidden = true; return; }
    const lines = [];
    if (hit.mark !== undefined) {
      const o = hit.row.object;
      const t = o.t[hit.mark];
      lines.push(h('strong', {}, `${o.kind} ${o.namespace ? o.namespace + '/' : ''}${o.name}`), h('br'),
        `${MARK_NAMES[o.m[hit.mark]]}, observed ${fmtTime(t)} (${relTime(t)})`, h('br'), h('span', { class: 'muted' }, 'click to open the object at this time'));
    } else if (hit.interval) {
      const iv = hit.interval;
      lines.push(h('strong', {}, 'Condition true'), h('br'), `${fmtTime(iv.from)} → ${Number.isNaN(iv.to) ? 'still true at the last evidence' : fmtTime(iv.to)}`,
        iv.startUnknown && [h('br'), `start unknown: ${iv.startUnknown}`], iv.endUnknown && [h('br'), `end unknown: ${iv.endUnknown}`]);
    } else {
      const g = hit.gap;
      lines.push(h('strong', {}, 'Gap'), ` in ${g.streamID}`, h('br'), `${fmtTime(g.from)} → ${fmtTime(g.to)}`, h('br'), g.reason, h('br'), h('span', { class: 'muted' }, 'changes in it may be missing; deletions are inferred by the relist'));
    }
    this.tip.replaceChildren(...lines);
    this.tip.hidden = false;
    const fr = this.scroller.getBoundingClientRect();
    this.tip.style.left = `${Math.min(e.clientX - fr.left + 12, fr.width - 320)}px`;
    this.tip.style.top = `${e.clientY - fr.top + 12}px`;
  }

  click(e) {
    const hit = this.hit(e.clientX, e.clientY);
    if (!hit) return;
    this.select(hit.index);
    if (hit.row.type !== 'object') { if (hit.label) this.toggle(hit.row); return; }
    if (hit.mark !== undefined || hit.label) this.open(hit.row.object, hit.mark !== undefined ? hit.row.object.t[hit.mark] : undefined);
  }

  open(o, at) {
    const p = { ...objectParams(o, o.clusterID), tz: this.params.tz };
    if (at !== undefined) p.at = toRFC3339(at);
    location.hash = hashFor('object', p);
  }

  toggle(row) {
    if (this.collapsed.has(row.key)) this.collapsed.delete(row.key); else this.collapsed.add(row.key);
    this.relayout();
    this.saveState();
  }

  select(i) {
    if (i < 0 || i >= this.rows.length) return;
    this.selected = this.rows[i].key;
    const y = i * ROW;
    const visible = this.scroller.clientHeight - HEADER;
    if (y < this.scroller.scrollTop) this.scroller.scrollTop = y;
    else if (y + ROW > this.scroller.scrollTop + visible) this.scroller.scrollTop = y + ROW - visible;
    this.renderDetails();
    this.draw();
    this.saveState();
  }

  key(e) {
    const i = this.rows.findIndex((r) => r.key === this.selected);
    const page = Math.max(1, Math.floor((this.scroller.clientHeight - HEADER) / ROW) - 1);
    const act = {
      ArrowDown: () => this.select(Math.min(this.rows.length - 1, i + 1)),
      ArrowUp: () => this.select(Math.max(0, i - 1)),
      PageDown: () => this.select(Math.min(this.rows.length - 1, i + page)),
      PageUp: () => this.select(Math.max(0, i - page)),
      Home: () => this.select(0),
      End: () => this.select(this.rows.length - 1),
      ArrowLeft: () => this.pan(-0.2),
      ArrowRight: () => this.pan(0.2),
      '+': () => this.zoom(0.5),
      '=': () => this.zoom(0.5),
      '-': () => this.zoom(2),
      0: () => this.fit(),
      Enter: () => { const r = this.rows[i]; if (r) { if (r.type === 'object') this.open(r.object); else this.toggle(r); } },
    }[e.key];
    if (act) { e.preventDefault(); act(); }
  }

  renderDetails() {
    const row = this.rows.find((r) => r.key === this.selected);
    if (!row) { this.details.replaceChildren(h('p', { class: 'muted' }, 'Choose an object (click, or focus the timeline and use the arrow keys) to list its changes here.')); return; }
    if (row.type !== 'object') { this.details.replaceChildren(h('p', {}, h('strong', {}, row.label), ` — ${plural(row.count, 'object')}. Enter folds or unfolds it.`)); return; }
    const o = row.object;
    const items = [];
    const from = Math.max(0, o.n - 50);
    for (let k = o.t.length - 1; k >= from; k--) {
      items.push(h('li', { class: `mark-${o.m[k]}` }, timeEl(toRFC3339(o.t[k])), ` ${MARK_NAMES[o.m[k]]}`));
    }
    this.details.replaceChildren(
      h('h2', {}, `${o.kind} ${o.namespace ? o.namespace + '/' : ''}${o.name}`, ' ', h('a', { href: hashFor('object', { ...objectParams(o, o.clusterID), tz: this.params.tz }) }, 'open history')),
      h('p', { class: 'muted' }, `${plural(o.n, 'change')}${o.alive ? '' : o.m[o.m.length - 1] === MARK.INFERRED ? '; deleted at the end (inferred by a relist, no watch DELETED event)' : '; deleted at the end (a watch DELETED event)'}${o.gaps.length ? `; ${plural(o.gaps.length, 'gap')} in its streams` : ''}${o.n > 50 ? '; the latest 50:' : ':'}`),
      this.renderIntervals(o),
      h('ol', { class: 'marks', reversed: true }, items));
  }

  // renderIntervals lists when the condition held for an object, each
  // unknown end said in words, its reason in its title.
  renderIntervals(o) {
    if (!this.matches) return null;
    const list = this.matches.get(objectKey(o));
    if (!list) return h('p', { class: 'cond-intervals muted' }, 'The condition was never true of it in this window (as far as the journal tells).');
    const end = (label, reason) => reason && h('span', { class: 'unknown-end', title: reason }, ` (${label} unknown: ${reason})`);
    return h('div', { class: 'cond-intervals' }, h('p', {}, `The condition was true ${plural(list.length, 'time')}:`),
      h('ul', {}, list.map((iv) => h('li', {}, timeEl(toRFC3339(iv.from)), end('start', iv.startUnknown), ' → ',
        Number.isNaN(iv.to) ? 'still true' : timeEl(toRFC3339(iv.to)), end('end', iv.endUnknown)))));
  }

  renderGaps() {
    const all = [];
    for (const list of this.data.gaps.values()) all.push(...list);
    if (!all.length) { this.gapList.replaceChildren(h('p', { class: 'muted' }, 'No gap: every stream of this scope kept its continuity while recording.')); return; }
    all.sort((a, b) => a.from - b.from);
    this.gapList.replaceChildren(h('h2', {}, `Gaps (${all.length})`),
      h('ul', {}, all.map((g) => h('li', { class: 'gap-item', dataset: { stream: g.streamID } }, h('span', { class: 'hatch-chip', 'aria-hidden': 'true' }), ' ', h('code', { title: g.streamID }, streamLabel(g.streamID)), ': ', timeEl(toRFC3339(g.from)), ' → ', timeEl(toRFC3339(g.to)), ` — ${g.reason}`))));
  }

  // api is what the browser tests and screenshots read.
  api(timings) {
    const self = this;
    return {
      owner: this,
      timings,
      get paint() { return self.lastPaint; },
      objects: this.objects.length,
      changes: this.data.count,
      xOf: (iso) => this.xOf(ms(iso)),
      rowIndex: (kind, namespace, name) => this.rows.findIndex((r) => r.type === 'object' && r.object.kind === kind && r.object.namespace === namespace && r.object.name === name),
      rowY: (i) => HEADER + i * ROW - this.scroller.scrollTop + ROW / 2,
      gaps: () => [...this.data.gaps.values()].flat().map((g) => ({ ...g, from: toRFC3339(g.from), to: toRFC3339(g.to) })),
      dimmed: (i) => this.dimmed(this.rows[i]),
    };
  }
}

function drawMark(ctx, m, x, cy) {
  ctx.fillStyle = COLORS[m];
  ctx.strokeStyle = COLORS[m];
  ctx.lineWidth = 1.5;
  switch (m) {
    case MARK.ADDED: ctx.beginPath(); ctx.moveTo(x, cy - 5); ctx.lineTo(x + 5, cy + 4); ctx.lineTo(x - 5, cy + 4); ctx.closePath(); ctx.fill(); break;
    case MARK.MODIFIED: ctx.beginPath(); ctx.arc(x, cy, 4, 0, Math.PI * 2); ctx.fill(); break;
    case MARK.DELETED: ctx.beginPath(); ctx.moveTo(x - 4, cy - 4); ctx.lineTo(x + 4, cy + 4); ctx.moveTo(x + 4, cy - 4); ctx.lineTo(x - 4, cy + 4); ctx.lineWidth = 2.5; ctx.stroke(); break;
    case MARK.RELIST: ctx.beginPath(); ctx.moveTo(x, cy - 5); ctx.lineTo(x + 5, cy); ctx.lineTo(x, cy + 5); ctx.lineTo(x - 5, cy); ctx.closePath(); ctx.fillStyle = '#ffffff'; ctx.fill(); ctx.stroke(); break;
    case MARK.INFERRED: ctx.setLineDash([2, 2]); ctx.strokeRect(x - 4.5, cy - 4.5, 9, 9); ctx.setLineDash([]); ctx.beginPath(); ctx.moveTo(x - 2.5, cy - 2.5); ctx.lineTo(x + 2.5, cy + 2.5); ctx.moveTo(x + 2.5, cy - 2.5); ctx.lineTo(x - 2.5, cy + 2.5); ctx.stroke(); break;
    default: break;
  }
  ctx.lineWidth = 1;
}

function legend() {
  const item = (m, text) => {
    const c = h('canvas', { width: 14, height: 14, 'aria-hidden': 'true' });
    const ctx = c.getContext('2d');
    drawMark(ctx, m, 7, 7);
    return h('li', {}, c, ' ', text);
  };
  const gap = h('li', {}, h('span', { class: 'hatch-chip', 'aria-hidden': 'true' }), ' gap (changes may be missing)');
  const now = h('li', {}, h('span', { class: 'now-chip', 'aria-hidden': 'true' }), ' now');
  return h('ul', { class: 'legend inline', 'aria-label': 'Legend' },
    item(MARK.ADDED, 'added'), item(MARK.MODIFIED, 'modified'), item(MARK.DELETED, 'deleted'),
    item(MARK.RELIST, 'seen by a relist (not a write)'), item(MARK.INFERRED, 'inferred deletion'), gap, now);
}

function hatchPattern(ctx, bg = 'rgba(198, 40, 40, 0.12)', fg = 'rgba(198, 40, 40, 0.75)') {
  const c = document.createElement('canvas');
  c.width = 8;
  c.height = 8;
  const p = c.getContext('2d');
  p.fillStyle = bg;
  p.fillRect(0, 0, 8, 8);
  p.strokeStyle = fg;
  p.lineWidth = 2;
  p.beginPath();
  p.moveTo(-2, 10); p.lineTo(10, -2);
  p.moveTo(-2, 2); p.lineTo(2, -2);
  p.moveTo(6, 10); p.lineTo(10, 6);
  p.stroke();
  return ctx.createPattern(c, 'repeat');
}

function clip(ctx, text, w) {
  if (ctx.measureText(text).width <= w) return text;
  let s = text;
  while (s.length > 1 && ctx.measureText(s + '…').width > w) s = s.slice(0, -1);
  return s + '…';
}

function niceStep(raw) {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800].map((s) => s * 1000);
  for (const s of steps) if (s >= raw) return s;
  return steps[steps.length - 1];
}
