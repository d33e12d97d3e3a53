// Why: what changed before an object broke. The candidates, the changes
// and the Events on one time axis, with the gaps of the streams read
// hatched; each candidate links to the object's versions at its time.

import { get, resourceParam } from '../api.js';
import { fmtValue } from '../shape.js';
import { h, svg, ms, fmtTime, timeEl, hashFor, notice, plural, objectParams, streamLabel } from '../util.js';

export const title = 'Why';

export async function render(root, params, ctx) {
  if (!params.resource || !params.name) {
    root.append(h('h1', {}, 'Why did it break?'), notice('info', 'Open an object (from the ', h('a', { href: hashFor('namespace', { tz: params.tz }) }, 'namespace at T'), ') and choose "Why did it break?".'));
    return;
  }
  const a = await get('why', {
    cluster: params.cluster, resource: resourceParam(params.group, params.resource), namespace: params.namespace, name: params.name,
    at: params.at, from: params.from, before: params.before, after: params.after,
  });
  if (ctx.stale()) return;
  const name = `${a.kind || params.resource} ${params.namespace ? params.namespace + '/' : ''}${params.name}`;
  root.append(h('div', { class: 'view-head' },
    h('h1', {}, 'Why did ', h('code', {}, name), ' break?'),
    h('p', { class: 'muted' }, a.atSource === 'first-bad-transition' && a.bad
      ? ['It broke at ', timeEl(a.at), `: ${a.bad.what} → ${a.bad.to}${a.bad.reason ? ' (' + a.bad.reason + ')' : ''}. `]
      : a.atSource === 'latest-change' ? ['No bad transition found: T is its latest change, ', timeEl(a.at), '. '] : ['At ', timeEl(a.at), ' (given). '],
    'Window ', timeEl(a.from), ' to ', timeEl(a.to), '. ',
    h('a', { href: hashFor('object', { ...objectParams(a.object), at: a.at, tz: params.tz }) }, 'The object\'s versions'))));
  root.append(banner(a));
  for (const w of a.warnings || []) root.append(notice('warn', w));
  root.append(axis(a));
  root.append(candidates(a, params));
  root.append(eventsList(a));
  root.append(coverage(a));
}

function banner(a) {
  if (a.complete) {
    return h('div', { class: 'notice ok banner', role: 'status', dataset: { complete: 'true' } },
      h('strong', {}, 'Complete. '), `Every stream read (${plural((a.coverage || []).length, 'stream')}) is covered from the window's start to T, and Events are recorded: no change to these objects before T is missing.`);
  }
  const items = [];
  for (const sc of a.coverage || []) {
    if (!sc.covered) items.push(h('li', { dataset: { stream: sc.streamID } }, (sc.gaps || []).length ? h('span', { class: 'hatch-chip', 'aria-hidden': 'true' }) : null, ' ', h('code', {}, streamLabel(sc.streamID)), ` — ${sc.reason}`));
  }
  for (const r of a.notRecorded || []) items.push(h('li', {}, h('code', {}, r), ' — not recorded by the journal'));
  if (!a.eventsRecorded) items.push(h('li', {}, 'Events were not recorded'));
  return h('div', { class: 'notice error banner', role: 'alert', dataset: { complete: 'false' } },
    h('strong', {}, 'Incomplete. '), 'A change the journal does not hold could rank above every candidate below:', h('ul', { class: 'missing' }, items));
}

// axis draws the window: candidates as numbered marks, other changes as
// dots, Events as triangles, gaps hatched, T as a line.
function axis(a) {
  const start = ms(a.from);
  const end = ms(a.to);
  const W = 1000;
  const x = (t) => Math.max(0, Math.min(W, ((ms(t) - start) / Math.max(1, end - start)) * W));
  const g = svg('svg', { class: 'why-axis object-strip', viewBox: `0 0 ${W} 64`, role: 'img', 'aria-label': 'The window: candidates, changes, Events and gaps on one time axis' });
  for (const sc of a.coverage || []) {
    for (const gap of sc.gaps || []) {
      const x1 = x(gap.from);
      const x2 = gap.to ? x(gap.to) : W;
      g.append(svg('rect', { x: x1, y: 2, width: Math.max(3, x2 - x1), height: 60, class: 'seg seg-gap gap', dataset: { stream: sc.streamID } },
        svg('title', {}, `${streamLabel(sc.streamID)}: ${gap.reason} ${fmtTime(gap.from)} → ${gap.to ? fmtTime(gap.to) : 'not recovered'}: a change in it may be missing`)));
    }
  }
  g.append(svg('line', { x1: 0, x2: W, y1: 24, y2: 24, class: 'strip-axis' }));
  const ranked = new Map((a.candidates || []).map((c, i) => [c.change, i + 1]));
  (a.changes || []).forEach((c, i) => {
    const cx = x(c.observedAt);
    const rank = ranked.get(i);
    if (c.between) g.append(svg('line', { x1: x(c.between.from), x2: x(c.between.to), y1: 24, y2: 24, class: 'why-between' }));
    g.append(svg('circle', { cx, cy: 24, r: rank ? 8 : 4, class: `mk ${rank ? 'mk-candidate' : 'mk-modified'}`, dataset: { rank: rank ? String(rank) : '' } },
      svg('title', {}, `${rank ? '#' + rank + ' ' : ''}${c.type} ${c.object.resource} ${c.object.name} observed ${fmtTime(c.observedAt)}`)));
    if (rank && rank <= 9) g.append(svg('text', { x: cx, y: 28, class: 'why-rank' }, String(rank)));
  });
  for (const ev of a.events || []) {
    const t = x(ev.lastSeen || ev.observedAt);
    g.append(svg('path', { d: `M${t} 44 L${t - 5} 56 L${t + 5} 56 Z`, class: `ev ev-${(ev.type || 'normal').toLowerCase()}` }, svg('title', {}, `Event ${ev.reason}: ${ev.message}`)));
  }
  const tx = x(a.at);
  g.append(svg('line', { x1: tx, x2: tx, y1: 0, y2: 64, class: 'why-t' }, svg('title', {}, `T: ${fmtTime(a.at)}`)));
  return h('figure', { class: 'strip-fig' }, g, h('figcaption', { class: 'muted small' }, fmtTime(a.from), ' — ', fmtTime(a.to),
    '. Numbered marks are the candidates, dots other changes, triangles Events, the line T; hatched bands are gaps, where a change may be missing.'));
}

