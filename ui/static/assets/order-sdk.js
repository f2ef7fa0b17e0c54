// order-sdk.js — how a guest's phone places an order without ever placing
// it twice, and without telling the guest "failed" for an order that went
// through.
//
// The rules (docs/architecture.md, "Clients"):
//
//  * One requestId (the Idempotency-Key, a UUID v4) per cart screen. It is
//    made when the cart screen opens and reused for every tap and every
//    retry until the order is done; the next order gets a new one.
//  * A second tap with the same cart while the first is in flight joins it
//    (the same Promise, no new HTTP request). A tap with a different cart
//    while one is in flight is blocked.
//  * A 409 DUPLICATE_IDEMPOTENCY_KEY / SESSION_ORDER_IN_PROGRESS /
//    DUPLICATE_PAYLOAD may hide an order that did go through: the SDK
//    looks in the order history (up to 5 times, 400 ms × attempt apart)
//    before it reports an error.
//  * A network error, a timeout, a 5xx (503 NO_QUORUM …) or a 429 is
//    retried with the same key, on another node of the cluster when this
//    one is gone, honouring Retry-After, within a bounded number of
//    attempts and a bounded time.
//  * 200 with idempotentReplay is a success ("already received").
//  * The same cart ordered successfully in this session within the last
//    30 s, or a server replay of another request's order, asks the guest
//    "order the same again?"; yes resubmits with allowRepeat and a new key.
//
// Everything the SDK touches from the outside (fetch, storage, the clock,
// sleeping, UUIDs, the node list) can be injected, so the rules run under
// `node --test` without a browser (see ui/sdk_test/).

import { createNodePool, fetchWithTimeout, safeStorage } from './cluster.js';

export const RECONCILE_CODES = Object.freeze([
  'DUPLICATE_IDEMPOTENCY_KEY',
  'SESSION_ORDER_IN_PROGRESS',
  'DUPLICATE_PAYLOAD',
]);

const CLIENT_ID_KEY = 'masterorder.clientId';
const CREDENTIAL_KEY = 'masterorder.sessionCredential';
const CART_KEYS_KEY = 'masterorder.cartKeys';
const CLIENT_ID_RE = /^guest-[A-Za-z0-9_-]{16,64}$/;

const MESSAGES = {
  ja: {
    blocked: '前のご注文を送信しています。終わるまでお待ちください。',
    empty: 'カートが空です。',
    network:
      '通信できませんでした。ご注文が届いたかどうか注文履歴をご確認ください。もう一度押しても二重に注文されることはありません。',
    unconfirmed:
      'ご注文を確認しています。少し待ってから注文履歴をご確認ください。もう一度押しても二重に注文されることはありません。',
    failed: 'ご注文を送信できませんでした。',
    ordered: 'ご注文を受け付けました。',
    replayed: 'このご注文はすでに受け付けています（二重には入っていません）。',
    repeat: '同じ内容のご注文を少し前に受け付けています。もう一度同じものを注文しますか？',
    keyReused: 'ご注文の内容が変わりました。もう一度お試しください。',
  },
  en: {
    blocked: 'Your previous order is still being sent. Please wait until it finishes.',
    empty: 'Your cart is empty.',
    network:
      'We could not reach the store. Please check your order history to see whether the order arrived. Tapping again will never order twice.',
    unconfirmed:
      'We are still confirming your order. Please check your order history in a moment. Tapping again will never order twice.',
    failed: 'Your order could not be sent.',
    ordered: 'Your order has been received.',
    replayed: 'This order has already been received (it was not placed twice).',
    repeat: 'You ordered exactly this a moment ago. Order the same again?',
    keyReused: 'Your order changed. Please try again.',
  },
};

