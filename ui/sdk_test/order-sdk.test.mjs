// Tests of order-sdk.js under Node's own runner: node --test ui/sdk_test/
//
// A fake cluster of three nodes answers the SDK's fetch calls; the clock
// and sleep are fake too (sleep advances the clock at once and records
// the delay), so the tests run in milliseconds and can check every wait.

import test from 'node:test';
import assert from 'node:assert/strict';

import {
  createOrderSdk,
  normalizeCart,
  cartSignature,
  payloadSig,
  uuidV4,
  UUID_V4_RE,
  retryAfterMs,
} from '../static/assets/order-sdk.js';
import { nodeBase, createNodePool } from '../static/assets/cluster.js';

const A = 'http://a:8080';
const B = 'http://b:8081';
const C = 'http://c:8082';
const SID = 'sess-1';
const ORDER_PATH = '/api/guest/sessions/sess-1/orders';

function memStorage(init) {
  const m = new Map(Object.entries(init || {}));
  return {
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => m.set(k, String(v)),
    removeItem: (k) => m.delete(k),
    map: m,
  };
}

function json(status, body, headers) {
  return new Response(body === undefined ? '' : JSON.stringify(body), {
    status,
    headers: Object.assign({ 'Content-Type': 'application/json' }, headers || {}),
  });
}

const clusterStatus = {
  nodeId: 'a',
  state: 'Leader',
  nodes: [
    { id: 'a', httpAddr: 'a:8080' },
    { id: 'b', httpAddr: 'b:8081' },
    { id: 'c', httpAddr: 'c:8082' },
  ],
};

// harness builds an SDK against a fake cluster. route(req) answers every
// request except GET /api/cluster/status; req = {base, path, search,
// method, headers, body, n (1-based count of requests to this path+method)}.
// A route may return a Response, throw (network error) or return
// 'hang' (never answers).
function harness(route, opts) {
  const o = opts || {};
  let clock = 1_000_000;
  const sleeps = [];
  const calls = [];
  const counts = new Map();
  let ids = 0;
  const fetch = async (url, init) => {
    const u = new URL(url);
    const method = (init && init.method) || 'GET';
    const headers = new Headers((init && init.headers) || {});
    const body = init && init.body ? JSON.parse(init.body) : null;
    const k = method + ' ' + u.pathname;
    counts.set(k, (counts.get(k) || 0) + 1);
    const req = { base: u.origin, path: u.pathname, search: u.searchParams, method, headers, body, n: counts.get(k) };
    calls.push(req);
    if (o.dead && o.dead.includes(u.origin)) throw new TypeError('fetch failed');
    if (u.pathname === '/api/cluster/status') return json(200, clusterStatus);
    const r = await route(req);
    if (r === 'hang') return new Promise(() => {});
    return r;
  };
  const sdk = createOrderSdk({
    fetch,
    origin: A,
    storage: o.storage || memStorage(),
    sessionStorage: o.sessionStorage || memStorage(),
    sleep: async (ms) => {
      sleeps.push(ms);
      clock += ms;
    },
    now: () => clock,
    uuid: () => {
      ids++;
      return '00000000-0000-4000-8000-' + String(ids).padStart(12, '0');
    },
    lang: () => o.lang || 'ja',
    requestTimeoutMs: o.requestTimeoutMs || 1000,
  });
  return {
    sdk,
    calls,
    sleeps,
    posts: () => calls.filter((c) => c.method === 'POST'),
    gets: (p) => calls.filter((c) => c.method === 'GET' && c.path === p),
    advance: (ms) => {
      clock += ms;
    },
  };
}

function success(req, extra) {
  const key = req.headers.get('Idempotency-Key');
  return json(
    200,
    Object.assign(
      { requestId: key, allowed: true, orderId: 1000 + req.n, status: 'ACCEPTED', totalPrice: 2040, idempotentReplay: false },
      extra || {},
    ),
  );
}

