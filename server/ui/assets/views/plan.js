// Replay plan review: the objects in order, exclusions with their reasons,
// warnings, and the dry run's result per object with conflicts and their
// managers. Apply is offered only when the server allows it, and only once
// the plan's hash has been typed.

import { get, post, all, uiConfig } from '../api.js';
import { h, timeEl, hashFor, notice, plural, objectLink, streamLabel } from '../util.js';

export const title = 'Replay plan';

export async function render(root, params, ctx) {
  const config = await uiConfig();
  if (!params.id) return listPlans(root, params, ctx);
  const plan = await get(`plans/${encodeURIComponent(params.id)}`);
  if (ctx.stale()) return;
  root.append(h('div', { class: 'view-head' },
    h('h1', {}, 'Replay plan ', h('code', {}, plan.id)),
    h('p', { class: 'muted' }, 'Created ', timeEl(plan.createdAt), '. Status: ', h('strong', { class: `status-${plan.status}` }, plan.status || 'planned'), '. ',
      h('a', { href: `api/v1/plans/${encodeURIComponent(plan.id)}?format=yaml`, download: `${plan.id}.yaml` }, 'YAML for kubectl apply --server-side'))));
  root.append(summary(plan, params));
  if (!plan.coverage.complete) {
    root.append(h('div', { class: 'notice error banner', role: 'alert' }, h('strong', {}, 'Planned from incomplete coverage (the policy allowed gaps). '),
      h('ul', {}, (plan.coverage.missing || []).map((m) => h('li', {}, h('code', {}, streamLabel(m.streamID)), ` — ${m.reason}`)))));
  }
  for (const w of plan.warnings || []) root.append(notice('warn', w));
  const results = new Map();
  const dry = plan.lastDryRun;
  for (const r of (dry && dry.results) || []) results.set(refKey(r.ref), r);
  root.append(objectsTable(plan, results, params));
  root.append(exclusions(plan, params));
  root.append(dryRunSection(plan, dry, config));
  if (config.apply) root.append(applySection(plan));
}

async function listPlans(root, params, ctx) {
  root.append(h('h1', {}, 'Replay plans'));
  const recs = await all('records', { cluster: params.cluster, types: 'replay_plan', bodies: 'false', order: 'desc' });
  if (ctx.stale()) return;
  // A plan's record, not those of its dry runs and applies (same type).
  const seen = new Set();
  const plans = recs.filter((r) => {
    const id = (r.snapshot && r.snapshot.id) || r.eventID;
    if ((r.resource && r.resource.kind && r.resource.kind !== 'ReplayPlan') || seen.has(id)) return false;
    seen.add(id);
    return true;
  });
  if (!plans.length) {
    root.append(notice('info', 'No saved plan in this journal. A plan is saved by the replay tool (examples/replay --save) or POST /api/v1/plans.'));
    return;
  }
  root.append(h('ul', { class: 'plans' }, plans.map((r) => {
    const ref = r.snapshot || {};
    const id = ref.id || r.eventID;
    return h('li', {}, h('a', { href: hashFor('plan', { id, tz: params.tz }) }, id), ref.name ? ` ${ref.name}` : '', ' — saved ', timeEl(r.observedAt), ref.at ? [', source time ', timeEl(ref.at)] : null);
  })));
}

function refKey(ref) { return `${ref.group || ''}/${ref.kind}/${ref.namespace || ''}/${ref.name}`; }

function summary(plan, params) {
  const src = plan.source;
  const tgt = plan.target || {};
  const maps = Object.entries(tgt.namespaces || {}).map(([a, b]) => `${a} → ${b}`).join(', ');
  return h('dl', { class: 'facts' },
    h('dt', {}, 'Hash'), h('dd', {}, h('code', { class: 'hash' }, plan.hash)),
    h('dt', {}, 'Source'), h('dd', {}, `cluster ${src.clusterID}, ${src.namespaces && src.namespaces.length ? 'namespaces ' + src.namespaces.join(', ') : 'every namespace'}, as it was at `, timeEl(src.at),
      ' ', h('a', { href: hashFor('namespace', { cluster: src.clusterID, namespace: (src.namespaces || [])[0], at: src.at, tz: params.tz }) }, '(see it)')),
    h('dt', {}, 'Target'), h('dd', {}, `cluster ${tgt.clusterID || src.clusterID}${maps ? ', namespaces ' + maps : ''}`),
    h('dt', {}, 'Coverage'), h('dd', {}, plan.coverage.complete ? h('span', { class: 'ok' }, 'complete at the source time') : h('span', { class: 'bad' }, 'incomplete')),
    h('dt', {}, 'Contents'), h('dd', {}, `${plural((plan.objects || []).length, 'object')} to apply in this order, ${plural((plan.exclusions || []).length, 'exclusion')}`));
}