// OrderError is what every failing SDK call rejects with. reasonCode is the
// server's (or BLOCKED, EMPTY_CART, NETWORK_ERROR, HTTP_<status> from the
// SDK); uncertain is true when the order may have gone through — the UI
// should point to the order history, and tapping again is safe because the
// same key is reused.
export class OrderError extends Error {
  constructor(reasonCode, message, extra) {
    super(message);
    this.name = 'OrderError';
    this.reasonCode = reasonCode;
    this.status = 0;
    this.uncertain = false;
    this.retryAfterMs = null;
    this.requestId = null;
    this.body = null;
    Object.assign(this, extra || {});
  }
}

// ---------------------------------------------------------------- carts

function cleanLine(l) {
  const toppings = Array.isArray(l && l.toppings) ? l.toppings.map(String) : [];
  const out = { menuId: String(l.menuId), quantity: Number(l.quantity), toppings };
  // Options ({group: [optionId]}, or an order's [{groupId, optionId}])
  // and the note are part of the cart, as the server fingerprints it.
  const options = {};
  const raw = l && l.options;
  if (Array.isArray(raw)) {
    for (const o of raw) if (o && o.groupId) (options[o.groupId] = options[o.groupId] || []).push(String(o.optionId));
  } else if (raw && typeof raw === 'object') {
    for (const [g, ids] of Object.entries(raw)) if (Array.isArray(ids) && ids.length) options[g] = ids.map(String);
  }
  const groups = Object.keys(options).sort();
  if (groups.length) {
    out.options = {};
    for (const g of groups) out.options[g] = [...new Set(options[g])].sort();
  }
  const note = typeof (l && l.note) === 'string' ? l.note.trim() : '';
  if (note) out.note = note;
  return out;
}

// extrasKey is a line's options and note as text ('' when none).
function extrasKey(l) {
  if (!l.options && !l.note) return '';
  const opts = Object.keys(l.options || {})
    .map((g) => g + '=' + l.options[g].join('+'))
    .join(';');
  return '|o:' + opts + '|n:' + JSON.stringify(l.note || '');
}

// normalizeCart is the cart as the server fingerprints it: toppings sorted,
// identical lines (same item, same toppings) summed, lines sorted.
export function normalizeCart(items) {
  const byKey = new Map();
  for (const raw of items || []) {
    const l = cleanLine(raw);
    l.toppings.sort();
    const k = l.menuId + '\u0000' + l.toppings.join('\u0001') + extrasKey(l);
    const prev = byKey.get(k);
    if (prev) prev.quantity += l.quantity;
    else byKey.set(k, l);
  }
  return [...byKey.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1]);
}

// cartSignature is a stable text for a normalized cart. It accepts request
// lines ({menuId, quantity, toppings:[id]}) and order-history lines
// ({menuId, quantity, toppings:[{toppingId}]}) alike.
export function cartSignature(items) {
  const lines = (items || []).map((l) => ({
    menuId: l.menuId,
    quantity: l.quantity,
    toppings: (l.toppings || []).map((t) => (t && typeof t === 'object' ? t.toppingId : t)),
    options: l.options,
    note: l.note,
  }));
  return normalizeCart(lines)
    .map((l) => l.menuId + ':' + l.quantity + ':' + l.toppings.join(',') + extrasKey(l))
    .join(';');
}

// payloadSig: the session and the normalized cart, what "the same order"
// means for joining an in-flight request.
export function payloadSig(sessionId, items) {
  return String(sessionId) + '|' + cartSignature(items);
}

// ---------------------------------------------------------------- ids

function hex(bytes) {
  let s = '';
  for (const b of bytes) s += (b + 0x100).toString(16).slice(1);
  return s;
}

function randomBytes(n, cryptoObj) {
  const b = new Uint8Array(n);
  if (cryptoObj && typeof cryptoObj.getRandomValues === 'function') {
    cryptoObj.getRandomValues(b);
  } else {
    for (let i = 0; i < n; i++) b[i] = Math.floor(Math.random() * 256);
  }
  return b;
}

// uuidV4 is crypto.randomUUID when the browser has it. Plain-HTTP pages on
// a LAN are not a "secure context", and there randomUUID does not exist;
// getRandomValues does, so the fallback builds the UUID from 16 random
// bytes with the version and variant bits set.
export function uuidV4(cryptoObj) {
  const c = cryptoObj === undefined ? globalThis.crypto : cryptoObj;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  const b = randomBytes(16, c);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = hex(b);
  return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20);
}