function reject(status, reasonCode, headers) {
  return json(status, { allowed: false, reasonCode, message: 'msg:' + reasonCode }, headers);
}

const CART = [
  { menuId: 'ramen', quantity: 2, toppings: ['egg'] },
  { menuId: 'gyoza', quantity: 1, toppings: [] },
];
// the same cart, written differently
const CART_SHUFFLED = [
  { menuId: 'gyoza', quantity: 1 },
  { menuId: 'ramen', quantity: 1, toppings: ['egg'] },
  { menuId: 'ramen', quantity: 1, toppings: ['egg'] },
];
const OTHER_CART = [{ menuId: 'ramen', quantity: 1, toppings: [] }];

function order(fields) {
  return Object.assign(
    {
      orderId: 777,
      sessionId: SID,
      status: 'ACCEPTED',
      totalPrice: 2040,
      createdAt: '2025-01-01T12:00:00Z',
      items: [
        { menuId: 'ramen', name: '醤油ラーメン', quantity: 2, toppings: [{ toppingId: 'egg', name: '味玉', price: 120 }], unitPrice: 1020, lineTotal: 2040 },
        { menuId: 'gyoza', name: '餃子', quantity: 1, toppings: [], unitPrice: 400, lineTotal: 400 },
      ],
    },
    fields,
  );
}

// ------------------------------------------------------------ normalization

test('normalizeCart sorts lines and toppings and sums identical lines', () => {
  const n = normalizeCart([
    { menuId: 'ramen', quantity: 1, toppings: ['nori', 'egg'] },
    { menuId: 'gyoza', quantity: 2, toppings: [] },
    { menuId: 'ramen', quantity: 2, toppings: ['egg', 'nori'] },
    { menuId: 'ramen', quantity: 1, toppings: ['egg'] },
  ]);
  assert.deepEqual(n, [
    { menuId: 'gyoza', quantity: 2, toppings: [] },
    { menuId: 'ramen', quantity: 1, toppings: ['egg'] },
    { menuId: 'ramen', quantity: 3, toppings: ['egg', 'nori'] },
  ]);
});

test('payloadSig is the same for the same cart written differently', () => {
  assert.equal(payloadSig(SID, CART), payloadSig(SID, CART_SHUFFLED));
  assert.notEqual(payloadSig(SID, CART), payloadSig(SID, OTHER_CART));
  assert.notEqual(payloadSig(SID, CART), payloadSig('other-session', CART));
  // different toppings are different lines
  assert.notEqual(
    cartSignature([{ menuId: 'ramen', quantity: 1, toppings: ['egg'] }]),
    cartSignature([{ menuId: 'ramen', quantity: 1, toppings: [] }]),
  );
});

test('cartSignature reads order-history lines (topping objects) like cart lines', () => {
  assert.equal(cartSignature(order().items), cartSignature(CART_SHUFFLED));
});

// ------------------------------------------------------------ ids and headers

test('uuidV4 falls back to getRandomValues without randomUUID (plain-HTTP pages)', () => {
  const noRandomUUID = { getRandomValues: (b) => globalThis.crypto.getRandomValues(b) };
  const seen = new Set();
  for (let i = 0; i < 200; i++) {
    const id = uuidV4(noRandomUUID);
    assert.match(id, UUID_V4_RE);
    seen.add(id);
  }
  assert.equal(seen.size, 200);
  assert.match(uuidV4(globalThis.crypto), UUID_V4_RE);
  // the default SDK uuid is a v4 too
  assert.match(createOrderSdk({ fetch: async () => json(200, {}), origin: A, storage: memStorage(), sessionStorage: memStorage() }).generateRequestId(), UUID_V4_RE);
});

