// The UI's router: the view and its parameters live in the URL's fragment
// (#/<view>?<params>), so every state can be linked to.

import { h, notice, parseHash, setZone } from './util.js';
import { APIError, setToken, hasToken } from './api.js';
import * as overview from './views/overview.js';
import * as timeline from './views/timeline.js';
import * as object from './views/object.js';
import * as namespace from './views/namespace.js';
import * as diff from './views/diff.js';
import * as plan from './views/plan.js';
import * as why from './views/why.js';

const views = { overview, timeline, object, namespace, diff, plan, why };

let cleanup = null;
let generation = 0;

async function render() {
  const { view, params } = parseHash();
  const root = document.getElementById('view');
  const gen = ++generation;
  if (cleanup) { try { cleanup(); } catch { /* a view's cleanup never stops the next */ } cleanup = null; }
  setZone(params.tz === 'utc' ? 'UTC' : 'local');
  document.getElementById('tz').value = params.tz === 'utc' ? 'UTC' : 'local';
  for (const a of document.querySelectorAll('nav a')) {
    a.setAttribute('href', `#/${a.dataset.view}${params.tz === 'utc' ? '?tz=utc' : ''}`);
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const mod = views[view];
  root.replaceChildren();
  root.dataset.view = view;
  root.dataset.gen = String(gen);
  root.dataset.state = 'loading';
  if (!mod) {
    root.append(notice('error', `No view "${view}". `, h('a', { href: '#/overview' }, 'Go to the overview')));
    root.dataset.state = 'error';
    return;
  }
  document.title = `krply — ${mod.title}`;
  const ctx = { stale: () => gen !== generation };
  try {
    cleanup = (await mod.render(root, params, ctx)) || null;
    if (gen === generation) root.dataset.state = 'ready';
  } catch (err) {
    if (gen !== generation) return;
    if (err instanceof APIError && err.status === 401) {
      root.append(tokenForm());
      root.dataset.state = 'error';
      return;
    }
    root.append(notice('error', h('strong', {}, 'Could not load this view: '), err.message || String(err), err.param ? ` (parameter ${err.param})` : ''));
    root.dataset.state = 'error';
  }
}

// tokenForm asks for the bearer token the server wants; it is sent with
// every API call of this tab.
function tokenForm() {
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'off', size: 60, 'aria-label': 'Bearer token' });
  return h('form', { class: 'notice warn', onsubmit: (e) => { e.preventDefault(); setToken(input.value.trim()); render(); } },
    h('p', {}, h('strong', {}, hasToken() ? 'The server refused this token. ' : 'This server asks for a bearer token. '),
      'Paste one (from its token file, or `kubectl create token` for the cluster\'s TokenReview); it is kept for this tab only.'),
    input, ' ', h('button', { type: 'submit' }, 'Use this token'));
}

// A link to the same view with other parameters keeps the time zone choice.
document.getElementById('tz').addEventListener('change', (e) => {
  const { view, params } = parseHash();
  const p = new URLSearchParams({ ...params });
  if (e.target.value === 'UTC') p.set('tz', 'utc'); else p.delete('tz');
  const qs = p.toString();
  location.hash = `#/${view}${qs ? '?' + qs : ''}`;
});

window.addEventListener('hashchange', render);
// Keyboard: g then a digit switches views, as the nav's access keys do.
let pendingG = false;
window.addEventListener('keydown', (e) => {
  if (e.target.closest('input, textarea, select, [contenteditable]') || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === 'g') { pendingG = true; return; }
  if (pendingG) {
    const a = document.querySelector(`nav a[accesskey="${e.key}"]`);
    if (a) { location.hash = a.getAttribute('href'); e.preventDefault(); }
  }
  pendingG = false;
});
render();
