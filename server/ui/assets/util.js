// Shared helpers: building DOM, formatting times, the state in the URL.

// h builds an element: h('a', {href: '#'}, 'text', child, ...). Attributes
// starting with "on" are listeners; "class" and "dataset" as expected;
// false, null and undefined attributes and children are skipped.
export function h(tag, attrs, ...children) {
  const e = tag.includes(':svg') ? document.createElementNS('http://www.w3.org/2000/svg', tag.replace(':svg', '')) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    // Through the CSSOM: the Content-Security-Policy forbids style attributes.
    else if (k === 'style') { if (typeof v === 'string') e.style.cssText = v; else Object.assign(e.style, v); }
    else if (k === 'value' && 'value' in e) e.value = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children) {
    if (c === false || c === null || c === undefined) continue;
    if (Array.isArray(c)) append(e, c);
    else e.append(c instanceof Node ? c : String(c));
  }
}

// svg builds an SVG element.
export function svg(tag, attrs, ...children) { return h(tag + ':svg', attrs, ...children); }

// --- times ---

let zone = 'local';

// setZone chooses the zone times are shown in: 'local' or an IANA name.
export function setZone(z) { zone = z || 'local'; }
export function currentZone() { return zone; }

const ZERO = '0001-01-01T00:00:00Z';

// ms parses an RFC 3339 time (nanoseconds allowed) to epoch milliseconds;
// NaN for an absent or zero time.
export function ms(t) {
  if (t === undefined || t === null || t === '' || t === ZERO) return NaN;
  if (typeof t === 'number') return t;
  return Date.parse(t);
}

const formatters = new Map();
function formatter(withDate) {
  const key = zone + withDate;
  let f = formatters.get(key);
  if (!f) {
    const o = { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'short' };
    if (withDate) Object.assign(o, { year: 'numeric', month: '2-digit', day: '2-digit' });
    if (zone !== 'local') o.timeZone = zone;
    f = new Intl.DateTimeFormat('en-CA', o);
    formatters.set(key, f);
  }
  return f;
}

// fmtTime shows a time with its date, seconds, milliseconds and time zone.
export function fmtTime(t, { date = true, millis = true } = {}) {
  const m = ms(t);
  if (Number.isNaN(m)) return '—';
  const parts = formatter(date).formatToParts(new Date(m));
  const get = (type) => (parts.find((p) => p.type === type) || {}).value || '';
  let s = date ? `${get('year')}-${get('month')}-${get('day')} ` : '';
  s += `${get('hour')}:${get('minute')}:${get('second')}`;
  if (millis) s += '.' + String(Math.floor(((m % 1000) + 1000) % 1000)).padStart(3, '0');
  return s + ' ' + get('timeZoneName');
}

// relTime says how long ago (or ahead) t is from now, in words.
export function relTime(t, now = Date.now()) {
  const m = ms(t);
  if (Number.isNaN(m)) return '';
  const d = (now - m) / 1000;
  const a = Math.abs(d);
  let s;
  if (a < 1) s = `${Math.round(a * 1000)} ms`;
  else if (a < 90) s = `${a.toFixed(a < 10 ? 1 : 0)} s`;
  else if (a < 5400) s = `${Math.round(a / 60)} min`;
  else if (a < 172800) s = `${(a / 3600).toFixed(1)} h`;
  else s = `${Math.round(a / 86400)} days`;
  return d >= 0 ? `${s} ago` : `in ${s}`;
}

// span is a duration in words.
export function span(fromMs, toMs) {
  const a = Math.abs(toMs - fromMs) / 1000;
  if (a < 1) return `${Math.round(a * 1000)} ms`;
  if (a < 90) return `${a.toFixed(1)} s`;
  if (a < 5400) return `${(a / 60).toFixed(1)} min`;
  return `${(a / 3600).toFixed(1)} h`;
}

