// cluster.js — the nodes a browser can talk to.
//
// Every node serves the whole API, so when the node that served the page
// dies a client carries on against another one. The pool starts with the
// page's own origin, learns the other nodes from GET /api/cluster/status
// (nodes[].httpAddr), remembers them in storage for the next page load, and
// moves to the next node when the current one fails.
//
// No DOM here: the module runs under Node for the SDK tests.

const DEFAULT_STORAGE_KEY = 'masterorder.nodes';

// nodeBase turns a node's httpAddr ("10.0.0.2:8080", ":8080",
// "0.0.0.0:8080", "http://host:8080") into a base URL without a trailing
// slash, borrowing the scheme and, for wildcard hosts, the host name from
// origin. It returns '' for something unusable.
export function nodeBase(httpAddr, origin) {
  if (typeof httpAddr !== 'string' || httpAddr.trim() === '') return '';
  let addr = httpAddr.trim();
  let originUrl = null;
  try {
    originUrl = origin ? new URL(origin) : null;
  } catch (_) {
    originUrl = null;
  }
  const scheme = originUrl ? originUrl.protocol : 'http:';
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(addr)) {
    if (addr.startsWith(':')) addr = (originUrl ? originUrl.hostname : 'localhost') + addr;
    addr = scheme + '//' + addr;
  }
  let u;
  try {
    u = new URL(addr);
  } catch (_) {
    return '';
  }
  const wildcard = ['0.0.0.0', '[::]', '::', ''];
  if (wildcard.includes(u.hostname) && originUrl) u.hostname = originUrl.hostname;
  return u.origin;
}

// fetchWithTimeout is fetch with an upper bound on the wait. A node that is
// switched off does not answer at all; without a bound a request hangs for
// the browser's whole TCP timeout.
export function fetchWithTimeout(fetchFn, url, init, ms, timers) {
  const t = timers || globalThis;
  const Ctl = globalThis.AbortController;
  if (!ms || ms <= 0) return fetchFn(url, init);
  const ctl = Ctl ? new Ctl() : null;
  let timer = null;
  const timeout = new Promise((_, reject) => {
    timer = t.setTimeout(() => {
      if (ctl) ctl.abort();
      const err = new Error('timeout after ' + ms + ' ms: ' + url);
      err.name = 'TimeoutError';
      reject(err);
    }, ms);
  });
  const req = fetchFn(url, ctl ? Object.assign({}, init, { signal: ctl.signal }) : init);
  return Promise.race([req, timeout]).finally(() => t.clearTimeout(timer));
}

function memoryStorage() {
  const m = new Map();
  return {
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => m.set(k, String(v)),
    removeItem: (k) => m.delete(k),
  };
}

// safeStorage wraps a Web Storage object whose calls may throw (private
// mode, full quota, blocked cookies) so that failing storage degrades to
// memory instead of breaking the page.
export function safeStorage(s) {
  const mem = memoryStorage();
  if (!s) return mem;
  return {
    getItem(k) {
      try {
        return s.getItem(k);
      } catch (_) {
        return mem.getItem(k);
      }
    },
    setItem(k, v) {
      try {
        s.setItem(k, v);
      } catch (_) {
        mem.setItem(k, v);
      }
    },
    removeItem(k) {
      try {
        s.removeItem(k);
      } catch (_) {
        mem.removeItem(k);
      }
    },
  };
}

// createNodePool keeps the list of base URLs, the page origin first.
//
//   current()   the base URL to use now (the last one that worked)
//   failed(b)   b did not answer: move on to the next node
//   ok(b)       b answered: stay with it
//   refresh()   ask the cluster for its nodes (tries every known node)
//   list()      all known base URLs
export function createNodePool(opts) {
  const o = opts || {};
  const origin = o.origin || '';
  const fetchFn = o.fetch || ((...a) => globalThis.fetch(...a));
  const storage = o.storage || safeStorage(null);
  const key = o.storageKey || DEFAULT_STORAGE_KEY;
  const now = o.now || Date.now;
  const timeoutMs = o.timeoutMs || 3000;
  const staleMs = o.staleMs || 30000;
  const timers = o.timers;

  let bases = [origin];
  let cur = 0;
  let lastRefresh = -Infinity;
  let refreshing = null;

  try {
    const saved = JSON.parse(storage.getItem(key) || '[]');
    if (Array.isArray(saved)) setOthers(saved);
  } catch (_) {
    // a broken saved list is just forgotten
  }

  function setOthers(others) {
    const keep = bases[cur];
    const next = [origin];
    for (const b of others) {
      if (typeof b === 'string' && b && !next.includes(b)) next.push(b);
    }
    bases = next;
    const i = bases.indexOf(keep);
    cur = i >= 0 ? i : 0;
  }

  function current() {
    return bases[cur];
  }

  function failed(base) {
    if (bases[cur] === base && bases.length > 1) cur = (cur + 1) % bases.length;
  }

  function ok(base) {
    const i = bases.indexOf(base);
    if (i >= 0) cur = i;
  }

  // order: the current node, then the rest in list order.
  function rotation() {
    return bases.slice(cur).concat(bases.slice(0, cur));
  }

  async function ask(base) {
    const res = await fetchWithTimeout(
      fetchFn,
      base + '/api/cluster/status',
      { headers: { Accept: 'application/json' }, cache: 'no-store' },
      timeoutMs,
      timers,
    );
    if (!res.ok) throw new Error('status ' + res.status);
    return res.json();
  }

  function learn(status) {
    const nodes = (status && Array.isArray(status.nodes) && status.nodes) || [];
    const others = [];
    // A page loaded over HTTPS (staff, kitchen) talks to the other boxes'
    // HTTPS ports: the browser would block plain-HTTP calls from it, and
    // they would carry tokens in clear.
    const secure = typeof origin === 'string' && origin.startsWith('https:');
    for (const n of nodes) {
      const b = nodeBase(n && (secure ? n.httpsAddr : n.httpAddr), origin);
      if (b && b !== origin && !others.includes(b)) others.push(b);
    }
    setOthers(others);
    storage.setItem(key, JSON.stringify(others));
  }

  // refresh resolves to the status it got (null when no node answered).
  function refresh() {
    if (refreshing) return refreshing;
    refreshing = (async () => {
      for (const b of rotation()) {
        try {
          const st = await ask(b);
          learn(st);
          lastRefresh = now();
          return st;
        } catch (_) {
          // try the next one
        }
      }
      // nobody answered: ask again in a few seconds, not on every call
      lastRefresh = now() - staleMs + 5000;
      return null;
    })().finally(() => {
      refreshing = null;
    });
    return refreshing;
  }

  function refreshIfStale() {
    if (now() - lastRefresh < staleMs) return Promise.resolve(null);
    return refresh();
  }

  return {
    current,
    failed,
    ok,
    refresh,
    refreshIfStale,
    learn,
    list: () => bases.slice(),
    size: () => bases.length,
  };
}
