// Overview: clusters and streams with their state, and a coverage bar per
// stream over time.

import { all } from '../api.js';
import { coverageSegments, SEG } from '../shape.js';
import { h, svg, ms, timeEl, fmtTime, hashFor, notice, streamLabel, parseStreamID, plural, relTime, span } from '../util.js';

export const title = 'Overview';

const SEG_LABEL = {
  [SEG.COVERED]: 'covered',
  [SEG.GAP]: 'gap (hatched): changes may be missing',
  [SEG.UNAVAILABLE]: 'unavailable (hatched): the stream could not be read',
  [SEG.UNOBSERVED]: 'not yet observed: no evidence of continuity',
  [SEG.BEFORE]: 'before recording began',
};

export async function render(root, params, ctx) {
  const clusters = await all('clusters');
  if (ctx.stale()) return;
  root.append(h('h1', {}, 'Overview'));
  if (!clusters.length) {
    root.append(notice('info', 'The journal records no cluster yet.'));
    return;
  }
  root.append(legend());
  for (const c of clusters) {
    if (params.cluster && c.clusterID !== params.cluster) continue;
    const [streams, timeline] = await Promise.all([
      all('streams', { cluster: c.clusterID }),
      all('records', { cluster: c.clusterID, types: 'baseline,gap,coverage_change', bodies: 'false', limit: 1000 }),
    ]);
    if (ctx.stale()) return;
    root.append(clusterSection(c, streams, timeline, params));
  }
}

function legend() {
  const item = (kind, text) => h('li', {}, svg('svg', { width: 28, height: 12, 'aria-hidden': 'true', class: 'swatch' }, svg('rect', { width: 28, height: 12, class: `seg seg-${kind}` })), ' ', text);
  return h('ul', { class: 'legend', 'aria-label': 'Legend of the coverage bars' },
    item(SEG.COVERED, 'covered'), item(SEG.GAP, 'gap'), item(SEG.UNAVAILABLE, 'unavailable (403, resource removed)'),
    item(SEG.UNOBSERVED, 'not yet observed'), item(SEG.BEFORE, 'before recording'),
    h('li', {}, svg('svg', { width: 12, height: 12, 'aria-hidden': 'true' }, svg('path', { d: 'M6 0 L6 12', class: 'baseline-mark' })), ' complete baseline (a list)'),
    h('li', {}, h('span', { class: 'legend-mark seg-mark-gap', 'aria-hidden': 'true' }), ' marks a gap, an unavailable period or a not-yet-observed stretch, however short'));
}

function clusterSection(c, streams, timeline, params) {
  const now = Date.now();
  let start = ms(c.firstObservedAt);
  for (const s of streams) {
    const f = ms(s.status && s.status.firstObservedAt);
    if (!Number.isNaN(f) && (Number.isNaN(start) || f < start)) start = f;
  }
  if (Number.isNaN(start)) start = now - 3600e3;
  const end = Math.max(now, ms(c.lastObservedAt) || now);
  start -= (end - start) * 0.02;
  const byStream = new Map();
  for (const r of timeline) {
    if (!byStream.has(r.streamID)) byStream.set(r.streamID, []);
    byStream.get(r.streamID).push(r);
  }
  const sec = h('section', { class: 'cluster', 'aria-label': `Cluster ${c.clusterID}` },
    h('h2', {}, 'Cluster ', h('code', {}, c.clusterID)),
    h('p', { class: 'muted' }, `${plural(c.streams || streams.length, 'stream')}, ${plural(c.records || 0, 'record')}; recorded from `, timeEl(c.firstObservedAt), ' to ', timeEl(c.lastObservedAt), ` (${span(ms(c.firstObservedAt), ms(c.lastObservedAt))}).`));
  const table = h('table', { class: 'streams' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Stream'), h('th', { scope: 'col' }, 'State'), h('th', { scope: 'col', class: 'num' }, 'Records'),
      h('th', { scope: 'col', class: 'num' }, 'Gaps'), h('th', { scope: 'col' }, 'Covered now'),
      h('th', { scope: 'col', class: 'bar-col' }, axis(start, end)))));
  const tbody = h('tbody');
  const sorted = [...streams].sort((a, b) => String(a.status.streamID).localeCompare(String(b.status.streamID)));
  for (const s of sorted) tbody.append(streamRow(s, byStream.get(s.status.streamID) || [], start, end, params));
  table.append(tbody);
  sec.append(h('div', { class: 'table-wrap' }, table));
  return sec;
}

function axis(start, end) {
  const ticks = h('div', { class: 'axis', 'aria-hidden': 'true' });
  for (let i = 0; i <= 4; i++) {
    const t = start + ((end - start) * i) / 4;
    ticks.append(h('span', { style: `left:${i * 25}%` }, fmtTime(t, { date: false, millis: false })));
  }
  return h('div', {}, h('span', { class: 'sr-only' }, 'Coverage over time'), ticks);
}

