// Object: its versions with who made each change, the field changes, the
// YAML of any version, a side-by-side diff of any two, and the Kubernetes
// Events recorded about it, on its own timeline.

import { get, all, resourceParam, APIError } from '../api.js';
import { who, toYAML, lineDiff, fmtValue } from '../shape.js';
import { h, svg, ms, fmtTime, relTime, timeEl, hashFor, notice, plural } from '../util.js';

export const title = 'Object';

export async function render(root, params, ctx) {
  if (!params.resource || !params.name) {
    root.append(h('h1', {}, 'Object'), notice('info', 'Choose an object on the ', h('a', { href: hashFor('timeline', { tz: params.tz }) }, 'timeline'), ' or in a ', h('a', { href: hashFor('namespace', { tz: params.tz }) }, 'namespace at T'), '.'));
    return;
  }
  const q = { cluster: params.cluster, resource: resourceParam(params.group, params.resource), namespace: params.namespace, name: params.name };
  const [hist, state, events] = await Promise.all([
    get('history', q),
    get('object', { ...q, at: params.at || 'now' }).catch((e) => ({ error: e })),
    recordedEvents(params).catch((e) => ({ error: e })),
  ]);
  if (ctx.stale()) return;
  const versions = hist.entries.filter((e) => e.kind === 'version');
  const last = versions[versions.length - 1];
  const kind = last ? last.version.ref.kind : params.resource;
  root.append(h('div', { class: 'view-head' },
    h('h1', {}, `${kind} `, h('code', {}, `${params.namespace ? params.namespace + '/' : ''}${params.name}`)),
    h('p', { class: 'muted' }, `${resourceParam(params.group, params.resource)} in cluster ${hist.object.clusterID}. `,
      params.namespace ? h('a', { href: hashFor('namespace', { cluster: hist.object.clusterID, namespace: params.namespace, at: params.at, tz: params.tz }) }, `Namespace ${params.namespace} at this time`) : null,
      ' ', h('a', { class: 'why-link', href: hashFor('why', { cluster: hist.object.clusterID, group: params.group, resource: params.resource, namespace: params.namespace, name: params.name, tz: params.tz }) }, 'Why did it break?'))));
  root.append(stateBox(state, params));
  for (const w of hist.warnings || []) root.append(notice('warn', w));
  root.append(strip(hist, events, params));
  root.append(versionsTable(hist, params));
  const panel = h('section', { class: 'version-panel', id: 'version-panel' });
  root.append(panel);
  showPanel(panel, hist.entries, params);
  root.append(eventsSection(events));
}

function stateBox(state, params) {
  if (state.error) {
    const e = state.error;
    return notice(e instanceof APIError && e.status === 404 ? 'info' : 'error', `State at ${params.at || 'now'}: ${e.message}`);
  }
  const atLabel = params.at ? 'At ' : 'Now, ';
  const parts = [h('strong', {}, atLabel), timeEl(state.at), ': '];
  if (state.exists) parts.push(h('span', { class: 'ok', dataset: { exists: 'true' } }, 'exists'));
  else if (state.inferred) parts.push(h('span', { class: 'bad', dataset: { exists: 'false', deletion: 'inferred' } }, `gone — deleted between `, timeEl(state.inferred.from), ' and ', timeEl(state.inferred.to), ` (inferred by a relist: ${state.inferred.reason}; no watch DELETED event)`));
  else if (state.record && state.record.watchType === 'DELETED') parts.push(h('span', { class: 'bad', dataset: { exists: 'false', deletion: 'watch' } }, 'gone — deleted (a watch DELETED event), observed ', timeEl(state.record.observedAt)));
  else parts.push(h('span', { class: 'bad', dataset: { exists: 'false' } }, 'does not exist'));
  const unobserved = !state.covered && (state.coverage || []).every((c) => c.covered || /not yet observed/.test(c.reason || ''));
  parts.push('. ', state.covered ? h('span', { class: 'ok' }, 'This answer is covered.')
    : unobserved ? h('span', { class: 'warn-text' }, 'Not yet observed: the recorder has not vouched for this time yet, so a change just before it may still arrive.')
      : h('span', { class: 'bad' }, 'This answer is NOT covered: the object may have changed unseen.'));
  const box = h('div', { class: `notice ${state.covered ? 'info' : 'warn'} state-box`, role: 'status' }, ...parts);
  for (const c of state.coverage || []) {
    if (!c.covered) box.append(h('div', { class: 'small' }, `${c.streamID}: ${c.reason || 'not covered'}`));
  }
  for (const w of state.warnings || []) box.append(h('div', { class: 'small' }, w));
  return box;
}