test('client id is guest-<16+ chars>, kept in storage', () => {
  const storage = memStorage();
  const s1 = createOrderSdk({ fetch: async () => json(200, {}), origin: A, storage, sessionStorage: memStorage() });
  const id = s1.clientId();
  assert.match(id, /^guest-[A-Za-z0-9_-]{16,64}$/);
  const s2 = createOrderSdk({ fetch: async () => json(200, {}), origin: A, storage, sessionStorage: memStorage() });
  assert.equal(s2.clientId(), id);
  // a malformed stored id is replaced
  const bad = memStorage({ 'masterorder.clientId': 'guest-x y' });
  const s3 = createOrderSdk({ fetch: async () => json(200, {}), origin: A, storage: bad, sessionStorage: memStorage() });
  assert.match(s3.clientId(), /^guest-[A-Za-z0-9_-]{16,64}$/);
});

test('an order carries the documented headers and body', async () => {
  const h = harness((req) => success(req), { lang: 'en' });
  const key = h.sdk.openCart(SID, CART);
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '4821', items: CART, expectedTotal: 2440 });
  assert.equal(r.kind, 'ordered');
  assert.equal(r.ok, true);
  assert.equal(r.idempotentReplay, false);
  const [post] = h.posts();
  assert.equal(post.base, A);
  assert.equal(post.path, ORDER_PATH);
  assert.equal(post.headers.get('Idempotency-Key'), key);
  assert.equal(post.headers.get('X-Session-PIN'), '4821');
  assert.match(post.headers.get('X-MasterOrder-Client-Id'), /^guest-[A-Za-z0-9_-]{16,64}$/);
  assert.equal(post.headers.get('Accept-Language'), 'en');
  assert.equal(post.headers.get('Content-Type'), 'application/json');
  assert.deepEqual(post.body, {
    items: [
      { menuId: 'ramen', quantity: 2, toppings: ['egg'] },
      { menuId: 'gyoza', quantity: 1, toppings: [] },
    ],
    expectedTotal: 2440,
    allowRepeat: false,
  });
});

// ------------------------------------------------------------ one key per cart screen

test('every tap on one cart screen sends the same requestId until the order is done', async () => {
  const h = harness((req) => (req.n < 3 ? reject(400, 'PRICE_MISMATCH') : success(req)));
  const key = h.sdk.openCart(SID, CART);
  assert.match(key, UUID_V4_RE);
  for (let i = 0; i < 2; i++) {
    await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), { reasonCode: 'PRICE_MISMATCH' });
  }
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART_SHUFFLED });
  assert.equal(r.kind, 'ordered');
  assert.deepEqual(
    h.posts().map((p) => p.headers.get('Idempotency-Key')),
    [key, key, key],
  );
  // done: the next cart screen gets a new key
  const next = h.sdk.openCart(SID, OTHER_CART);
  assert.notEqual(next, key);
  assert.equal(h.sdk.currentRequestId(SID), next);
});

test('opening the cart again keeps the key of an unanswered attempt for the same cart', async () => {
  const h = harness(() => {
    throw new TypeError('fetch failed');
  });
  const key = h.sdk.openCart(SID, CART);
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), (e) => e.reasonCode === 'NETWORK_ERROR' && e.uncertain === true && e.requestId === key);
  assert.equal(h.sdk.openCart(SID, CART_SHUFFLED), key, 'same cart: the order may be in, keep its key');
  assert.notEqual(h.sdk.openCart(SID, OTHER_CART), key, 'another cart: a new key');
});

test('a changed cart on the same screen gets a new key (no IDEMPOTENCY_KEY_REUSED)', async () => {
  const h = harness((req) => (req.n === 1 ? reject(409, 'OUT_OF_STOCK') : success(req)));
  const key = h.sdk.openCart(SID, CART);
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), { reasonCode: 'OUT_OF_STOCK' });
  await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: OTHER_CART });
  const keys = h.posts().map((p) => p.headers.get('Idempotency-Key'));
  assert.equal(keys[0], key);
  assert.notEqual(keys[1], key);
});