export const UUID_V4_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function base64url(bytes) {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let s = '';
  for (const b of bytes) s += abc[b & 63];
  return s;
}

function normKey(k) {
  return String(k || '')
    .trim()
    .replace(/^"|"$/g, '')
    .toLowerCase();
}

// retryAfterMs reads a Retry-After header (whole seconds or an HTTP date).
export function retryAfterMs(value, now) {
  if (value == null || value === '') return null;
  const v = String(value).trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return null;
  return Math.max(0, t - (now ? now() : Date.now()));
}

async function readBody(res) {
  let text = '';
  try {
    text = await res.text();
  } catch (_) {
    return null;
  }
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (_) {
    return null;
  }
}

function header(res, name) {
  return res && res.headers && typeof res.headers.get === 'function' ? res.headers.get(name) : null;
}

// ---------------------------------------------------------------- the SDK

// createOrderSdk options (all optional in a browser):
//   fetch, storage (localStorage-like, client id and nodes),
//   sessionStorage (the cart keys, so a reload keeps an unfinished key),
//   sleep(ms) → Promise, now() → ms, uuid() → string, crypto,
//   timers {setTimeout, clearTimeout}, origin, pool (a node pool),
//   lang() → 'ja' | 'en' | 'zh-Hans' | 'ko' (messages: ja, else English),
//   maxAttempts (6), maxTotalMs (30000), requestTimeoutMs (10000),
//   repeatWindowMs (30000), reconcileTries (5), reconcileStepMs (400),
//   historyLimit (20)
export function createOrderSdk(options) {
  const o = options || {};
  const g = globalThis;
  const fetchFn = o.fetch || ((...a) => g.fetch(...a));
  const storage = o.storage || safeStorage(g.localStorage);
  const keyStorage = o.sessionStorage || safeStorage(g.sessionStorage);
  const timers = o.timers || { setTimeout: (f, ms) => g.setTimeout(f, ms), clearTimeout: (t) => g.clearTimeout(t) };
  const sleep = o.sleep || ((ms) => new Promise((r) => timers.setTimeout(r, ms)));
  const now = o.now || Date.now;
  const cryptoObj = o.crypto === undefined ? g.crypto : o.crypto;
  const uuid = o.uuid || (() => uuidV4(cryptoObj));
  const lang = o.lang || (() => 'ja');
  const origin = o.origin !== undefined ? o.origin : g.location ? g.location.origin : '';
  const cfg = {
    maxAttempts: 6,
    maxTotalMs: 30000,
    requestTimeoutMs: 10000,
    repeatWindowMs: 30000,
    reconcileTries: 5,
    reconcileStepMs: 400,
    historyLimit: 20,
  };
  for (const k of Object.keys(cfg)) if (typeof o[k] === 'number') cfg[k] = o[k];
  const pool = o.pool || createNodePool({ origin, fetch: fetchFn, storage, now, timers });

  const staleListeners = [];
  // A node without a quorum still answers reads from its own replica,
  // marked X-MasterOrder-Stale: true; the app says it is offline.
  function noteStale(res) {
    const v = header(res, 'X-MasterOrder-Stale');
    if (v === null || v === undefined) return;
    for (const f of staleListeners) f(v === 'true');
  }

  const inflight = new Map(); // sessionId → {sig, requestId, promise}
  const recent = new Map(); // sessionId → [{sig, at, outcome}]
  const carts = loadCartKeys(); // sessionId → {requestId, binding|null}

  function msg(key) {
    const l = lang() === 'ja' ? 'ja' : 'en'; // zh-Hans, ko: English before Japanese
    return MESSAGES[l][key];
  }

  // ---- client id

  let clientIdCache = null;
  function clientId() {
    if (clientIdCache) return clientIdCache;
    let id = storage.getItem(CLIENT_ID_KEY);
    if (!id || !CLIENT_ID_RE.test(id)) {
      id = 'guest-' + base64url(randomBytes(22, cryptoObj));
      storage.setItem(CLIENT_ID_KEY, id);
    }
    clientIdCache = id;
    return id;
  }

  // ---- cart keys: one requestId per cart screen

  function loadCartKeys() {
    try {
      const v = JSON.parse(keyStorage.getItem(CART_KEYS_KEY) || '{}');
      return v && typeof v === 'object' ? new Map(Object.entries(v)) : new Map();
    } catch (_) {
      return new Map();
    }
  }

  function saveCartKeys() {
    keyStorage.setItem(CART_KEYS_KEY, JSON.stringify(Object.fromEntries(carts)));
  }

  function freshKey(sessionId) {
    const c = { requestId: uuid(), binding: null };
    carts.set(String(sessionId), c);
    saveCartKeys();
    return c;
  }

  // openCart is called when the cart / confirm screen opens: it makes the
  // requestId every tap on that screen will use. If the previous attempt
  // for the very same cart ended without an answer (the order may be in),
  // its key is kept, so a retry can never become a second order.
  function openCart(sessionId, items) {
    const c = carts.get(String(sessionId));
    if (c && c.binding !== null && items && c.binding === binding(sessionId, items, false)) {
      return c.requestId;
    }
    return freshKey(sessionId).requestId;
  }

  function currentRequestId(sessionId) {
    const c = carts.get(String(sessionId));
    return c ? c.requestId : openCart(sessionId);
  }

  function binding(sessionId, items, allowRepeat) {
    return payloadSig(sessionId, items) + (allowRepeat ? '|repeat' : '');
  }

  // keyFor returns the key to send for this cart. A key once sent belongs
  // to that cart: a changed cart (or the "order again" confirmation) gets a
  // new key, since reusing it would be IDEMPOTENCY_KEY_REUSED.
  function keyFor(sessionId, items, allowRepeat) {
    const b = binding(sessionId, items, allowRepeat);
    let c = carts.get(String(sessionId));
    if (!c || (c.binding !== null && c.binding !== b)) c = freshKey(sessionId);
    if (c.binding === null) {
      c.binding = b;
      saveCartKeys();
    }
    return c.requestId;
  }

  // ---- HTTP

  function guestHeaders(pin, extra) {
    const h = {
      Accept: 'application/json',
      'Accept-Language': lang() === 'ja' ? 'ja' : 'en',
      'X-MasterOrder-Client-Id': clientId(),
    };
    if (pin != null && pin !== '') h['X-Session-PIN'] = String(pin);
    // The session credential the server gave this device after its first
    // right PIN: it keeps the table open to us through a PIN lockout that
    // someone else's wrong guesses set off.
    const cred = storage.getItem(CREDENTIAL_KEY);
    if (cred) h['X-Session-Credential'] = cred;
    return Object.assign(h, extra || {});
  }

  function keepCredential(res) {
    const cred = header(res, 'X-Session-Credential');
    if (cred) storage.setItem(CREDENTIAL_KEY, cred);
  }

  function retryable(res, data) {
    if (res.status >= 500) return true;
    if (res.status === 429) return !(data && data.reasonCode === 'PIN_LOCKED');
    return false;
  }

  // exchange sends one request, retrying it unchanged (same headers, so the
  // same Idempotency-Key) on network errors, timeouts, 5xx and 429, moving
  // to another node when the current one fails. It resolves with the first
  // final answer {res, data, base}, or with the last retryable answer when
  // the budget is spent; it rejects with NETWORK_ERROR when no node
  // answered at all.
  async function exchange(method, path, init, limits) {
    const maxAttempts = (limits && limits.maxAttempts) || cfg.maxAttempts;
    const maxTotalMs = (limits && limits.maxTotalMs) || cfg.maxTotalMs;
    const started = now();
    let lastError = null;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const base = pool.current();
      let res;
      try {
        res = await fetchWithTimeout(
          fetchFn,
          base + path,
          Object.assign({ method, cache: 'no-store', credentials: 'omit' }, init),
          cfg.requestTimeoutMs,
          timers,
        );
      } catch (err) {
        lastError = err;
        pool.failed(base);
        // learn the other nodes if we do not know them yet
        if (pool.size() < 2) {
          await pool.refresh();
          pool.failed(base);
        } else {
          pool.refreshIfStale();
        }
        const wait = Math.min(250 * attempt, 2000);
        if (attempt === maxAttempts || now() - started + wait > maxTotalMs) break;
        await sleep(wait);
        continue;
      }
      keepCredential(res);
      const data = await readBody(res);
      if (!retryable(res, data)) {
        pool.ok(base);
        return { res, data, base };
      }
      const ra = retryAfterMs(header(res, 'Retry-After'), now);
      const wait = ra != null ? ra : Math.min(500 * attempt, 3000);
      // a node without quorum or catalog may be the odd one out
      if (res.status >= 500) pool.failed(base);
      if (attempt === maxAttempts || now() - started + wait > maxTotalMs) {
        return { res, data, base, exhausted: true };
      }
      await sleep(wait);
    }
    throw new OrderError('NETWORK_ERROR', msg('network'), { uncertain: true, cause: lastError });
  }

  function apiError(res, data, fallbackKey) {
    const code = (data && data.reasonCode) || 'HTTP_' + res.status;
    return new OrderError(code, (data && data.message) || msg(fallbackKey || 'failed'), {
      status: res.status,
      retryAfterMs: retryAfterMs(header(res, 'Retry-After'), now),
      body: data,
    });
  }

  async function getJSON(path, pin, limits) {
    const { res, data } = await exchange('GET', path, { headers: guestHeaders(pin) }, limits || { maxAttempts: 3, maxTotalMs: 10000 });
    if (!res.ok) throw apiError(res, data);
    noteStale(res);
    return data || {};
  }

  const sessionPath = (id) => '/api/guest/sessions/' + encodeURIComponent(id);

  function getSession(sessionId, pin) {
    return getJSON(sessionPath(sessionId), pin);
  }

  // callStaff asks for staff, the bill or water: {callId, kind, status}.
  // A repeat answers the open call; CALL_TOO_SOON is not retried (its
  // Retry-After is 30 s: the guest is told instead).
  async function callStaff(sessionId, pin, kind) {
    const init = { headers: guestHeaders(pin, { 'Content-Type': 'application/json' }), body: JSON.stringify({ kind }) };
    const { res, data } = await exchange('POST', sessionPath(sessionId) + '/calls', init, { maxAttempts: 3, maxTotalMs: 8000 });
    if (!res.ok) throw apiError(res, data);
    return data || {};
  }

  async function getMenu(sessionId, pin) {
    return (await getCatalog(sessionId, pin)).items;
  }

  // getCatalog: the items and each category's names by language.
  async function getCatalog(sessionId, pin) {
    const d = await getJSON(sessionPath(sessionId) + '/menu', pin);
    const categories = d.categories && typeof d.categories === 'object' ? d.categories : {};
    return { items: Array.isArray(d.items) ? d.items : [], categories };
  }

  async function getOrders(sessionId, pin, q) {
    const limit = (q && q.limit) || cfg.historyLimit;
    let path = sessionPath(sessionId) + '/orders?limit=' + limit;
    if (q && q.requestId) path += '&requestId=' + encodeURIComponent(q.requestId);
    const d = await getJSON(path, pin, q && q.limits);
    return Array.isArray(d.orders) ? d.orders : [];
  }

  // ---- placing an order

  function outcome(kind, fields) {
    const askRepeat = kind === 'already-ordered' || kind === 'confirm-repeat';
    const key = { ordered: 'ordered', replayed: 'replayed' }[kind] || 'repeat';
    return Object.assign(
      { kind, ok: kind !== 'confirm-repeat', askRepeat, message: msg(key), idempotentReplay: kind !== 'ordered', reconciled: false },
      fields,
    );
  }

  function fromSuccess(data, res, sentKey) {
    const replay = data.idempotentReplay === true || String(header(res, 'X-MasterOrder-Idempotent-Replay')).toLowerCase() === 'true';
    const sameRequest = !data.requestId || normKey(data.requestId) === normKey(sentKey);
    const kind = !replay ? 'ordered' : sameRequest ? 'replayed' : 'already-ordered';
    return outcome(kind, {
      orderId: data.orderId,
      ticketNo: data.ticketNo,
      status: data.status,
      totalPrice: data.totalPrice,
      requestId: data.requestId || sentKey,
      sentRequestId: sentKey,
      idempotentReplay: replay,
    });
  }

  function fromHistory(order, sentKey) {
    const sameRequest = normKey(order.requestId) === normKey(sentKey);
    return outcome(sameRequest ? 'replayed' : 'already-ordered', {
      orderId: order.orderId,
      ticketNo: order.ticketNo,
      status: order.status,
      totalPrice: order.totalPrice,
      requestId: order.requestId,
      sentRequestId: sentKey,
      idempotentReplay: true,
      reconciled: true,
    });
  }

  // reconcile looks for the order a 409 may hide: the one placed with this
  // key, or — when the server said DUPLICATE_PAYLOAD — the newest order of
  // this session with the same cart. Up to reconcileTries looks,
  // reconcileStepMs × attempt apart.
  async function reconcile(sessionId, pin, sentKey, lines, byCart) {
    const want = cartSignature(lines);
    const key = normKey(sentKey);
    for (let attempt = 1; attempt <= cfg.reconcileTries; attempt++) {
      await sleep(cfg.reconcileStepMs * attempt);
      let orders;
      try {
        orders = await getOrders(sessionId, pin, {
          limit: cfg.historyLimit,
          requestId: byCart ? null : sentKey,
          limits: { maxAttempts: 2, maxTotalMs: 5000 },
        });
      } catch (_) {
        continue;
      }
      const mine = orders.find((x) => normKey(x.requestId) === key);
      if (mine) return fromHistory(mine, sentKey);
      if (byCart) {
        const same = orders.find((x) => cartSignature(x.items) === want);
        if (same) return fromHistory(same, sentKey);
      }
    }
    return null;
  }

  function remember(sessionId, sig, result) {
    const list = (recent.get(sessionId) || []).filter((r) => now() - r.at < cfg.repeatWindowMs && r.sig !== sig);
    list.push({ sig, at: now(), outcome: result });
    recent.set(sessionId, list);
  }

  function recentSuccess(sessionId, sig) {
    const list = recent.get(sessionId) || [];
    return list.find((r) => r.sig === sig && now() - r.at < cfg.repeatWindowMs) || null;
  }

  // done: the order exists. The cart's key is spent; the next cart screen
  // gets a new one.
  function done(sessionId, sig, result) {
    freshKey(sessionId);
    remember(sessionId, sig, result);
    return result;
  }

  async function place(p) {
    const { sessionId, pin, lines, sig, requestId } = p;
    const body = { items: lines };
    if (Number.isFinite(p.expectedTotal)) body.expectedTotal = p.expectedTotal;
    body.allowRepeat = !!p.allowRepeat;
    const headers = guestHeaders(pin, { 'Content-Type': 'application/json', 'Idempotency-Key': requestId });
    let r;
    try {
      r = await exchange('POST', sessionPath(sessionId) + '/orders', { headers, body: JSON.stringify(body) });
    } catch (err) {
      err.requestId = requestId;
      throw err;
    }
    const { res, data } = r;
    if (res.ok && data && data.allowed !== false && data.orderId != null) {
      return done(sessionId, sig, fromSuccess(data, res, requestId));
    }
    const code = data && data.reasonCode;
    if (res.status === 409 && RECONCILE_CODES.includes(code)) {
      const found = await reconcile(sessionId, pin, requestId, lines, code === 'DUPLICATE_PAYLOAD');
      if (found) return done(sessionId, sig, found);
      const err = apiError(res, data, 'unconfirmed');
      err.requestId = requestId;
      err.uncertain = code === 'DUPLICATE_IDEMPOTENCY_KEY';
      throw err;
    }
    if (code === 'IDEMPOTENCY_KEY_REUSED') {
      // the key belongs to another cart that went through: never resend
      // it with this one
      freshKey(sessionId);
      const err = apiError(res, data, 'keyReused');
      err.requestId = requestId;
      throw err;
    }
    const err = apiError(res, data);
    err.requestId = requestId;
    err.uncertain = !!r.exhausted;
    throw err;
  }

  // planSubmit decides what a tap on "order" does:
  //   {mode:'send', promise, requestId}    a request goes out
  //   {mode:'join', promise, requestId}    the same cart is in flight: its promise
  //   {mode:'blocked', message, requestId} another cart is in flight
  //   {mode:'confirm-repeat', message, previous}  this cart was ordered
  //       moments ago: ask the guest, then submit with allowRepeat:true
  //   {mode:'empty', message}
  // params: {sessionId, pin, items:[{menuId, quantity, toppings:[id]}],
  //          expectedTotal?, allowRepeat?}
  function planSubmit(params) {
    const sessionId = String(params.sessionId);
    const lines = (params.items || []).map(cleanLine);
    if (lines.length === 0) return { mode: 'empty', message: msg('empty') };
    const sig = payloadSig(sessionId, lines);
    const slot = inflight.get(sessionId);
    if (slot) {
      if (slot.sig === sig) return { mode: 'join', promise: slot.promise, requestId: slot.requestId };
      return { mode: 'blocked', message: msg('blocked'), requestId: slot.requestId };
    }
    if (!params.allowRepeat) {
      const prev = recentSuccess(sessionId, sig);
      if (prev) {
        return { mode: 'confirm-repeat', message: msg('repeat'), previous: prev.outcome };
      }
    }
    const requestId = keyFor(sessionId, lines, !!params.allowRepeat);
    const s = { sig, requestId, promise: null };
    inflight.set(sessionId, s);
    s.promise = (async () => {
      try {
        return await place({
          sessionId,
          pin: params.pin,
          lines,
          sig,
          requestId,
          expectedTotal: params.expectedTotal,
          allowRepeat: !!params.allowRepeat,
        });
      } finally {
        if (inflight.get(sessionId) === s) inflight.delete(sessionId);
      }
    })();
    return { mode: 'send', promise: s.promise, requestId };
  }

  // submitOrder is planSubmit for callers that want one Promise: it
  // resolves with an outcome {kind, ok, askRepeat, message, orderId,
  // status, totalPrice, requestId, idempotentReplay, reconciled}, kind one
  // of 'ordered', 'replayed' (this key already went through),
  // 'already-ordered' (the same cart went through under another key: ask
  // "again?"), 'confirm-repeat' (nothing sent: ask "again?"); it rejects
  // with an OrderError (BLOCKED, EMPTY_CART, NETWORK_ERROR or the
  // server's reasonCode).
  function submitOrder(params) {
    const plan = planSubmit(params);
    switch (plan.mode) {
      case 'send':
      case 'join':
        return plan.promise;
      case 'confirm-repeat':
        return Promise.resolve(outcome('confirm-repeat', Object.assign({}, plan.previous, { kind: 'confirm-repeat', ok: false, askRepeat: true, message: plan.message })));
      case 'blocked':
        return Promise.reject(new OrderError('BLOCKED', plan.message, { requestId: plan.requestId }));
      default:
        return Promise.reject(new OrderError('EMPTY_CART', plan.message));
    }
  }

  return {
    clientId,
    generateRequestId: uuid,
    openCart,
    currentRequestId,
    planSubmit,
    submitOrder,
    getSession,
    getMenu,
    getCatalog,
    getOrders,
    callStaff,
    inFlight: (sessionId) => inflight.has(String(sessionId)),
    onStale: (f) => staleListeners.push(f),
    pool,
    messages: msg,
  };
}