function streamRow(s, records, start, end, params) {
  const st = s.status;
  const cov = s.coverage || {};
  const id = st.streamID;
  const parsed = parseStreamID(id);
  const evidence = ms(cov.evidenceUntil);
  const { segments, baselines } = coverageSegments([...records, ...(s.gaps || [])].filter(dedupe()), { start, end, evidenceUntil: evidence });
  const collector = s.collector;
  let state = collector ? collector.state : 'not recording now';
  if (collector && collector.degraded) state += ' (degraded)';
  const tl = hashFor('timeline', { cluster: parsed.clusterID, resource: parsed.group ? `${parsed.resource}.${parsed.group}` : parsed.resource, namespace: parsed.namespace, tz: params.tz });
  const covered = cov.covered
    ? h('span', { class: 'ok' }, '✔ covered')
    : /^not yet observed/.test(cov.reason || '')
      ? h('span', { class: 'warn-text', title: cov.reason }, '… ', shortReason(cov.reason))
      : h('span', { class: 'bad', title: cov.reason || '' }, '✘ ', shortReason(cov.reason));
  return h('tr', { dataset: { stream: id } },
    h('th', { scope: 'row' }, h('a', { href: tl, title: `Timeline of ${id}` }, streamLabel(id))),
    h('td', { class: `state state-${collector ? collector.state : 'none'}`, title: collector && collector.degradedReason ? collector.degradedReason : '' }, state),
    h('td', { class: 'num' }, (st.records || 0).toLocaleString('en')),
    h('td', { class: 'num' }, String(st.gaps || 0)),
    h('td', { class: 'covered' }, covered, !Number.isNaN(evidence) ? h('div', { class: 'muted small' }, 'evidence until ', timeEl(cov.evidenceUntil, { date: false })) : null),
    h('td', { class: 'bar-col' }, bar(id, segments, baselines, start, end)));
}

// shortReason keeps the first clause of a coverage reason ("not yet
// observed", "gap from …"); the whole reason is the element's title.
function shortReason(reason) {
  if (!reason) return 'not covered';
  const i = reason.indexOf(':');
  return i > 0 && i < 60 ? reason.slice(0, i) : reason.length > 60 ? reason.slice(0, 59) + '…' : reason;
}

function dedupe() {
  const seen = new Set();
  return (r) => {
    const k = r.eventID || `${r.type}${r.observedAt}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  };
}

// MARKED are the kinds of segment that are never too short to see: each
// also gets a mark (.seg-mark) over the bar, a few pixels wide, centred on
// it in percent of the bar's width and kept inside the bar, so that a
// 0.3-second gap in a bar of an hour shows whatever the span and the width
// of the page. (The bar itself is stretched to its width, which would
// stretch a mark drawn in it.)
const MARKED = new Set([SEG.GAP, SEG.UNAVAILABLE, SEG.UNOBSERVED]);
const MARK_PX = 4; // the width of a mark (.seg-mark in style.css)

// bar draws the coverage of a stream as an SVG bar 1000 units wide,
// stretched to the width of its column, with the marks over it.
function bar(id, segments, baselines, start, end) {
  const W = 1000;
  const x = (t) => Math.max(0, Math.min(W, ((t - start) / (end - start)) * W));
  const g = svg('svg', { class: 'coverage-bar', viewBox: `0 0 ${W} 20`, preserveAspectRatio: 'none', role: 'img', 'aria-label': describe(segments) });
  const marks = [];
  for (const s of segments) {
    const w = x(s.to) - x(s.from);
    if (w <= 0 && !(MARKED.has(s.kind) && s.to > s.from && s.to > start && s.from < end)) continue;
    const title = `${SEG_LABEL[s.kind]}${s.reason ? ' — ' + s.reason : ''}\n${fmtBound(s.from)} → ${fmtBound(s.to)}`;
    g.append(svg('rect', { x: x(s.from), y: 2, width: Math.max(w, 0), height: 16, class: `seg seg-${s.kind}`, dataset: { kind: s.kind, from: fin(s.from), to: fin(s.to) } },
      svg('title', {}, title)));
    if (MARKED.has(s.kind)) {
      const at = (x(s.from) + x(s.to)) / 2;
      const left = `clamp(0px, calc(${(at / W) * 100}% - ${MARK_PX / 2}px), calc(100% - ${MARK_PX}px))`;
      marks.push(h('span', { class: `seg-mark seg-mark-${s.kind}`, title, style: { left }, dataset: { mark: s.kind, from: fin(s.from), to: fin(s.to) } }));
    }
  }
  // The marks go over every segment, so that a neighbour never hides one.
  const over = h('div', { class: 'coverage-marks', 'aria-hidden': 'true' }, ...marks);
  for (const b of baselines) {
    if (b.at < start || b.at > end) continue;
    g.append(svg('path', { d: `M${x(b.at)} 0 L${x(b.at)} 20`, class: 'baseline-mark', dataset: { baseline: b.id } },
      svg('title', {}, `complete baseline ${b.id} (${b.reason || 'list'}, ${plural(b.items, 'item')}) at ${fmtTime(b.at)}, ${relTime(b.at)}`)));
  }
  return h('div', { class: 'coverage' }, g, over);
}

function fin(t) { return Number.isFinite(t) ? new Date(t).toISOString() : ''; }
function fmtBound(t) { return Number.isFinite(t) ? fmtTime(t) : '…'; }

function describe(segments) {
  const gaps = segments.filter((s) => s.kind === SEG.GAP);
  const parts = [`${gaps.length} gap${gaps.length === 1 ? '' : 's'}`];
  for (const g of gaps) parts.push(`gap from ${fmtTime(g.from)} to ${fmtBound(g.to)}`);
  return `Coverage: ${parts.join('; ')}`;
}