// ------------------------------------------------------------ in flight

// gatedHarness: a cart open on SID whose order requests all succeed, but
// only once release() is called, so a test can tap again while one is in
// flight.
function gatedHarness() {
  let release;
  const gate = new Promise((r) => (release = r));
  const h = harness(async (req) => {
    await gate;
    return success(req);
  });
  h.sdk.openCart(SID, CART);
  return { h, release };
}

test('a second tap with the same cart joins the request in flight', async () => {
  const { h, release } = gatedHarness();
  const p1 = h.sdk.planSubmit({ sessionId: SID, pin: '1', items: CART });
  const p2 = h.sdk.planSubmit({ sessionId: SID, pin: '1', items: CART_SHUFFLED });
  const p3 = h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(p1.mode, 'send');
  assert.equal(p2.mode, 'join');
  assert.equal(p2.promise, p1.promise);
  assert.equal(p3, p1.promise);
  assert.equal(p2.requestId, p1.requestId);
  assert.equal(h.sdk.inFlight(SID), true);
  release();
  const [r1, r2] = await Promise.all([p1.promise, p2.promise]);
  assert.equal(r1, r2);
  assert.equal(h.posts().length, 1);
  assert.equal(h.sdk.inFlight(SID), false);
});

test('a tap with a different cart while one is in flight is blocked', async () => {
  const { h, release } = gatedHarness();
  const p1 = h.sdk.planSubmit({ sessionId: SID, pin: '1', items: CART });
  const p2 = h.sdk.planSubmit({ sessionId: SID, pin: '1', items: OTHER_CART });
  assert.equal(p2.mode, 'blocked');
  assert.ok(p2.message.length > 0);
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: OTHER_CART }), { reasonCode: 'BLOCKED' });
  release();
  await p1.promise;
  assert.equal(h.posts().length, 1);
  // another session is not affected
  const other = h.sdk.planSubmit({ sessionId: 'sess-2', pin: '1', items: OTHER_CART });
  assert.equal(other.mode, 'send');
  await other.promise;
});

test('an empty cart is not sent', async () => {
  const h = harness((req) => success(req));
  assert.equal(h.sdk.planSubmit({ sessionId: SID, pin: '1', items: [] }).mode, 'empty');
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: [] }), { reasonCode: 'EMPTY_CART' });
  assert.equal(h.calls.length, 0);
});

// ------------------------------------------------------------ 409: look before shouting

test('a 409 DUPLICATE_IDEMPOTENCY_KEY is reconciled from the history: the order is found', async () => {
  let key;
  const h = harness((req) => {
    if (req.method === 'POST') {
      key = req.headers.get('Idempotency-Key');
      return reject(409, 'DUPLICATE_IDEMPOTENCY_KEY', { 'Retry-After': '1' });
    }
    assert.equal(req.search.get('requestId'), key);
    assert.equal(req.search.get('limit'), '20');
    assert.equal(req.headers.get('X-Session-PIN'), '1');
    if (req.n < 3) return json(200, { orders: [] });
    return json(200, { orders: [order({ orderId: 4242, requestId: key.toUpperCase() })] });
  });
  h.sdk.openCart(SID, CART);
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.ok, true);
  assert.equal(r.kind, 'replayed');
  assert.equal(r.orderId, 4242);
  assert.equal(r.idempotentReplay, true);
  assert.equal(r.reconciled, true);
  assert.equal(r.askRepeat, false);
  assert.deepEqual(h.sleeps, [400, 800, 1200]);
  assert.equal(h.posts().length, 1, 'reconciling never resends the order');
});

