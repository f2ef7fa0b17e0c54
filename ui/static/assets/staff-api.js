// staff-api.js — calls for the kitchen display and the staff console.
//
// The login token lives in sessionStorage (gone when the tab closes) and
// goes out as "Authorization: Bearer" on every call, so no write relies on
// a cookie. The login also sets an HttpOnly cookie on this origin, used
// only by <img src="/api/staff/qr?…">, which cannot send headers.
//
// Reads and PUTs that fail on the network move to another node and try
// again; POST, PATCH and DELETE move on for the next call but are not
// resent by themselves (opening a table twice is worse than a message).

import { createNodePool, fetchWithTimeout, safeStorage } from './cluster.js';
import { getLang } from './i18n.js';

const TOKEN_KEY = 'masterorder.staffToken';

export class ApiError extends Error {
  constructor(status, reasonCode, message, body) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.reasonCode = reasonCode;
    this.body = body;
  }
}

export function createStaffApi(opts) {
  const o = opts || {};
  const origin = globalThis.location ? globalThis.location.origin : '';
  const tokens = safeStorage(globalThis.sessionStorage);
  const pool = o.pool || createNodePool({ origin, storage: safeStorage(globalThis.localStorage) });
  const unauthorized = [];
  const staleListeners = [];
  const timeoutMs = o.timeoutMs || 8000;
  let lastServerSkew = 0;

  function token() {
    return tokens.getItem(TOKEN_KEY) || '';
  }

  function setToken(t) {
    if (t) tokens.setItem(TOKEN_KEY, t);
    else tokens.removeItem(TOKEN_KEY);
  }

  function headers(extra) {
    const h = { Accept: 'application/json', 'Accept-Language': getLang() === 'en' ? 'en' : 'ja' };
    const t = token();
    if (t) h.Authorization = 'Bearer ' + t;
    return Object.assign(h, extra || {});
  }

  async function parse(res) {
    const text = await res.text().catch(() => '');
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch (_) {
      return null;
    }
  }

  function noteDate(res) {
    // the server's wall clock, to show order ages right when this tablet's
    // clock is off (only readable same-origin)
    const d = Date.parse(res.headers.get('Date') || '');
    if (!Number.isNaN(d)) lastServerSkew = d - Date.now();
  }

  // A node without a quorum still answers reads from its own replica,
  // marked X-MasterOrder-Stale: true; the apps say they are offline.
  function noteStale(res) {
    const v = res.headers.get('X-MasterOrder-Stale');
    if (v === null) return;
    for (const f of staleListeners) f(v === 'true');
  }

  async function request(method, path, body, ro) {
    const retry = method === 'GET' || method === 'PUT';
    const tries = retry ? Math.max(2, pool.size()) : 1;
    let lastErr = null;
    for (let i = 0; i < tries; i++) {
      const base = pool.current();
      let res;
      try {
        res = await fetchWithTimeout(
          globalThis.fetch.bind(globalThis),
          base + path,
          {
            method,
            headers: headers(body !== undefined ? { 'Content-Type': 'application/json' } : null),
            body: body !== undefined ? JSON.stringify(body) : undefined,
            cache: 'no-store',
            credentials: base === origin ? 'same-origin' : 'omit',
          },
          (ro && ro.timeoutMs) || timeoutMs,
        );
      } catch (err) {
        lastErr = err;
        pool.failed(base);
        pool.refreshIfStale();
        continue;
      }
      if (base === origin) noteDate(res);
      noteStale(res);
      if (res.status >= 500 && retry && i + 1 < tries) {
        pool.failed(base);
        continue;
      }
      pool.ok(base);
      const data = res.status === 204 ? null : await parse(res);
      if (res.status === 401 && !(ro && ro.login)) {
        setToken('');
        for (const f of unauthorized) f();
      }
      if (!res.ok) {
        const code = (data && data.reasonCode) || 'HTTP_' + res.status;
        throw new ApiError(res.status, code, (data && data.message) || res.status + ' ' + res.statusText, data);
      }
      return data;
    }
    const e = new ApiError(0, 'NETWORK_ERROR', getLang() === 'en' ? 'Could not reach the store server.' : 'サーバーに接続できませんでした。', null);
    e.cause = lastErr;
    throw e;
  }

  let lastRole = '';

  // login goes to this page's own origin, so the QR image cookie is set
  // where the images are loaded from.
  async function login(password) {
    const res = await fetch(origin + '/api/staff/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'Accept-Language': getLang() === 'en' ? 'en' : 'ja' },
      body: JSON.stringify({ password }),
      credentials: 'same-origin',
      cache: 'no-store',
    });
    const data = await parse(res);
    if (!res.ok || !data || !data.token) {
      throw new ApiError(res.status, (data && data.reasonCode) || 'HTTP_' + res.status, (data && data.message) || '', data);
    }
    setToken(data.token);
    lastRole = data.role || 'manager';
    return data.token;
  }

  async function logout() {
    try {
      await request('POST', '/api/staff/logout');
    } catch (_) {
      // the token is dropped here either way
    }
    setToken('');
  }

  return {
    token,
    // role of the last login here: 'manager' or 'kitchen'
    role: () => lastRole,
    setToken,
    login,
    logout,
    request,
    get: (p, ro) => request('GET', p, undefined, ro),
    post: (p, b) => request('POST', p, b),
    put: (p, b) => request('PUT', p, b),
    patch: (p, b) => request('PATCH', p, b),
    del: (p) => request('DELETE', p),
    onUnauthorized: (f) => unauthorized.push(f),
    onStale: (f) => staleListeners.push(f),
    serverNow: () => Date.now() + lastServerSkew,
    pool,
  };
}

// menuBody is the PUT /api/staff/menu/{menuId} body for an item, with
// changes applied: exactly the documented fields, since the server rejects
// unknown ones.
export function menuBody(item, changes) {
  const it = Object.assign({}, item, changes || {});
  return {
    name: String(it.name || ''),
    nameEn: String(it.nameEn || ''),
    category: String(it.category || ''),
    price: Number(it.price) || 0,
    available: it.available !== false,
    // The place in the menu and the toppings' English names go back as
    // they were: a body without them reset both (and a kitchen login's
    // sold-out toggle, which must change nothing else, was refused).
    sortOrder: Number(it.sortOrder) || 0,
    toppings: (it.toppings || []).map((t) => ({ toppingId: String(t.toppingId), name: String(t.name || ''), nameEn: String(t.nameEn || ''), price: Number(t.price) || 0 })),
    ...contentBody(it),
    // order lines (issue 16): a save or a sold-out toggle keeps them
    station: String(it.station || 'kitchen'),
    optionGroups: (it.optionGroups || []).map((g) => ({
      groupId: String(g.groupId),
      name: String(g.name || ''),
      nameEn: String(g.nameEn || ''),
      min: Number(g.min) || 0,
      max: Number(g.max) || 0,
      names: Object.assign({}, g.names), // other languages: kept through a save
      options: (g.options || []).map((o) => ({ optionId: String(o.optionId), name: String(o.name || ''), nameEn: String(o.nameEn || ''), names: Object.assign({}, o.names), price: Number(o.price) || 0 })),
    })),
  };
}

// contentBody: the item's words, when it has them (an absent field keeps
// what the server has).
function contentBody(it) {
  const out = {};
  if (it.names && typeof it.names === 'object') out.names = it.names;
  if (typeof it.description === 'string') out.description = it.description;
  if (typeof it.descriptionEn === 'string') out.descriptionEn = it.descriptionEn;
  if (Array.isArray(it.allergens)) out.allergens = it.allergens.map(String);
  return out;
}
