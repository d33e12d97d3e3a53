// Diff: what changed in a scope between two times.

import { whole } from '../api.js';
import { fmtValue } from '../shape.js';
import { h, timeEl, hashFor, notice, plural, objectLink, streamLabel } from '../util.js';

export const title = 'Diff';

const ORDER = { added: 0, removed: 1, changed: 2, unknown: 3 };

export async function render(root, params, ctx) {
  root.append(h('h1', {}, 'Diff between two times'), form(params));
  if (!params.from) {
    root.append(h('p', { class: 'muted' }, 'Choose a scope and two times: every object added, removed or changed between them is listed, and those whose state the journal cannot tell are called unknown.'));
    return;
  }
  const d = await whole('diff', { cluster: params.cluster, namespace: params.namespace, resource: params.resource, from: params.from, to: params.to || 'now', includeStatus: params.status === 'false' ? 'false' : undefined });
  if (ctx.stale()) return;
  root.append(h('p', {}, 'From ', timeEl(d.from), ' to ', timeEl(d.to), '.'));
  if (d.hasGaps || (d.missing || []).length) {
    root.append(h('div', { class: 'notice error banner', role: 'alert', dataset: { complete: 'false' } },
      h('strong', {}, 'Gaps intersect this window. '), 'Changes inside them may be missing; objects whose state is unknown at an end are marked unknown, never added or removed.',
      h('ul', {}, (d.gaps || []).map((g) => h('li', { class: 'gap-item' }, h('span', { class: 'hatch-chip', 'aria-hidden': 'true' }), ' ', h('code', {}, streamLabel(g.streamID)), ': gap ', timeEl(g.gap.from), ' → ', timeEl(g.gap.to), ` — ${g.gap.reason}`)),
        (d.missing || []).map((m) => h('li', {}, h('code', {}, streamLabel(m.streamID)), ` not covered: ${m.reason}`)))));
  }
  for (const w of d.warnings || []) root.append(notice('warn', w));
  const objs = [...(d.objects || [])].sort((a, b) => ORDER[a.type] - ORDER[b.type] || (a.kind || '').localeCompare(b.kind || '') || a.id.name.localeCompare(b.id.name));
  const counts = {};
  for (const o of objs) counts[o.type] = (counts[o.type] || 0) + 1;
  root.append(h('p', { class: 'summary' }, objs.length ? Object.entries(counts).map(([k, n]) => h('span', { class: `pill pill-${k}` }, `${n} ${k}`)) : 'No object changed.'));
  const tb = h('tbody');
  for (const o of objs) {
    const ref = { ...o.id, kind: o.kind };
    const details = o.type === 'unknown'
      ? h('span', {}, `unknown at ${o.unknownAt === 'both' ? 'both ends' : o.unknownAt === 'from' ? 'the start' : 'the end'}: ${o.reason || ''}`)
      : h('ul', { class: 'changes' }, (o.changes || []).slice(0, 20).map((c) => h('li', {}, h('code', {}, c.path), ` ${c.op}`, c.op !== 'add' ? h('span', { class: 'before' }, ` ${fmtValue(c.before)}`) : null, c.op !== 'remove' ? [' → ', h('span', { class: 'after' }, fmtValue(c.after))] : null, c.fieldManager ? h('span', { class: 'tag tag-manager' }, `field manager ${c.fieldManager.manager}`) : null)),
        o.recreated ? h('li', { class: 'warn-text' }, 'recreated (new uid)') : null);
    tb.append(h('tr', { class: `diff-${o.type}`, dataset: { type: o.type, kind: o.kind, name: o.id.name } },
      h('td', {}, h('span', { class: `pill pill-${o.type}` }, o.type)),
      h('td', {}, o.kind),
      h('td', {}, objectLink(ref, o.id.clusterID, { tz: params.tz, a: '', b: '' }, `${o.id.namespace ? o.id.namespace + '/' : ''}${o.id.name}`)),
      h('td', {}, details)));
  }
  if (objs.length) {
    root.append(h('div', { class: 'table-wrap' }, h('table', { class: 'diff' },
      h('thead', {}, h('tr', {}, ...['Change', 'Kind', 'Name', 'Fields'].map((c) => h('th', { scope: 'col' }, c)))), tb)));
  }
  root.append(h('p', { class: 'muted small' }, `${plural(objs.length, 'object')}. Server-owned metadata (resourceVersion, managedFields, …) is ignored.`));
}

function form(params) {
  const f = (name, label, value, placeholder) => h('label', {}, `${label} `, h('input', { name, value: value || '', placeholder, 'aria-label': label }));
  const el = h('form', { class: 'picker', onsubmit: (e) => {
    e.preventDefault();
    const data = Object.fromEntries(new FormData(el).entries());
    location.hash = hashFor('diff', { cluster: params.cluster, namespace: data.namespace.trim(), resource: data.resource.trim(), from: data.from.trim(), to: data.to.trim() || 'now', status: data.status ? '' : 'false', tz: params.tz });
  } },
  f('namespace', 'Namespace', params.namespace, 'every namespace'),
  f('resource', 'Resource', params.resource, 'every resource'),
  f('from', 'From', params.from, '1h ago'),
  f('to', 'To', params.to, 'now'),
  h('label', {}, h('input', { type: 'checkbox', name: 'status', value: 'true', checked: params.status !== 'false' }), ' compare status'),
  h('button', { type: 'submit' }, 'Compare'));
  return el;
}