// timeEl is a <time> showing t with its zone; hovering shows how long ago
// it was and the exact RFC 3339 value.
export function timeEl(t, opts) {
  const m = ms(t);
  if (Number.isNaN(m)) return h('span', { class: 'muted' }, '—');
  const e = h('time', { datetime: typeof t === 'string' ? t : new Date(m).toISOString(), tabindex: '0' }, fmtTime(t, opts));
  const title = () => `${relTime(t)} — ${typeof t === 'string' ? t : new Date(m).toISOString()}`;
  e.title = title();
  e.addEventListener('mouseenter', () => { e.title = title(); });
  e.addEventListener('focus', () => { e.title = title(); });
  return e;
}

// toRFC3339 writes epoch milliseconds as an RFC 3339 time in UTC.
export function toRFC3339(m) { return new Date(m).toISOString(); }

// localInputValue renders epoch ms for an <input type=datetime-local> in the
// zone times are shown in.
export function localInputValue(m) {
  if (Number.isNaN(m)) return '';
  if (zone === 'local') {
    const d = new Date(m);
    const p = (n, w = 2) => String(n).padStart(w, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }
  return new Date(m).toISOString().slice(0, 19);
}

// fromLocalInput reads an <input type=datetime-local> value in the zone
// times are shown in.
export function fromLocalInput(v) {
  if (!v) return NaN;
  return zone === 'local' ? new Date(v).getTime() : Date.parse(v + 'Z');
}

// --- the state in the URL: #/<view>?<params> ---

export function parseHash(hash = location.hash) {
  const s = hash.replace(/^#\/?/, '');
  const q = s.indexOf('?');
  const view = (q < 0 ? s : s.slice(0, q)) || 'overview';
  const params = Object.fromEntries(new URLSearchParams(q < 0 ? '' : s.slice(q + 1)));
  return { view, params };
}

export function hashFor(view, params = {}) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') p.set(k, v);
  }
  const qs = p.toString();
  return `#/${view}${qs ? '?' + qs : ''}`;
}

// setParams changes the URL's parameters of the current view without
// rendering it again (history.replaceState): for state a view already
// shows, like the zoom of the timeline.
export function setParams(params) {
  const { view, params: cur } = parseHash();
  const next = hashFor(view, { ...cur, ...params });
  if (next !== location.hash) history.replaceState(null, '', next);
}

// --- objects and streams ---

// objectParams are the URL parameters naming an object.
export function objectParams(ref, clusterID) {
  return { cluster: clusterID || ref.clusterID, group: ref.group || '', resource: ref.resource, namespace: ref.namespace || '', name: ref.name };
}

export function objectLink(ref, clusterID, extra = {}, text) {
  const label = text || `${ref.kind || ref.resource} ${ref.namespace ? ref.namespace + '/' : ''}${ref.name}`;
  return h('a', { href: hashFor('object', { ...objectParams(ref, clusterID), ...extra }) }, label);
}

// streamLabel shows a stream ID without its cluster: group/version/resource[/namespace].
export function streamLabel(id) {
  const parts = String(id).split('/');
  return parts.length > 1 ? parts.slice(1).join('/') : String(id);
}

// streamResource reads the resource and namespace out of a stream ID.
export function parseStreamID(id) {
  const [path] = String(id).split('?');
  const p = path.split('/').map(decodeURIComponent);
  return { clusterID: p[0], group: p[1] === 'core' ? '' : p[1], version: p[2], resource: p[3], namespace: p[4] || '' };
}

export function plural(n, word, many = word + 's') { return `${n.toLocaleString('en')} ${n === 1 ? word : many}`; }

// message shows an error or a notice in a view.
export function notice(kind, ...children) {
  return h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...children);
}

// debounce delays fn until wait ms pass without a call; .cancel() drops a
// pending call.
export function debounce(fn, wait) {
  let t;
  const d = (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), wait); };
  d.cancel = () => clearTimeout(t);
  return d;
}