test('a 409 whose order is not found after 5 looks is an error (and the key is kept)', async () => {
  const h = harness((req) => (req.method === 'POST' ? reject(409, 'DUPLICATE_IDEMPOTENCY_KEY') : json(200, { orders: [] })));
  const key = h.sdk.openCart(SID, CART);
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), (e) => {
    assert.equal(e.reasonCode, 'DUPLICATE_IDEMPOTENCY_KEY');
    assert.equal(e.status, 409);
    assert.equal(e.message, 'msg:DUPLICATE_IDEMPOTENCY_KEY');
    assert.equal(e.uncertain, true);
    return true;
  });
  assert.equal(h.gets(ORDER_PATH).length, 5);
  assert.deepEqual(h.sleeps, [400, 800, 1200, 1600, 2000]);
  assert.equal(h.sdk.openCart(SID, CART), key);
});

test('SESSION_ORDER_IN_PROGRESS is reconciled by key, not by cart', async () => {
  const h = harness((req) => {
    if (req.method === 'POST') return reject(409, 'SESSION_ORDER_IN_PROGRESS', { 'Retry-After': '1' });
    // another phone at the table ordered the same cart: not ours
    return json(200, { orders: [order({ requestId: '11111111-1111-4111-8111-111111111111' })] });
  });
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), { reasonCode: 'SESSION_ORDER_IN_PROGRESS' });
  assert.equal(h.gets(ORDER_PATH).length, 5);
});

test('a 409 DUPLICATE_PAYLOAD finds the same cart in the history and asks "again?"', async () => {
  const other = '22222222-2222-4222-8222-222222222222';
  const h = harness((req) => {
    if (req.method === 'POST') return reject(409, 'DUPLICATE_PAYLOAD');
    assert.equal(req.search.get('requestId'), null);
    return json(200, { orders: [order({ orderId: 9, items: OTHER_CART.map((l) => ({ ...l, toppings: [] })), requestId: 'x' }), order({ orderId: 8, requestId: other })] });
  });
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART_SHUFFLED });
  assert.equal(r.kind, 'already-ordered');
  assert.equal(r.orderId, 8);
  assert.equal(r.askRepeat, true);
  assert.equal(r.idempotentReplay, true);
  assert.deepEqual(h.sleeps, [400]);
});

test('SESSION_BUSY is shown as it is, without reconciling', async () => {
  const h = harness(() => reject(409, 'SESSION_BUSY', { 'Retry-After': '5' }));
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), (e) => e.reasonCode === 'SESSION_BUSY' && e.message === 'msg:SESSION_BUSY' && e.retryAfterMs === 5000);
  assert.equal(h.calls.length, 1);
  assert.deepEqual(h.sleeps, []);
});

// ------------------------------------------------------------ replays

test('200 with idempotentReplay for our key is a success, "already received"', async () => {
  const h = harness((req) => success(req, { idempotentReplay: true }));
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.ok, true);
  assert.equal(r.kind, 'replayed');
  assert.equal(r.askRepeat, false);
  assert.equal(r.idempotentReplay, true);
});

test('the replay header alone also marks a replay', async () => {
  const h = harness((req) => {
    const res = success(req);
    return new Response(res.body, { status: 200, headers: { 'X-MasterOrder-Idempotent-Replay': 'true' } });
  });
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.kind, 'replayed');
});

// ------------------------------------------------------------ network, 503, Retry-After

test('a network error is retried on another node with the same key', async () => {
  const storage = memStorage();
  const h = harness((req) => success(req), { storage });
  await h.sdk.pool.refresh(); // the guest app does this at start
  assert.deepEqual(h.sdk.pool.list(), [A, B, C]);
  assert.equal(storage.getItem('masterorder.nodes'), JSON.stringify([B, C]));

  const dead = new Set([A]);
  const h2 = harness(
    (req) => {
      if (dead.has(req.base)) throw new TypeError('fetch failed');
      return success(req);
    },
    { storage },
  );
  // a new page load remembers the nodes
  assert.deepEqual(h2.sdk.pool.list(), [A, B, C]);
  const key = h2.sdk.openCart(SID, CART);
  const r = await h2.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.kind, 'ordered');
  const posts = h2.posts();
  assert.deepEqual(posts.map((p) => p.base), [A, B]);
  assert.deepEqual(posts.map((p) => p.headers.get('Idempotency-Key')), [key, key]);
  // the node that answered is used from now on
  await h2.sdk.getOrders(SID, '1');
  assert.equal(h2.gets(ORDER_PATH)[0].base, B);
});