// strip draws the object's life: versions as marks, gaps hatched, events as ticks.
function strip(hist, events, params) {
  const times = [];
  for (const e of hist.entries) {
    times.push(ms(e.observedAt));
    if (e.gap) times.push(ms(e.gap.from), ms(e.gap.to));
  }
  for (const ev of events.items || []) times.push(ms(ev.at));
  const valid = times.filter((t) => !Number.isNaN(t));
  if (!valid.length) return h('div');
  let start = Math.min(...valid);
  let end = Math.max(...valid, Date.now());
  const pad = Math.max((end - start) * 0.03, 1000);
  start -= pad;
  end += pad;
  const W = 1000;
  const x = (t) => ((t - start) / (end - start)) * W;
  const g = svg('svg', { class: 'object-strip', viewBox: `0 0 ${W} 46`, role: 'img', 'aria-label': 'The object over time: versions, gaps and events' });
  g.append(svg('line', { x1: 0, x2: W, y1: 16, y2: 16, class: 'strip-axis' }));
  hist.entries.forEach((e, i) => {
    if (e.gap) {
      g.append(svg('rect', { x: x(ms(e.gap.from)), y: 4, width: Math.max(2, x(ms(e.gap.to)) - x(ms(e.gap.from))), height: 24, class: 'seg seg-gap', dataset: { kind: 'gap' } },
        svg('title', {}, `gap ${fmtTime(e.gap.from)} → ${fmtTime(e.gap.to)}: ${e.gap.reason}`)));
    } else if (e.confirmation) {
      g.append(svg('line', { x1: x(ms(e.observedAt)), x2: x(ms(e.observedAt)), y1: 9, y2: 23, class: 'mk-confirmed', dataset: { kind: 'confirmed' } },
        svg('title', {}, `confirmed by relist ${fmtTime(e.observedAt)}: still at resourceVersion ${e.confirmation.resourceVersion}, not a new version`)));
    } else if (e.kind === 'unavailable') {
      g.append(svg('rect', { x: x(ms(e.observedAt)), y: 4, width: 3, height: 24, class: 'seg seg-unavailable' }, svg('title', {}, `unavailable: ${e.coverage && e.coverage.reason}`)));
    } else if (e.version) {
      const v = e.version;
      const cls = v.origin === 'inferred' ? 'mk-inferred' : v.origin === 'baseline' ? 'mk-relist' : `mk-${v.watchType.toLowerCase()}`;
      const a = svg('a', { href: hashFor('object', { ...params, v: String(i), a: '', b: '' }) },
        svg('circle', { cx: x(ms(v.observedAt)), cy: 16, r: 6, class: `mk ${cls}` }),
        svg('title', {}, `${v.watchType} (${v.origin}) observed ${fmtTime(v.observedAt)}, ${relTime(v.observedAt)}`));
      g.append(a);
    }
  });
  for (const ev of events.items || []) {
    const t = x(ms(ev.at));
    g.append(svg('path', { d: `M${t} 32 L${t - 5} 44 L${t + 5} 44 Z`, class: `ev ev-${(ev.type || 'normal').toLowerCase()}` }, svg('title', {}, `Event ${ev.reason}: ${ev.message} (${fmtTime(ev.at)})`)));
  }
  return h('figure', { class: 'strip-fig' }, g, h('figcaption', { class: 'muted small' }, fmtTime(start), ' — ', fmtTime(end), '. Circles are versions (hollow: seen by a relist; dashed: inferred deletion), ticks are relists that found the object unchanged, hatched bands are gaps, triangles are Events.'));
}

