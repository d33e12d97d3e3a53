// Data shaping: pure functions from the API's JSON (docs/wire-schema.md) to
// what the views draw. No DOM here.

import { ms } from './util.js';

// --- coverage of a stream over time ---

// Segment kinds of a coverage bar, in the order of precedence when two
// overlap (the later wins).
export const SEG = Object.freeze({
  BEFORE: 'before', // before the stream's first complete baseline
  COVERED: 'covered',
  UNOBSERVED: 'unobserved', // after the stream's last evidence of continuity
  GAP: 'gap', // continuity lost: changes may be missing
  UNAVAILABLE: 'unavailable', // the stream could not be read (403, resource removed)
});
const RANK = { before: 0, covered: 1, unobserved: 2, gap: 3, unavailable: 4 };

// coverageSegments turns a stream's timeline records (baseline, gap and
// coverage_change records, any order) and the end of its evidence into
// segments {from, to, kind, reason} (epoch ms) over [start, end], and the
// marks of its baselines {at, id, reason, items}. evidenceUntil is the last
// time the stream vouched for (NaN: none): after it time is "not yet
// observed", never covered.
export function coverageSegments(records, { start, end, evidenceUntil }) {
  const recs = [...records].sort((a, b) => ms(a.observedAt) - ms(b.observedAt));
  const intervals = []; // {from, to, kind, reason}
  const baselines = [];
  const ends = []; // times of complete baselines
  for (const r of recs) {
    if (r.type === 'baseline' && r.baseline && r.baseline.phase === 'end') {
      const at = ms(r.observedAt);
      ends.push(at);
      baselines.push({ at, id: r.baseline.id || r.baselineID, reason: r.baseline.reason || '', items: r.baseline.itemCount || 0, closesGap: r.baseline.closesGap || '' });
    }
  }
  const nextEnd = (t) => { for (const e of ends) if (e >= t) return e; return NaN; };
  const firstEnd = ends.length ? ends[0] : NaN;
  const ev = Number.isNaN(evidenceUntil) || evidenceUntil === undefined ? NaN : evidenceUntil;
  // Covered from the first complete baseline to the last evidence.
  if (!Number.isNaN(firstEnd)) {
    const to = Number.isNaN(ev) ? firstEnd : Math.max(ev, firstEnd);
    intervals.push({ from: firstEnd, to, kind: SEG.COVERED, reason: 'covered: a complete baseline, no gap since, and evidence after' });
  }
  intervals.push({ from: -Infinity, to: Number.isNaN(firstEnd) ? Infinity : firstEnd, kind: SEG.BEFORE, reason: 'before the first complete baseline: not recorded' });
  const lastKnown = Number.isNaN(ev) ? (Number.isNaN(firstEnd) ? -Infinity : firstEnd) : ev;
  intervals.push({ from: lastKnown, to: Infinity, kind: SEG.UNOBSERVED, reason: 'not yet observed: no evidence of continuity after this' });
  let unavailableSince = NaN;
  let unavailableReason = '';
  for (const r of recs) {
    const at = ms(r.observedAt);
    if (r.type === 'gap' && r.gap) {
      const from = ms(r.gap.from);
      const detected = Number.isNaN(ms(r.gap.to)) ? at : ms(r.gap.to);
      const until = nextEnd(detected);
      intervals.push({ from: Number.isNaN(from) ? at : from, to: Number.isNaN(until) ? Infinity : until, kind: SEG.GAP, reason: `gap: ${r.gap.reason || 'continuity lost'}; changes in it may be missing`, gap: r });
    } else if (r.type === 'coverage_change' && r.coverage) {
      if (!r.coverage.available && Number.isNaN(unavailableSince)) {
        unavailableSince = at;
        unavailableReason = r.coverage.reason || '';
      } else if (r.coverage.available && !Number.isNaN(unavailableSince)) {
        const until = nextEnd(at);
        intervals.push({ from: unavailableSince, to: Number.isNaN(until) ? Infinity : until, kind: SEG.UNAVAILABLE, reason: `unavailable: ${unavailableReason}` });
        unavailableSince = NaN;
      }
    }
  }
  if (!Number.isNaN(unavailableSince)) {
    intervals.push({ from: unavailableSince, to: Infinity, kind: SEG.UNAVAILABLE, reason: `unavailable: ${unavailableReason}` });
  }
  return { segments: paint(intervals, start, end), baselines };
}