test('a node that does not answer in time is left for another, same key', async () => {
  const h = harness((req) => (req.base === A ? 'hang' : success(req)), { requestTimeoutMs: 30 });
  h.sdk.pool.learn(clusterStatus);
  const key = h.sdk.openCart(SID, CART);
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.kind, 'ordered');
  assert.deepEqual(h.posts().map((p) => [p.base, p.headers.get('Idempotency-Key')]), [
    [A, key],
    [B, key],
  ]);
});

test('without a known node list, a failing origin makes the SDK ask for one', async () => {
  let aDown = false;
  const h = harness((req) => {
    if (req.base === A && aDown) throw new TypeError('fetch failed');
    if (req.base === A) {
      aDown = true; // the first order request kills node A
      throw new TypeError('fetch failed');
    }
    return success(req);
  });
  // node A still answers /api/cluster/status (the fake serves it from every node)
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.kind, 'ordered');
  assert.deepEqual(h.posts().map((p) => p.base), [A, B]);
});

test('503 with Retry-After is honoured, then retried with the same key on another node', async () => {
  const h = harness((req) => (req.n === 1 ? reject(503, 'NO_QUORUM', { 'Retry-After': '2' }) : success(req)));
  h.sdk.pool.learn(clusterStatus);
  const key = h.sdk.openCart(SID, CART);
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.kind, 'ordered');
  assert.deepEqual(h.sleeps, [2000]);
  assert.deepEqual(h.posts().map((p) => [p.base, p.headers.get('Idempotency-Key')]), [
    [A, key],
    [B, key],
  ]);
});

test('429 COOLDOWN_ACTIVE waits Retry-After and resends the same key', async () => {
  const h = harness((req) => (req.n === 1 ? reject(429, 'COOLDOWN_ACTIVE', { 'Retry-After': '3' }) : success(req)));
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.kind, 'ordered');
  assert.deepEqual(h.sleeps, [3000]);
  const keys = h.posts().map((p) => p.headers.get('Idempotency-Key'));
  assert.equal(keys[0], keys[1]);
});

test('a Retry-After beyond the time budget is reported, not slept', async () => {
  const h = harness(() => reject(503, 'NO_QUORUM', { 'Retry-After': '120' }));
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), (e) => e.reasonCode === 'NO_QUORUM' && e.retryAfterMs === 120000 && e.uncertain === true);
  assert.equal(h.posts().length, 1);
  assert.deepEqual(h.sleeps, []);
});

test('429 PIN_LOCKED is not retried', async () => {
  const h = harness(() => reject(429, 'PIN_LOCKED', { 'Retry-After': '600' }));
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), { reasonCode: 'PIN_LOCKED' });
  assert.equal(h.posts().length, 1);
});

test('retries are bounded: 6 attempts, then NETWORK_ERROR (uncertain)', async () => {
  const h = harness(() => {
    throw new TypeError('fetch failed');
  });
  h.sdk.pool.learn(clusterStatus);
  const key = h.sdk.openCart(SID, CART);
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), (e) => e.reasonCode === 'NETWORK_ERROR' && e.uncertain);
  const posts = h.posts();
  assert.equal(posts.length, 6);
  assert.ok(posts.every((p) => p.headers.get('Idempotency-Key') === key));
  assert.deepEqual(posts.map((p) => p.base), [A, B, C, A, B, C]);
  assert.equal(h.sdk.inFlight(SID), false);
});