function versionsTable(hist, params) {
  const table = h('table', { class: 'versions' },
    h('caption', {}, `Versions and gaps (${plural(hist.entries.filter((e) => e.kind === 'version').length, 'version')}). Choose A and B to compare two versions.`),
    h('thead', {}, h('tr', {}, ...['#', 'Observed', 'Event', 'Seen by', 'Who', 'Field changes', 'YAML', 'A', 'B'].map((c) => h('th', { scope: 'col' }, c)))));
  const tb = h('tbody');
  const atMs = ms(params.at);
  let atIndex = -1;
  hist.entries.forEach((e, i) => { if (e.version && !Number.isNaN(atMs) && ms(e.observedAt) <= atMs) atIndex = i; });
  hist.entries.forEach((e, i) => {
    if (e.kind !== 'version') {
      tb.append(h('tr', { class: `entry-${e.kind}` }, h('td', {}), h('td', {}, timeEl(e.observedAt)), h('td', { colspan: 7 }, ...entryText(e, hist.entries))));
      return;
    }
    const v = e.version;
    const w = who(v);
    const origin = v.origin === 'watch' ? 'watch event' : v.origin === 'baseline' ? 'relist (list item)' : 'inferred by a relist';
    const changes = h('ul', { class: 'changes' }, (v.changes || []).slice(0, 12).map((c) => h('li', {}, h('code', {}, c.path), ` ${c.op}`, c.op !== 'add' ? h('span', { class: 'before' }, ` ${fmtValue(c.before)}`) : null, c.op !== 'remove' ? [' → ', h('span', { class: 'after' }, fmtValue(c.after))] : null)));
    if ((v.changes || []).length > 12) changes.append(h('li', { class: 'muted' }, `… ${v.changes.length - 12} more`));
    if (v.inferred) changes.append(h('li', {}, `deleted between `, timeEl(v.inferred.from), ' and ', timeEl(v.inferred.to), ` (inferred by a relist: ${v.inferred.reason}; no watch DELETED event)`));
    if (v.recreated) changes.append(h('li', { class: 'warn-text' }, 'recreated: a new object with the same name (new uid)'));
    const sel = params.v === String(i);
    tb.append(h('tr', { class: `version origin-${v.origin}${i === atIndex ? ' at-row' : ''}${sel ? ' selected' : ''}`, dataset: { index: String(i), origin: v.origin, watchType: v.watchType } },
      h('td', { class: 'num' }, String(i + 1)),
      h('td', {}, timeEl(v.observedAt)),
      h('td', {}, h('span', { class: `wt wt-${v.watchType.toLowerCase()}` }, v.watchType)),
      h('td', {}, origin),
      h('td', { class: `who who-${w.kind}`, title: w.detail || '' }, w.label, w.tag ? h('span', { class: `tag tag-${w.kind}` }, w.tag) : null, w.detail ? h('div', { class: 'muted small' }, w.detail) : null),
      h('td', {}, changes),
      h('td', {}, h('a', { href: hashFor('object', { ...params, v: String(i), a: '', b: '' }), 'aria-label': `YAML of version ${i + 1}` }, 'YAML')),
      h('td', {}, h('input', { type: 'radio', name: 'diff-a', 'aria-label': `Compare: version ${i + 1} as A`, checked: params.a === String(i), onchange: () => pick('a', i) })),
      h('td', {}, h('input', { type: 'radio', name: 'diff-b', 'aria-label': `Compare: version ${i + 1} as B`, checked: params.b === String(i), onchange: () => pick('b', i) }))));
  });
  table.append(tb);
  return h('div', { class: 'table-wrap' }, table);
}

// entryText describes an entry of a history that is not a version: a gap,
// a change of availability, or a relist that found the object unchanged.
function entryText(e, entries) {
  if (e.gap) return [h('strong', {}, 'Gap'), ' from ', timeEl(e.gap.from), ' to ', timeEl(e.gap.to), ` — ${e.gap.reason}. Changes in it may be missing; the relist after it says what survived.`];
  if (e.confirmation) {
    const n = entries.findIndex((x) => x.eventID === e.confirmation.versionEventID);
    return [h('strong', {}, 'Confirmed by relist'), ` — the object was still at resourceVersion ${e.confirmation.resourceVersion}${n >= 0 ? `, as version ${n + 1} left it` : ''}: not a new version.`];
  }
  if (e.kind === 'unavailable') return [h('strong', {}, 'Unavailable'), ` — ${e.coverage ? e.coverage.reason : ''}`];
  if (e.kind === 'available') return [h('strong', {}, 'Available again'), ` — ${e.coverage ? e.coverage.reason : ''}`];
  return [h('strong', {}, e.kind)];
}

function pick(which, i) {
  const hash = location.hash;
  const p = new URLSearchParams(hash.slice(hash.indexOf('?') + 1));
  p.set(which, String(i));
  p.delete('v');
  location.hash = `#/object?${p.toString()}`;
}

// showPanel shows the YAML of version v, or versions a and b side by side
// (indexes into the history's entries, as in the URL).
function showPanel(panel, entries, params) {
  const index = (s) => (s === undefined || s === '' ? -1 : Number(s));
  const at = (i) => (entries[i] && entries[i].version) || null;
  const a = index(params.a);
  const b = index(params.b);
  if (a >= 0 && b >= 0) { panel.append(diffPanel(a, at(a), b, at(b), params)); return; }
  const v = index(params.v);
  if (v >= 0) panel.append(yamlPanel(v, at(v), params));
  else panel.append(h('p', { class: 'muted' }, 'Choose a version\'s YAML, or A and B to compare two versions side by side.'));
}

// shown is the object as the YAML and diff show it: without its
// managedFields unless asked (mf=1), which are long and say little.
function shown(obj, params) {
  if (!obj || params.mf === '1' || !obj.metadata || !obj.metadata.managedFields) return obj || {};
  const { managedFields, ...metadata } = obj.metadata;
  void managedFields;
  return { ...obj, metadata };
}