// paint flattens overlapping intervals into consecutive segments over
// [start, end], the highest-ranked kind winning where they overlap.
function paint(intervals, start, end) {
  const cuts = new Set([start, end]);
  for (const iv of intervals) {
    if (iv.from > start && iv.from < end) cuts.add(iv.from);
    if (iv.to > start && iv.to < end) cuts.add(iv.to);
  }
  const xs = [...cuts].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i + 1 < xs.length; i++) {
    const a = xs[i];
    const b = xs[i + 1];
    const mid = (a + b) / 2;
    let best = null;
    for (const iv of intervals) {
      if (iv.from <= mid && mid < iv.to && (!best || RANK[iv.kind] >= RANK[best.kind])) best = iv;
    }
    const kind = best ? best.kind : SEG.UNOBSERVED;
    const last = out[out.length - 1];
    if (last && last.kind === kind && last.reason === (best && best.reason)) last.to = b;
    else out.push({ from: a, to: b, kind, reason: best ? best.reason : '', gap: best && best.gap });
  }
  return out;
}

// --- the timeline: objects as rows, changes as marks ---

// Mark codes of a timeline row.
export const MARK = Object.freeze({ ADDED: 0, MODIFIED: 1, DELETED: 2, RELIST: 3, INFERRED: 4 });
export const MARK_NAMES = ['added', 'modified', 'deleted', 'seen by a relist', 'inferred deletion'];

// markOf classifies an event record: a real watch event by its type, a
// relist (baseline) item, or an inferred deletion.
export function markOf(r) {
  if (r.inferred) return MARK.INFERRED;
  if (r.synthetic || r.baselineID) return MARK.RELIST;
  if (r.watchType === 'DELETED') return MARK.DELETED;
  if (r.watchType === 'ADDED') return MARK.ADDED;
  return MARK.MODIFIED;
}

// TimelineData accumulates records page by page (add), then builds rows
// (build): one per object, grouped by kind, then namespace. Marks are kept
// in typed arrays so that 100,000 of them cost little memory and draw fast.
export class TimelineData {
  constructor() {
    this.objects = new Map(); // key -> object row
    this.gaps = new Map(); // streamID -> [{from, to, reason}]
    this.dirty = new Set(); // objects with marks added since the last build
    this.gapsChanged = false;
    this.count = 0;
    this.lastSeq = 0; // the newest record's ingestSeq: where the change feed resumes
    this.min = Infinity;
    this.max = -Infinity;
  }

  add(records) {
    for (const r of records) {
      const t = ms(r.observedAt);
      if (r.ingestSeq > this.lastSeq) this.lastSeq = r.ingestSeq;
      if (r.type === 'gap' && r.gap) {
        const from = ms(r.gap.from);
        const to = ms(r.gap.to);
        const list = this.gaps.get(r.streamID) || [];
        list.push({ from: Number.isNaN(from) ? t : from, to: Number.isNaN(to) ? t : Math.max(to, t), reason: r.gap.reason || '', streamID: r.streamID });
        this.gaps.set(r.streamID, list);
        this.gapsChanged = true;
        this.extend(t);
        continue;
      }
      if (r.type !== 'event' || !r.resource || !r.resource.name) continue;
      const ref = r.resource;
      const key = `${ref.kind || ref.resource}/${ref.namespace || ''}/${ref.name}`;
      let o = this.objects.get(key);
      if (!o) {
        o = { key, kind: ref.kind || ref.resource, group: ref.group || '', resource: ref.resource, namespace: ref.namespace || '', name: ref.name, clusterID: r.clusterID, streams: [], rt: [], rm: [], t: null, m: null, n: 0 };
        this.objects.set(key, o);
      }
      if (r.streamID && !o.streams.includes(r.streamID)) o.streams.push(r.streamID);
      o.rt.push(t);
      o.rm.push(markOf(r));
      o.n++;
      this.dirty.add(o);
      this.count++;
      this.extend(t);
    }
  }

  extend(t) {
    if (Number.isNaN(t)) return;
    if (t < this.min) this.min = t;
    if (t > this.max) this.max = t;
  }

  // build returns the objects sorted by kind, namespace and name, each with
  // its marks sorted by time in typed arrays, and the gaps of its streams.
  // Only objects with new marks are laid out again.
  build() {
    const rows = [...this.objects.values()];
    rows.sort((a, b) => cmp(a.kind, b.kind) || cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
    for (const o of this.dirty) {
      const idx = o.rt.map((_, i) => i).sort((i, j) => o.rt[i] - o.rt[j]);
      o.t = new Float64Array(idx.length);
      o.m = new Uint8Array(idx.length);
      idx.forEach((k, i) => { o.t[i] = o.rt[k]; o.m[i] = o.rm[k]; });
      const last = o.m[o.m.length - 1];
      o.alive = last !== MARK.DELETED && last !== MARK.INFERRED;
    }
    if (this.gapsChanged || this.dirty.size) {
      for (const o of this.gapsChanged ? rows : this.dirty) {
        o.gaps = [];
        for (const s of o.streams) o.gaps.push(...(this.gaps.get(s) || []));
      }
    }
    this.dirty.clear();
    this.gapsChanged = false;
    return rows;
  }
}

function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }

