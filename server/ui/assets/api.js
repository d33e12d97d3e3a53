// The query API (docs/query-api.md), called relative to the page, so the
// UI works wherever the handler is mounted.

export class APIError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
    this.param = body && body.param;
  }
}

function url(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) { if (v.length) q.set(k, v.join(',')); } else q.set(k, String(v));
  }
  const qs = q.toString();
  return `api/v1/${path}${qs ? '?' + qs : ''}`;
}

// The bearer token, when the server asks for one (a token file, or the
// cluster's TokenReview): kept for this tab only.
const TOKEN_KEY = 'krply-token';
export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token); else sessionStorage.removeItem(TOKEN_KEY);
}
export function hasToken() { return !!sessionStorage.getItem(TOKEN_KEY); }

async function call(method, path, params, body, signal) {
  const init = { method, headers: { Accept: 'application/json' }, signal, credentials: 'same-origin' };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(url(path, params), init);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { message: text.slice(0, 300) }; }
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}

export const get = (path, params, signal) => call('GET', path, params, undefined, signal);
export const post = (path, params, body, signal) => call('POST', path, params, body, signal);

// pages yields every page of a list (items and next), following cursors.
export async function* pages(path, params, signal) {
  let cursor;
  do {
    const page = await get(path, { ...params, cursor }, signal);
    yield page;
    cursor = page.next;
  } while (cursor);
}

// all collects every item of a list.
export async function all(path, params, signal) {
  const out = [];
  for await (const p of pages(path, params, signal)) out.push(...(p.items || []));
  return out;
}

// whole reads every page of a snapshot or a diff (objects paged, the rest
// on every page) and puts them together: complete only when every page is,
// gaps when any page has them, every page's warnings once.
export async function whole(path, params, signal) {
  let out;
  // Pages asked for (limit): a request without asks for the whole answer,
  // which a server refuses beyond its page size.
  for await (const p of pages(path, { ...params, limit: 1000 }, signal)) {
    if (!out) { out = { ...p, objects: [...(p.objects || [])], warnings: [...(p.warnings || [])] }; continue; }
    out.objects.push(...(p.objects || []));
    if ('complete' in p) out.complete = out.complete && p.complete;
    if ('hasGaps' in p) out.hasGaps = out.hasGaps || p.hasGaps;
    for (const w of p.warnings || []) if (!out.warnings.includes(w)) out.warnings.push(w);
  }
  delete out.next;
  return out;
}

// follow reads the change feed (GET api/v1/watch, Server-Sent Events) from
// the record after cursor, calling onRecord for each record and onState
// with what the feed is doing, until signal aborts. It reads the stream
// with fetch rather than EventSource so that the bearer token goes along,
// and resumes after a lost connection from the last record's id.
export async function follow(params, cursor, onRecord, onState, signal) {
  let last = String(cursor);
  let delay = 500;
  while (!signal.aborted) {
    const headers = { Accept: 'text/event-stream' };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    try {
      onState('connecting…');
      const res = await fetch(url('watch', { ...params, cursor: last }), { headers, signal, credentials: 'same-origin' });
      if (!res.ok) {
        let body = null;
        try { body = await res.json(); } catch { /* not JSON */ }
        throw new APIError(res.status, body);
      }
      onState('following new records');
      delay = 500;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const ev = { event: 'message', data: [], id: '' };
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue; // a keepalive
            const i = line.indexOf(':');
            const field = i < 0 ? line : line.slice(0, i);
            const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
            if (field === 'data') ev.data.push(val);
            else if (field === 'event') ev.event = val;
            else if (field === 'id') ev.id = val;
          }
          if (ev.event === 'error') {
            let msg = ev.data.join('\n');
            try { msg = JSON.parse(msg).message; } catch { /* the raw text */ }
            throw new Error(msg);
          }
          if (ev.event === 'record' && ev.data.length) {
            onRecord(JSON.parse(ev.data.join('\n')));
            if (ev.id) last = ev.id;
          }
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof APIError && err.status >= 400 && err.status < 500) {
        onState(`unavailable: ${err.message}`);
        return;
      }
      onState(`reconnecting after: ${err.message || err}`);
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10000);
  }
}

// resourceParam names a resource as the API takes it: plural.group.
export function resourceParam(group, resource) { return group ? `${resource}.${group}` : resource; }

// uiConfig is what the server allows the UI (apply, dry run, saving), read
// once from ui-config.json beside the page.
let configPromise;
export function uiConfig() {
  if (!configPromise) {
    configPromise = fetch('ui-config.json', { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
      .then((r) => (r.ok ? r.json() : {}))
      .catch(() => ({}));
  }
  return configPromise;
}
