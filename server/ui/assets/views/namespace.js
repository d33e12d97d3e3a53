// Namespace at T: the objects alive at a time, under a banner that says
// whether the picture is complete and, if not, which streams and why.

import { whole, all } from '../api.js';
import { h, ms, timeEl, hashFor, notice, plural, objectLink, objectParams, localInputValue, fromLocalInput, toRFC3339, streamLabel, currentZone } from '../util.js';

export const title = 'Namespace at T';

export async function render(root, params, ctx) {
  root.append(h('h1', {}, 'Namespace at T'));
  const streams = await all('streams', { cluster: params.cluster }).catch(() => []);
  if (ctx.stale()) return;
  root.append(picker(params, streams));
  if (params.namespace === undefined && params.at === undefined) {
    root.append(h('p', { class: 'muted' }, 'Choose a namespace and a time: every object alive then is listed, with how complete that picture is.'));
    return;
  }
  const snap = await whole('snapshot', { cluster: params.cluster, namespace: params.namespace, at: params.at || 'now' });
  if (ctx.stale()) return;
  root.append(banner(snap));
  for (const w of snap.warnings || []) root.append(notice('warn', w));
  root.append(objectsTable(snap, params));
}

// namespaces lists the namespaces the journal's streams record.
function namespaces(streams) {
  const set = new Set();
  for (const s of streams) if (s.status && s.status.stream && s.status.stream.namespace) set.add(s.status.stream.namespace);
  return [...set].sort();
}

function picker(params, streams) {
  const ns = h('input', { id: 'ns-input', list: 'ns-list', value: params.namespace || '', placeholder: 'every namespace', 'aria-label': 'Namespace' });
  const at = h('input', { id: 'at-input', value: params.at || 'now', 'aria-describedby': 'at-help', 'aria-label': 'Time' });
  const local = h('input', { type: 'datetime-local', step: '1', 'aria-label': `Pick a time (${currentZone() === 'local' ? "this browser's zone" : currentZone()})`, value: localInputValue(ms(params.at)) });
  local.addEventListener('change', () => { const m = fromLocalInput(local.value); if (!Number.isNaN(m)) at.value = toRFC3339(m); });
  const form = h('form', { class: 'picker', onsubmit: (e) => {
    e.preventDefault();
    location.hash = hashFor('namespace', { cluster: params.cluster, namespace: ns.value.trim(), at: at.value.trim() || 'now', tz: params.tz });
  } },
  h('label', {}, 'Namespace ', ns), h('datalist', { id: 'ns-list' }, namespaces(streams).map((n) => h('option', { value: n }))),
  h('label', {}, 'at ', at), h('label', {}, 'or pick ', local),
  h('button', { type: 'submit' }, 'Show'),
  h('span', { id: 'at-help', class: 'muted small' }, 'RFC 3339 (2026-01-02T15:04:05Z), "now", or a time ago: 10m, 2h ago.'));
  return form;
}

function banner(snap) {
  if (snap.complete) {
    return h('div', { class: 'notice ok banner', role: 'status', dataset: { complete: 'true' } },
      h('strong', {}, 'Complete. '), 'Every stream of this scope is covered at ', timeEl(snap.at), `: this is everything alive then (${plural((snap.watermarks || []).length, 'stream')}).`);
  }
  const missing = snap.missing || [];
  return h('div', { class: 'notice error banner', role: 'alert', dataset: { complete: 'false' } },
    h('strong', {}, 'Incomplete. '), `At `, timeEl(snap.at), ` ${plural(missing.length, 'stream is', 'streams are')} not covered, so objects may be missing or out of date:`,
    h('ul', { class: 'missing' }, missing.map((m) => h('li', { dataset: { stream: m.streamID } }, h('code', {}, streamLabel(m.streamID)), ` — ${m.reason}`))));
}

function objectsTable(snap, params) {
  const objs = [...(snap.objects || [])].sort((a, b) => (a.ref.kind || '').localeCompare(b.ref.kind || '') || (a.ref.namespace || '').localeCompare(b.ref.namespace || '') || a.ref.name.localeCompare(b.ref.name));
  const sec = h('section', {}, h('h2', {}, `${plural(objs.length, 'object')} alive at `, timeEl(snap.at)));
  if (!objs.length) { sec.append(h('p', { class: 'muted' }, 'None.')); return sec; }
  // An object whose stream is not covered at T may have changed or gone
  // unseen: its row says so.
  const missing = new Set((snap.missing || []).map((m) => m.streamID));
  const tb = h('tbody');
  for (const o of objs) {
    const uncertain = missing.has(o.streamID);
    tb.append(h('tr', { class: uncertain ? 'uncertain' : null, title: uncertain ? `its stream ${o.streamID} is not covered at this time: it may have changed or gone unseen` : null, dataset: { kind: o.ref.kind, name: o.ref.name, uncertain: uncertain ? 'true' : 'false' } },
      h('td', {}, o.ref.kind),
      h('td', {}, objectLink(o.ref, snap.scope.clusterID, { at: snap.at, tz: params.tz }, `${o.ref.namespace ? o.ref.namespace + '/' : ''}${o.ref.name}`),
        ' ', h('a', { class: 'why-link small', href: hashFor('why', { ...objectParams(o.ref, snap.scope.clusterID), tz: params.tz }), title: 'What changed before this object went bad' }, 'why?')),
      h('td', {}, timeEl(o.observedAt)),
      h('td', {}, o.synthetic ? 'relist (list item)' : 'watch event', uncertain ? h('div', { class: 'small warn-text' }, 'last known; may have changed since') : null),
      h('td', { class: 'muted small' }, o.ref.resourceVersion || '')));
  }
  sec.append(h('div', { class: 'table-wrap' }, h('table', { class: 'objects' },
    h('thead', {}, h('tr', {}, ...['Kind', 'Name', 'Last change observed', 'Seen by', 'resourceVersion'].map((c) => h('th', { scope: 'col' }, c)))), tb)));
  return sec;
}