function objectsTable(plan, results, params) {
  const tb = h('tbody');
  (plan.objects || []).forEach((o, i) => {
    const r = results.get(refKey(o.ref));
    const conflicts = r && r.conflicts && r.conflicts.length
      ? h('ul', { class: 'conflicts' }, r.conflicts.map((c) => h('li', {}, h('strong', {}, 'conflict'), ' with field manager ', h('code', { class: 'manager' }, c.manager), ' on ', h('code', {}, c.field))))
      : null;
    const result = r
      ? h('div', {}, h('span', { class: `pill action-${r.action}` }, r.action), r.validated ? '' : h('span', { class: 'muted small' }, ' not validated'), conflicts,
        r.missingNamespace ? h('div', { class: 'small' }, `namespace ${r.missingNamespace} does not exist yet (apply creates it first)`) : null,
        r.message ? h('div', { class: 'small muted' }, `${r.code ? r.code + ' ' : ''}${r.reason ? r.reason + ': ' : ''}${r.message}`) : null,
        (r.changes || []).length ? h('div', { class: 'small' }, `changes ${r.changes.map((c) => c.path).join(', ')}`) : null)
      : h('span', { class: 'muted' }, 'no dry run yet');
    tb.append(h('tr', { dataset: { kind: o.ref.kind, name: o.ref.name, action: r ? r.action : '' } },
      h('td', { class: 'num' }, String(i + 1)),
      h('td', {}, o.ref.kind),
      h('td', {}, `${o.ref.namespace ? o.ref.namespace + '/' : ''}${o.ref.name}`),
      h('td', {}, o.source ? objectLink(o.source, plan.source.clusterID, { at: plan.source.at, tz: params.tz }, `${o.source.namespace ? o.source.namespace + '/' : ''}${o.source.name}`) : '', o.synthesized ? h('div', { class: 'muted small' }, 'made by the plan') : null),
      h('td', { class: 'small' }, (o.removed || []).join(' '), (o.warnings || []).map((w) => h('div', { class: 'warn-text' }, w))),
      h('td', {}, result)));
  });
  return h('section', {}, h('h2', {}, 'Objects, in the order they are applied'), h('div', { class: 'table-wrap' }, h('table', { class: 'plan-objects' },
    h('thead', {}, h('tr', {}, ...['#', 'Kind', 'Target name', 'Source', 'Removed fields, warnings', 'Dry run'].map((c) => h('th', { scope: 'col' }, c)))), tb)));
}

function exclusions(plan, params) {
  const ex = plan.exclusions || [];
  const sec = h('section', {}, h('h2', {}, `Excluded (${ex.length})`));
  if (!ex.length) { sec.append(h('p', { class: 'muted' }, 'Nothing excluded.')); return sec; }
  sec.append(h('div', { class: 'table-wrap' }, h('table', { class: 'exclusions' },
    h('thead', {}, h('tr', {}, ...['Kind', 'Name', 'Rule', 'Reason'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, ex.map((e) => h('tr', { dataset: { kind: e.ref.kind, name: e.ref.name, rule: e.rule } },
      h('td', {}, e.ref.kind), h('td', {}, objectLink(e.ref, plan.source.clusterID, { at: plan.source.at, tz: params.tz }, `${e.ref.namespace ? e.ref.namespace + '/' : ''}${e.ref.name}`)),
      h('td', {}, h('code', {}, e.rule)), h('td', {}, e.reason)))))));
  return sec;
}

function dryRunSection(plan, dry, config) {
  const sec = h('section', { class: 'dryrun' }, h('h2', {}, 'Dry run'));
  if (dry) {
    const n = (a) => (dry.results || []).filter((r) => r.action === a).length;
    sec.append(h('p', {}, 'Last dry run ', h('code', {}, dry.id), ' at ', timeEl(dry.at), ` against cluster ${dry.cluster.clusterID || dry.cluster.uid} as field manager `, h('code', {}, dry.fieldManager), ': ',
      h('strong', { class: `status-${dry.status}` }, dry.status), ` — ${['create', 'change', 'unchanged', 'conflict', 'error', 'not-validated'].map((a) => `${n(a)} ${a}`).join(', ')}.`,
      dry.planHash && dry.planHash !== plan.hash ? h('span', { class: 'bad' }, ' It was run on another version of the plan.') : null));
  } else {
    sec.append(h('p', { class: 'muted' }, 'This plan has not been dry-run.'));
  }
  if (config.dryRun) {
    const out = h('div', { role: 'status' });
    const btn = h('button', { type: 'button', onclick: async () => {
      btn.disabled = true;
      out.textContent = 'Running the server-side dry run…';
      try {
        await post(`plans/${encodeURIComponent(plan.id)}/dryrun`);
        window.dispatchEvent(new HashChangeEvent('hashchange'));
      } catch (err) {
        out.replaceChildren(notice('error', err.message));
        btn.disabled = false;
      }
    } }, 'Run a dry run now');
    sec.append(btn, out);
  }
  return sec;
}

// applySection asks for the plan's hash, typed, before it offers to apply.
function applySection(plan) {
  const input = h('input', { id: 'confirm-hash', autocomplete: 'off', spellcheck: 'false', size: 72, 'aria-describedby': 'confirm-help', placeholder: 'sha256:…' });
  const btn = h('button', { type: 'submit', class: 'danger', disabled: true }, 'Apply this plan');
  const out = h('div', { role: 'status' });
  input.addEventListener('input', () => { btn.disabled = input.value.trim() !== plan.hash; });
  const form = h('form', { class: 'apply', onsubmit: async (e) => {
    e.preventDefault();
    if (input.value.trim() !== plan.hash) return;
    btn.disabled = true;
    out.textContent = 'Applying…';
    try {
      const rep = await post(`plans/${encodeURIComponent(plan.id)}/apply`, {}, { planID: plan.id, planHash: input.value.trim() });
      out.replaceChildren(h('p', {}, `Apply ${rep.status}: `, (rep.results || []).map((r) => `${r.ref.kind}/${r.ref.name} ${r.outcome}`).join(', ')));
    } catch (err) {
      out.replaceChildren(notice('error', err.message));
      btn.disabled = input.value.trim() !== plan.hash;
    }
  } },
  h('h2', {}, 'Apply'),
  h('p', { id: 'confirm-help' }, 'Applying creates and updates objects in the target (never forced, never deleting). To confirm that this is the plan you reviewed, type its hash:'),
  input, ' ', btn, out);
  return form;
}