// treeRows lays objects out as the rows of a kind / namespace / name tree:
// a header row per kind and per namespace (unless collapsed), then the
// objects that match the filter (every space-separated word must occur in
// "kind namespace/name", case-insensitively).
export function treeRows(objects, { filter = '', collapsed = new Set() } = {}) {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const rows = [];
  let kind = null;
  let ns = null;
  let kindRow = null;
  let nsRow = null;
  for (const o of objects) {
    if (words.length) {
      const hay = `${o.kind} ${o.namespace}/${o.name}`.toLowerCase();
      if (!words.every((w) => hay.includes(w))) continue;
    }
    if (o.kind !== kind) {
      kind = o.kind;
      ns = null;
      kindRow = { type: 'kind', label: kind, key: `k:${kind}`, depth: 0, count: 0, gaps: [], streams: new Set() };
      rows.push(kindRow);
    }
    if (o.namespace !== ns) {
      ns = o.namespace;
      nsRow = { type: 'namespace', label: ns || '(cluster scope)', key: `n:${kind}/${ns}`, depth: 1, count: 0, gaps: [], streams: new Set(), hidden: collapsed.has(kindRow.key) };
      if (!nsRow.hidden) rows.push(nsRow);
    }
    kindRow.count++;
    nsRow.count++;
    for (const s of o.streams) {
      if (!kindRow.streams.has(s)) { kindRow.streams.add(s); kindRow.gaps.push(...o.gaps.filter((g) => g.streamID === s)); }
      if (!nsRow.streams.has(s)) { nsRow.streams.add(s); nsRow.gaps.push(...o.gaps.filter((g) => g.streamID === s)); }
    }
    if (!collapsed.has(kindRow.key) && !collapsed.has(nsRow.key)) rows.push({ type: 'object', label: o.name, key: o.key, depth: 2, object: o, gaps: o.gaps });
  }
  return rows;
}