test('retries are bounded in time too', async () => {
  const h = harness(() => reject(503, 'NO_QUORUM', { 'Retry-After': '9' }));
  await assert.rejects(h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART }), { reasonCode: 'NO_QUORUM' });
  // 9 s + 9 s + 9 s fit in 30 s, a fourth wait would not
  assert.deepEqual(h.sleeps, [9000, 9000, 9000]);
  assert.equal(h.posts().length, 4);
});

// ------------------------------------------------------------ order again?

test('the same cart again within 30 s asks first; yes sends allowRepeat with a new key', async () => {
  const h = harness((req) => success(req));
  const k1 = h.sdk.openCart(SID, CART);
  const first = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(first.kind, 'ordered');

  h.advance(10_000);
  h.sdk.openCart(SID, CART);
  const plan = h.sdk.planSubmit({ sessionId: SID, pin: '1', items: CART_SHUFFLED });
  assert.equal(plan.mode, 'confirm-repeat');
  assert.equal(plan.previous.orderId, first.orderId);
  const asked = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(asked.kind, 'confirm-repeat');
  assert.equal(asked.askRepeat, true);
  assert.equal(asked.ok, false);
  assert.equal(h.posts().length, 1, 'asking sends nothing');

  const again = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART, allowRepeat: true });
  assert.equal(again.kind, 'ordered');
  const posts = h.posts();
  assert.equal(posts.length, 2);
  assert.equal(posts[1].body.allowRepeat, true);
  assert.notEqual(posts[1].headers.get('Idempotency-Key'), k1);
});

test('after the window the same cart goes without asking', async () => {
  const h = harness((req) => success(req));
  await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  h.advance(31_000);
  assert.equal(h.sdk.planSubmit({ sessionId: SID, pin: '1', items: CART }).mode, 'send');
});

test('a server replay of another key\'s order asks "again?"; yes resends with allowRepeat and a new key', async () => {
  const earlier = '33333333-3333-4333-8333-333333333333';
  const h = harness((req) => (req.body.allowRepeat ? success(req) : success(req, { idempotentReplay: true, requestId: earlier, orderId: 55 })));
  const k1 = h.sdk.openCart(SID, CART);
  const r = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART });
  assert.equal(r.kind, 'already-ordered');
  assert.equal(r.ok, true);
  assert.equal(r.askRepeat, true);
  assert.equal(r.orderId, 55);
  const again = await h.sdk.submitOrder({ sessionId: SID, pin: '1', items: CART, allowRepeat: true });
  assert.equal(again.kind, 'ordered');
  const keys = h.posts().map((p) => p.headers.get('Idempotency-Key'));
  assert.equal(keys[0], k1);
  assert.notEqual(keys[1], k1);
  assert.equal(h.posts()[1].body.allowRepeat, true);
});

// ------------------------------------------------------------ small parts

test('retryAfterMs reads seconds and dates', () => {
  assert.equal(retryAfterMs('3'), 3000);
  assert.equal(retryAfterMs(null), null);
  assert.equal(retryAfterMs('soon'), null);
  const now = () => Date.parse('2025-01-01T00:00:00Z');
  assert.equal(retryAfterMs('Wed, 01 Jan 2025 00:00:05 GMT', now), 5000);
});

test('nodeBase turns httpAddr into a base URL', () => {
  assert.equal(nodeBase('10.0.0.2:8080', 'http://10.0.0.1:8080'), 'http://10.0.0.2:8080');
  assert.equal(nodeBase(':8081', 'http://10.0.0.1:8080'), 'http://10.0.0.1:8081');
  assert.equal(nodeBase('0.0.0.0:8082', 'http://10.0.0.1:8080'), 'http://10.0.0.1:8082');
  assert.equal(nodeBase('http://box-b:8081/', 'http://10.0.0.1:8080'), 'http://box-b:8081');
  assert.equal(nodeBase('', 'http://10.0.0.1:8080'), '');
});