function candidates(a, params) {
  const sec = h('section', {}, h('h2', {}, `Candidate causes (${(a.candidates || []).length})`));
  if (!(a.candidates || []).length) { sec.append(h('p', { class: 'muted' }, 'No change before T to the objects the object depends on.')); return sec; }
  const tb = h('tbody');
  a.candidates.forEach((c, i) => {
    const ch = a.changes[c.change];
    const fields = h('ul', { class: 'changes' }, (ch.fields || []).slice(0, 8).map((f) => h('li', {}, h('code', {}, f.path), ` ${f.op}`, f.op !== 'add' ? h('span', { class: 'before' }, ` ${fmtValue(f.before)}`) : null, f.op !== 'remove' ? [' → ', h('span', { class: 'after' }, fmtValue(f.after))] : null)));
    tb.append(h('tr', { class: `candidate${(c.caveats || []).length ? ' uncertain' : ''}`, dataset: { rank: String(i + 1), name: ch.object.name, resource: ch.object.resource } },
      h('td', { class: 'num' }, String(i + 1)),
      h('td', { class: 'num' }, String(c.score)),
      h('td', {}, timeEl(ch.observedAt)),
      h('td', {}, h('a', { href: hashFor('object', { ...objectParams(ch.object), at: ch.observedAt, tz: params.tz }), class: 'summary' }, c.summary), fields,
        h('ul', { class: 'reasons small' }, c.reasons.map((r) => h('li', {}, r))),
        (c.caveats || []).length ? h('ul', { class: 'caveats small warn-text' }, c.caveats.map((r) => h('li', {}, r))) : null)));
  });
  sec.append(h('div', { class: 'table-wrap' }, h('table', { class: 'why-candidates' },
    h('thead', {}, h('tr', {}, ...['#', 'Score', 'Observed', 'Change, and why it ranks here'].map((t) => h('th', { scope: 'col' }, t)))), tb)));
  return sec;
}

function eventsList(a) {
  const sec = h('section', {}, h('h2', {}, `Events (${(a.events || []).length})`));
  if (!a.eventsRecorded) { sec.append(notice('warn', 'Events were not recorded in this namespace.')); return sec; }
  if (!(a.events || []).length) { sec.append(h('p', { class: 'muted' }, 'None in the window.')); return sec; }
  sec.append(h('ul', {}, a.events.map((ev) => h('li', { class: 'why-event' }, timeEl(ev.lastSeen || ev.observedAt), ` ${ev.regarding.resource} ${ev.regarding.name}: `, h('strong', {}, ev.reason), ` ${ev.message}${ev.count > 1 ? ` (×${ev.count})` : ''}`))));
  return sec;
}

function coverage(a) {
  const tb = h('tbody');
  for (const sc of a.coverage || []) {
    tb.append(h('tr', { class: sc.covered ? null : 'uncertain', dataset: { stream: sc.streamID, covered: String(sc.covered) } },
      h('td', {}, h('code', {}, streamLabel(sc.streamID))), h('td', {}, sc.covered ? 'covered' : 'not covered'), h('td', { class: 'small' }, sc.reason || '')));
  }
  return h('section', {}, h('h2', {}, 'Coverage of what was read'), h('div', { class: 'table-wrap' }, h('table', { class: 'objects' },
    h('thead', {}, h('tr', {}, ...['Stream', 'Window', 'Why not'].map((t) => h('th', { scope: 'col' }, t)))), tb)));
}