// firstAtOrAfter is the index of the first time >= t in a sorted array.
export function firstAtOrAfter(ts, t) {
  let lo = 0;
  let hi = ts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ts[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// --- the timeline's condition: find's intervals per row ---

// objectKey names an object across streams and API versions, as find's
// answer does (storage.ObjectID): cluster, group, resource, namespace, name.
export function objectKey(o) {
  return [o.clusterID || '', o.group || '', o.resource || '', o.namespace || '', o.name || ''].join('/');
}

// foundIntervals turns find's answer (materialize.Found) into the
// intervals of each object by objectKey, sorted by start: {from, to} in
// epoch ms (to NaN while the interval is open: still true at the stream's
// last evidence), startUnknown and endUnknown (why that end is unknown, ''
// when known), and the stream. An object recorded by two streams gets the
// intervals of both.
export function foundIntervals(found) {
  const out = new Map();
  for (const fo of (found && found.objects) || []) {
    const key = objectKey(fo.object);
    const list = out.get(key) || [];
    for (const iv of fo.intervals || []) {
      list.push({ from: ms(iv.from), to: ms(iv.to), startUnknown: iv.startUnknown || '', endUnknown: iv.endUnknown || '', streamID: fo.streamID });
    }
    list.sort((a, b) => a.from - b.from);
    out.set(key, list);
  }
  return out;
}

// --- object history ---

// who says who made a version: a user from the audit log (exact, or scored
// with its confidence), else the field managers of its changes (a client,
// not a user), else nobody: relist items and inferred deletions are no one's
// writes.
export function who(version) {
  if (!version) return { label: '', kind: 'none' };
  if (version.origin === 'inferred') return { label: 'nobody known: inferred deletion', kind: 'inferred', detail: 'absent from the relist after a gap; deleted at some time in the gap' };
  const prov = version.provenance || [];
  if (prov.length) {
    const p = [...prov].sort((a, b) => (b.confidence || 0) - (a.confidence || 0))[0];
    const exact = p.confidence >= 1 && version.origin === 'watch';
    const pct = `${Math.round((p.confidence || 0) * 100)}%`;
    return {
      label: p.user || '(unknown user)',
      kind: exact ? 'exact' : 'scored',
      // A relist item is no one's write: the audit log says whose write it
      // shows, seen through the relist, never exactly.
      tag: exact ? 'audit: exact' : version.origin === 'baseline' ? `audit: seen through the relist, ${pct}` : `audit: scored ${pct}`,
      detail: [p.verb, p.userAgent, (p.sourceIPs || []).join(', '), p.rule, p.auditID && `audit ID ${p.auditID}`].filter(Boolean).join(' · '),
    };
  }
  if (version.origin === 'baseline') return { label: 'nobody known: seen by a relist', kind: 'relist', detail: 'a list result says the object was like this by then, not who made it so' };
  const managers = new Map();
  for (const c of version.changes || []) {
    if (c.fieldManager && c.fieldManager.manager) managers.set(c.fieldManager.manager, c.fieldManager);
  }
  if (!managers.size) for (const m of version.fieldManagers || []) managers.set(m.manager, m);
  if (managers.size) {
    const ms_ = [...managers.values()];
    return { label: ms_.map((m) => m.manager).join(', '), kind: 'manager', tag: 'field manager', detail: ms_.map((m) => `${m.manager} (${m.operation || ''}${m.subresource ? ' ' + m.subresource : ''})`).join(', ') + ' — names a client, not a user' };
  }
  return { label: 'unknown', kind: 'unknown', detail: 'no audit match and no field manager for this change' };
}

// --- text: YAML and a line diff ---

// toYAML renders a JSON value as YAML (block style, keys in their order).
export function toYAML(v, indent = 0) {
  const pad = ' '.repeat(indent);
  if (Array.isArray(v)) {
    if (!v.length) return '[]';
    return v.map((x) => {
      if (x && typeof x === 'object' && !(Array.isArray(x) && !x.length) && Object.keys(x).length) {
        const inner = toYAML(x, indent + 2);
        return `${pad}- ${inner.trimStart()}`;
      }
      return `${pad}- ${scalar(x)}`;
    }).join('\n');
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (!keys.length) return '{}';
    return keys.map((k) => {
      const x = v[k];
      const key = /^[A-Za-z0-9_./-]+$/.test(k) && !/^(true|false|null|yes|no|on|off|~|[0-9.+-].*)$/i.test(k) ? k : JSON.stringify(k);
      if (x && typeof x === 'object' && (Array.isArray(x) ? x.length : Object.keys(x).length)) {
        return `${pad}${key}:\n${toYAML(x, Array.isArray(x) ? indent : indent + 2)}`;
      }
      return `${pad}${key}: ${x && typeof x === 'object' ? (Array.isArray(x) ? '[]' : '{}') : scalar(x, indent + 2)}`;
    }).join('\n');
  }
  return pad + scalar(v, indent);
}

function scalar(x, indent = 0) {
  if (x === null || x === undefined) return 'null';
  if (typeof x === 'number' || typeof x === 'boolean') return String(x);
  const s = String(x);
  if (s.includes('\n')) return '|-\n' + s.split('\n').map((l) => ' '.repeat(indent) + l).join('\n');
  if (s === '' || /^[\s]|[\s]$|^[-?:,[\]{}#&*!|>'"%@`]|: | #|^(true|false|null|yes|no|on|off|~)$|^[0-9.+-]/i.test(s)) return JSON.stringify(s);
  return s;
}

// lineDiff aligns two texts line by line (longest common subsequence) for a
// side-by-side view: rows {a, b, op} with op 'same', 'del' (only in a), 'add'
// (only in b) or 'chg' (a line replaced). Large texts fall back to a cheaper
// alignment so that the page never freezes.
export function lineDiff(aText, bText) {
  const a = aText.split('\n');
  const b = bText.split('\n');
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const am = a.slice(pre, a.length - suf);
  const bm = b.slice(pre, b.length - suf);
  const rows = a.slice(0, pre).map((l) => ({ a: l, b: l, op: 'same' }));
  if (am.length * bm.length > 4e6) {
    for (let i = 0; i < Math.max(am.length, bm.length); i++) rows.push({ a: am[i], b: bm[i], op: am[i] === undefined ? 'add' : bm[i] === undefined ? 'del' : 'chg' });
  } else {
    const n = am.length;
    const m = bm.length;
    const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = am[i] === bm[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    let i = 0;
    let j = 0;
    const dels = [];
    const adds = [];
    const flush = () => {
      const k = Math.max(dels.length, adds.length);
      for (let x = 0; x < k; x++) rows.push({ a: dels[x], b: adds[x], op: dels[x] === undefined ? 'add' : adds[x] === undefined ? 'del' : 'chg' });
      dels.length = 0;
      adds.length = 0;
    };
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) { flush(); rows.push({ a: am[i], b: bm[j], op: 'same' }); i++; j++; }
      else if (j < m && (i >= n || L[i][j + 1] >= L[i + 1][j])) adds.push(bm[j++]);
      else dels.push(am[i++]);
    }
    flush();
  }
  for (const l of a.slice(a.length - suf)) rows.push({ a: l, b: l, op: 'same' });
  return rows;
}

// fmtValue shows a JSON value of a field change compactly.
export function fmtValue(v) {
  if (v === undefined) return '';
  const s = JSON.stringify(v);
  return s.length > 120 ? s.slice(0, 119) + '…' : s;
}