test('the node pool keeps the origin first and rotates on failure', async () => {
  const pool = createNodePool({ origin: A, fetch: async () => json(200, clusterStatus), storage: memStorage() });
  await pool.refresh();
  assert.equal(pool.current(), A);
  pool.failed(A);
  assert.equal(pool.current(), B);
  pool.failed(A); // a late failure of a node already left changes nothing
  assert.equal(pool.current(), B);
  pool.ok(C);
  assert.equal(pool.current(), C);
});

test('a page served over HTTPS learns the other boxes\' HTTPS addresses only', async () => {
  const status = {
    nodes: [
      { id: 'a', httpAddr: '10.0.0.1:8080', httpsAddr: '10.0.0.1:8443' },
      { id: 'b', httpAddr: '10.0.0.2:8080', httpsAddr: '10.0.0.2:8443' },
      { id: 'c', httpAddr: '10.0.0.3:8080' }, // added later, no HTTPS known
    ],
  };
  const pool = createNodePool({ origin: 'https://10.0.0.1:8443', fetch: async () => json(200, status), storage: memStorage() });
  await pool.refresh();
  pool.failed('https://10.0.0.1:8443');
  assert.equal(pool.current(), 'https://10.0.0.2:8443');
  pool.failed('https://10.0.0.2:8443');
  assert.ok(pool.current().startsWith('https://'), pool.current());
});

test('the session credential from a right PIN is sent on every later call', async () => {
  const h = harness((req) => {
    if (req.method === 'GET') return json(200, { sessionId: SID, tableId: 'T1', status: 'ACTIVE' }, { 'X-Session-Credential': 'cred-abc' });
    return json(200, { allowed: true, orderId: 7, requestId: req.headers.get('Idempotency-Key'), status: 'ACCEPTED', totalPrice: 2440, idempotentReplay: false });
  });
  await h.sdk.getSession(SID, '4821');
  assert.equal(h.calls[0].headers.get('X-Session-Credential'), null);
  h.sdk.openCart(SID, CART);
  await h.sdk.submitOrder({ sessionId: SID, pin: '4821', items: CART, expectedTotal: 2440 });
  const post = h.calls.find((c) => c.method === 'POST');
  assert.equal(post.headers.get('X-Session-Credential'), 'cred-abc');
});

test('options and the note are part of the cart signature, as the server fingerprints it', () => {
  const a = [{ menuId: 'ramen', quantity: 1, toppings: [], options: { firmness: ['firm'], extras: ['spicy', 'garlic'] }, note: ' ネギ抜き ' }];
  const b = [{ menuId: 'ramen', quantity: 1, toppings: [], options: { extras: ['garlic', 'spicy'], firmness: ['firm'], empty: [] }, note: 'ネギ抜き' }];
  assert.equal(cartSignature(a), cartSignature(b));
  // an order from the history carries [{groupId, optionId}] and the note
  const fromHistory = [{ menuId: 'ramen', quantity: 1, toppings: [], note: 'ネギ抜き',
    options: [{ groupId: 'firmness', optionId: 'firm' }, { groupId: 'extras', optionId: 'garlic' }, { groupId: 'extras', optionId: 'spicy' }] }];
  assert.equal(cartSignature(fromHistory), cartSignature(a));
  assert.notEqual(cartSignature([{ ...a[0], note: 'ネギ多め' }]), cartSignature(a));
  assert.notEqual(cartSignature([{ ...a[0], options: { firmness: ['soft'] } }]), cartSignature(a));
  // lines differing only by the note are not summed
  assert.equal(normalizeCart([a[0], { ...a[0], note: '' }]).length, 2);
  assert.equal(normalizeCart([a[0], b[0]])[0].quantity, 2);
  // a line without options or note is unchanged
  assert.deepEqual(normalizeCart([{ menuId: 'tea', quantity: 1, note: null }]), [{ menuId: 'tea', quantity: 1, toppings: [] }]);
});