function managedToggle(params) {
  const on = params.mf === '1';
  return h('a', { class: 'small', href: hashFor('object', { ...params, mf: on ? '' : '1' }) }, on ? 'hide managedFields' : 'show managedFields');
}

function yamlPanel(i, v, params) {
  if (!v) return notice('error', `No version #${i + 1}.`);
  return h('div', {},
    h('h2', {}, `Version ${i + 1}: ${v.watchType}, observed `, timeEl(v.observedAt)),
    h('p', { class: 'muted' }, `resourceVersion ${v.resourceVersion || v.ref.resourceVersion || '?'}${v.origin === 'inferred' ? ' — the last state known before the inferred deletion' : ''}`),
    managedToggle(params),
    h('pre', { class: 'yaml', tabindex: '0', 'aria-label': `YAML of version ${i + 1}` }, toYAML(shown(v.object, params))));
}

function diffPanel(a, va, b, vb, params) {
  if (!va || !vb) return notice('error', 'Choose two versions to compare.');
  const rows = lineDiff(toYAML(shown(va.object, params)), toYAML(shown(vb.object, params)));
  const changed = rows.filter((r) => r.op !== 'same').length;
  const table = h('table', { class: 'sbs', 'aria-label': `Version ${a + 1} and version ${b + 1} side by side` },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'A: version ', String(a + 1), ', ', timeEl(va.observedAt)), h('th', { scope: 'col' }, 'B: version ', String(b + 1), ', ', timeEl(vb.observedAt)))));
  const tb = h('tbody');
  for (const r of rows) {
    tb.append(h('tr', { class: `d-${r.op}` },
      h('td', { class: r.op === 'del' || r.op === 'chg' ? 'old' : '' }, h('pre', {}, r.a === undefined ? '' : r.a)),
      h('td', { class: r.op === 'add' || r.op === 'chg' ? 'new' : '' }, h('pre', {}, r.b === undefined ? '' : r.b))));
  }
  table.append(tb);
  return h('div', {}, h('h2', {}, `Diff of version ${a + 1} and version ${b + 1}`), h('p', { class: 'muted' }, changed ? plural(changed, 'line') + ' differ. ' : 'The two versions are the same. ', managedToggle(params)), h('div', { class: 'table-wrap' }, table));
}

// recordedEvents reads the Kubernetes Events about the object, when the
// journal records the events resource in its namespace.
async function recordedEvents(params) {
  let recs;
  try {
    recs = await all('records', { cluster: params.cluster, namespace: params.namespace, resource: 'events', types: 'event', limit: 1000 });
  } catch (e) {
    if (e instanceof APIError && (e.status === 400 || e.status === 404)) return { items: [], notRecorded: true };
    throw e;
  }
  const latest = new Map();
  for (const r of recs) {
    const o = r.object;
    if (!o || (!o.involvedObject && !o.regarding)) continue;
    const inv = o.involvedObject || o.regarding;
    if (inv.name !== params.name || (inv.namespace || '') !== (params.namespace || '')) continue;
    if (r.watchType === 'DELETED') continue;
    latest.set(o.metadata && o.metadata.name, { r, o });
  }
  const items = [...latest.values()].map(({ r, o }) => ({
    at: o.lastTimestamp || o.eventTime || o.firstTimestamp || r.observedAt,
    observedAt: r.observedAt,
    type: o.type,
    reason: o.reason,
    message: o.message || o.note || '',
    count: o.count || (o.series && o.series.count) || 1,
    source: (o.source && o.source.component) || o.reportingComponent || o.reportingController || '',
    kind: (o.involvedObject || o.regarding).kind,
  }));
  items.sort((x, y) => ms(x.at) - ms(y.at));
  return { items, notRecorded: recs.length === 0 };
}

function eventsSection(events) {
  const sec = h('section', { class: 'events' }, h('h2', {}, 'Kubernetes Events about this object'));
  if (events.error) { sec.append(notice('error', events.error.message)); return sec; }
  if (!events.items.length) {
    sec.append(h('p', { class: 'muted' }, events.notRecorded ? 'No Events recorded: record the events resource in this namespace to see them here.' : 'None recorded.'));
    return sec;
  }
  sec.append(h('table', { class: 'events-table' },
    h('thead', {}, h('tr', {}, ...['Time', 'Type', 'Reason', 'Message', 'Count', 'Source'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, events.items.map((e) => h('tr', { class: `ev-row ev-${(e.type || '').toLowerCase()}` }, h('td', {}, timeEl(e.at)), h('td', {}, e.type || ''), h('td', {}, e.reason || ''), h('td', {}, e.message), h('td', { class: 'num' }, String(e.count)), h('td', {}, e.source))))));
  return sec;
}
