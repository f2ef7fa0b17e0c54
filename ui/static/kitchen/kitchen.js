// kitchen.js — the kitchen display.
//
// Open orders, oldest first, kept live by Server-Sent Events from
// GET /api/kitchen/stream. Event ids are Raft log indexes, the same on
// every node, so when the node dies the screen reconnects to another one
// with ?lastEventId= and misses nothing; events at or below the last id
// seen are ignored. EventSource cannot send headers, so each connection
// opens with a short-lived, single-use ticket in the query (?ticket=, from
// POST /api/kitchen/stream-ticket), never the token itself.

import '/assets/shell.js'; // first: draws the shared markup the code below looks up
import { createStaffApi, menuBody } from '/assets/staff-api.js';
import { createI18n } from '/assets/i18n.js';
import { safeStorage, fetchWithTimeout } from '/assets/cluster.js';
import { $, h, clear, show, setError, mmss, timeOf, toast, confirmDialog } from '/assets/dom.js';
import { createCallsPanel, withCallStrings } from '/assets/calls.js';
import { createHealthBanner, withHealthStrings } from '/assets/health.js';

const T = createI18n(withHealthStrings(withCallStrings({
  ja: {
    'kitchen.title': 'MasterOrder — キッチン画面',
    'kitchen.brand': 'キッチン',
    'kitchen.empty': 'いまは注文がありません。',
    'kitchen.count': '{n} 件',
    'kitchen.conn.live': '● 接続中',
    'kitchen.conn.connecting': '接続しています…',
    'kitchen.conn.reconnecting': '切断 — 再接続中…',
    'kitchen.banner': '接続が切れました。再接続中です… 新しい注文が表示されない可能性があります。',
    'kitchen.offline': 'オフライン — 最後に受け取った注文を表示しています。サーバーの復旧後に新しい注文が届きます。',
    'kitchen.printerOffline': 'プリンター停止中: {names}（待ち {n} 枚）。復旧すると印刷されます。',
    'kitchen.bump.ACCEPTED': '調理開始',
    'kitchen.bump.COOKING': 'できあがり',
    'kitchen.bump.READY': '提供済み',
    'kitchen.recall': '戻す',
    'kitchen.cancel': '取消',
    'kitchen.cancel.confirm': 'テーブル {table} の注文 #{orderId} を取り消しますか？（在庫は戻ります）',
    'kitchen.cancel.yes': '取り消す',
    'kitchen.served.title': '最近の提供済み（「戻す」で戻せます）',
    'kitchen.table': '卓',
    'kitchen.sound.on': '音: ON',
    'kitchen.sound.off': '音: OFF',
    'kitchen.sound.blocked': 'タップで音を有効に',
    'kitchen.soldout.open': '売り切れ設定',
    'kitchen.soldout.title': '売り切れ設定',
    'kitchen.soldout.help': 'ボタンを押すと、売り切れ／販売中が切り替わります。',
    'kitchen.soldout.items': 'メニュー',
    'kitchen.soldout.toppings': 'トッピング',
    'kitchen.soldout.sellable': '販売中',
    'kitchen.soldout.out': '売り切れ',
    'kitchen.new': '新しい注文: テーブル {table}',
    'kitchen.station': 'ステーション',
    'kitchen.station.all': '全体',
    'kitchen.station.done': '完了',
    'kitchen.station.bumped': '{stations} 完了',
  },
  en: {
    'kitchen.title': 'MasterOrder — Kitchen screen',
    'kitchen.brand': 'Kitchen',
    'kitchen.empty': 'No open orders.',
    'kitchen.count': '{n} open',
    'kitchen.conn.live': '● Live',
    'kitchen.conn.connecting': 'Connecting…',
    'kitchen.conn.reconnecting': 'Disconnected — reconnecting…',
    'kitchen.banner': 'Disconnected. Reconnecting… New orders may not show until the connection is back.',
    'kitchen.offline': 'Offline — showing the last known orders. New orders arrive once the servers are back.',
    'kitchen.printerOffline': 'Printer offline: {names} ({n} queued). Tickets print once it is back.',
    'kitchen.bump.ACCEPTED': 'Start cooking',
    'kitchen.bump.COOKING': 'Ready',
    'kitchen.bump.READY': 'Served',
    'kitchen.recall': 'Recall',
    'kitchen.cancel': 'Cancel',
    'kitchen.cancel.confirm': 'Cancel order #{orderId} for table {table}? (stock is put back)',
    'kitchen.cancel.yes': 'Cancel order',
    'kitchen.served.title': 'Recently served (Recall brings one back)',
    'kitchen.table': 'Table',
    'kitchen.sound.on': 'Sound: on',
    'kitchen.sound.off': 'Sound: off',
    'kitchen.sound.blocked': 'Tap to enable sound',
    'kitchen.soldout.open': 'Sold out',
    'kitchen.soldout.title': 'Sold-out switches',
    'kitchen.soldout.help': 'Tap a button to switch between on sale and sold out.',
    'kitchen.soldout.items': 'Menu',
    'kitchen.soldout.toppings': 'Toppings',
    'kitchen.soldout.sellable': 'On sale',
    'kitchen.soldout.out': 'Sold out',
    'kitchen.new': 'New order: table {table}',
    'kitchen.station': 'Station',
    'kitchen.station.all': 'All',
    'kitchen.station.done': 'Done',
    'kitchen.station.bumped': '{stations} done',
  },
})));

const OPEN = ['ACCEPTED', 'COOKING', 'READY'];
const NEXT = { ACCEPTED: 'COOKING', COOKING: 'READY', READY: 'SERVED' };
const BACK = { COOKING: 'ACCEPTED', READY: 'COOKING', SERVED: 'READY' };
const WARN_MS = 10 * 60 * 1000;
const LATE_MS = 20 * 60 * 1000;
const SERVED_KEEP = 6;
// The server sends a "ping" event at least every 15 s: 45 s of silence is
// a dead connection (a box that lost power or froze sends nothing).
const SILENCE_MS = 45 * 1000;
const SOUND_KEY = 'masterorder.kitchen.sound';
// The station this screen serves is remembered on the device: a noodle
// screen stays a noodle screen across reloads.
const STATION_KEY = 'masterorder.kitchen.station';

const api = createStaffApi();
const prefs = safeStorage(globalThis.localStorage);

const state = {
  orders: new Map(), // orderId → order (open ones)
  served: [], // recently served, newest first
  lastId: null, // last event id applied
  es: null,
  base: null,
  conn: 'connecting',
  attempt: 0,
  reconnectTimer: null,
  connectGen: 0, // bumped by closeStream: a connect still fetching its ticket gives up
  lastMessageAt: 0,
  offline: false,
  fresh: new Set(), // order ids to flash
  soundOn: prefs.getItem(SOUND_KEY) !== 'off',
  audio: null,
  menu: [],
  stock: new Map(),
  busy: new Set(),
  station: prefs.getItem(STATION_KEY) || '',
};

// withStation adds ?station= to a kitchen path when this screen serves one.
function withStation(path) {
  if (!state.station) return path;
  return path + (path.includes('?') ? '&' : '?') + 'station=' + encodeURIComponent(state.station);
}

// openHere: an order this screen still has work on (a station's screen
// drops an order once its station bumped it).
function openHere(o) {
  return OPEN.includes(o.status) && !(state.station && (o.bumped || []).includes(state.station));
}

// ---------------------------------------------------------------- connection state

function setConn(s) {
  state.conn = s;
  const el = $('#conn-status');
  el.dataset.state = s;
  el.textContent = T.t('kitchen.conn.' + s) + (s === 'live' && state.base && state.base !== location.origin ? ' (' + new URL(state.base).host + ')' : '');
  const banner = $('#conn-banner');
  banner.textContent = T.t('kitchen.banner');
  banner.hidden = s !== 'reconnecting';
}

// setOffline: the box this screen talks to lost the others and serves the
// orders it holds (X-MasterOrder-Stale); the stream goes on live once the
// quorum is back.
function setOffline(on) {
  state.offline = on;
  const b = $('#offline-banner');
  b.textContent = T.t('kitchen.offline');
  b.hidden = !on;
}

// checkOffline asks the stream's box whether it has a quorum (EventSource
// cannot read the stream's headers); on open and on every ping.
async function checkOffline(es) {
  try {
    const res = await fetchWithTimeout(globalThis.fetch.bind(globalThis), state.base + '/api/cluster/status', { cache: 'no-store', credentials: 'omit' }, 5000);
    const d = await res.json();
    if (es === state.es && d && typeof d.stale === 'boolean') setOffline(d.stale);
  } catch (_) {
    // the stream itself notices a dead box
  }
}

// checkPrinters warns when a ticket printer is offline (its tickets
// queue on the cluster and print when it is back).
let printersDown = [];
async function checkPrinters() {
  try {
    const d = await api.get('/api/staff/printers', { timeoutMs: 5000 });
    printersDown = ((d && d.printers) || []).filter((p) => !p.online);
  } catch (_) {
    return; // the connection banners speak for a dead box
  }
  renderPrinters();
}

function renderPrinters() {
  const b = $('#printer-banner');
  const n = printersDown.reduce((a, p) => a + (p.queued || 0), 0);
  b.textContent = T.t('kitchen.printerOffline', { names: printersDown.map((p) => p.name || p.printerId).join(', '), n });
  b.hidden = printersDown.length === 0;
}

// ---------------------------------------------------------------- stream

function streamUrl(base, ticket) {
  const q = new URLSearchParams();
  q.set('ticket', ticket);
  if (state.lastId != null) q.set('lastEventId', String(state.lastId));
  if (state.station) q.set('station', state.station);
  return base + '/api/kitchen/stream?' + q.toString();
}

function closeStream() {
  state.connectGen++;
  if (state.es) {
    state.es.close();
    state.es = null;
  }
}

// connect opens the stream with a fresh ticket (one per connection: a
// ticket opens one stream and lapses in 60 s).
async function connect() {
  clearTimeout(state.reconnectTimer);
  closeStream();
  const gen = ++state.connectGen;
  let ticket;
  try {
    const d = await api.post('/api/kitchen/stream-ticket', {});
    ticket = d && d.ticket;
  } catch (e) {
    if (e.status === 401) return; // onUnauthorized shows the login
  }
  if (gen !== state.connectGen) return; // a newer connect (or logout) won
  if (!ticket) {
    streamLost();
    return;
  }
  const base = api.pool.current();
  const es = new EventSource(streamUrl(base, ticket));
  state.es = es;
  state.base = base;
  if (state.conn !== 'reconnecting') setConn('connecting');
  es.addEventListener('open', () => {
    if (es !== state.es) return;
    state.attempt = 0;
    state.lastMessageAt = Date.now();
    api.pool.ok(base);
    setConn('live');
    checkOffline(es);
  });
  es.addEventListener('error', () => {
    if (es !== state.es) return;
    // EventSource would retry the same node by itself; a dead node needs
    // another one, so the reconnecting is done here.
    streamLost();
  });
  for (const type of ['snapshot', 'order.created', 'order.updated', 'session.closed', 'call.created', 'call.done']) {
    es.addEventListener(type, (ev) => {
      if (es !== state.es) return;
      onEvent(type, ev);
    });
  }
  es.addEventListener('ping', () => {
    if (es !== state.es) return;
    state.lastMessageAt = Date.now();
    checkOffline(es);
  });
}

function streamLost() {
  closeStream();
  setConn('reconnecting');
  if (state.base) api.pool.failed(state.base);
  state.attempt++;
  const delay = Math.min(500 * 2 ** (state.attempt - 1), 8000);
  clearTimeout(state.reconnectTimer);
  state.reconnectTimer = setTimeout(probeThenConnect, delay);
}

// probeThenConnect checks the token and finds a live node with an ordinary
// request (which moves through the nodes by itself) before opening the
// stream again: EventSource cannot tell a 401 from a dead node.
async function probeThenConnect() {
  if (!api.token()) return showLogin();
  try {
    const d = await api.get(withStation('/api/kitchen/orders'));
    if (state.lastId == null) {
      replaceAll((d && d.orders) || []);
      render();
    }
  } catch (e) {
    if (e.status === 401) return; // onUnauthorized shows the login
    streamLost();
    return;
  }
  connect();
}

function eventId(ev) {
  if (!ev.lastEventId) return null;
  const n = Number(ev.lastEventId);
  return Number.isFinite(n) ? n : null;
}

function onEvent(type, ev) {
  state.lastMessageAt = Date.now();
  if (state.conn !== 'live') setConn('live');
  let data;
  try {
    data = JSON.parse(ev.data);
  } catch (_) {
    return;
  }
  const id = eventId(ev);
  if (type === 'snapshot') {
    // a snapshot is the whole truth as of its index
    replaceAll(data.orders || []);
    if (id != null) state.lastId = id;
    render();
    calls.refresh(); // calls are not in the snapshot: ask
    return;
  }
  if (id != null && state.lastId != null && id <= state.lastId) return; // seen already
  if (id != null) state.lastId = id;
  switch (type) {
    case 'call.created':
    case 'call.done':
      calls.refresh();
      break;
    case 'order.created':
      if (data.order) {
        upsert(data.order);
        if (openHere(data.order)) {
          state.fresh.add(data.order.orderId);
          beep();
          toast(T.t('kitchen.new', { table: data.order.tableId }), 'ok');
        }
      }
      break;
    case 'order.updated':
      if (data.order) upsert(data.order);
      break;
    case 'session.closed':
      for (const [oid, o] of state.orders) if (o.sessionId === data.sessionId) state.orders.delete(oid);
      state.served = state.served.filter((o) => o.sessionId !== data.sessionId);
      break;
  }
  render();
}

function replaceAll(orders) {
  state.orders = new Map();
  for (const o of orders) if (openHere(o)) state.orders.set(o.orderId, o);
}

function upsert(o) {
  state.served = state.served.filter((x) => x.orderId !== o.orderId);
  if (openHere(o)) {
    state.orders.set(o.orderId, o);
    return;
  }
  state.orders.delete(o.orderId);
  if (o.status === 'SERVED') {
    state.served.unshift(o);
    state.served.length = Math.min(state.served.length, SERVED_KEEP);
  }
}

// ---------------------------------------------------------------- board

function sorted() {
  return [...state.orders.values()].sort((a, b) => {
    const ta = Date.parse(a.createdAt) || 0;
    const tb = Date.parse(b.createdAt) || 0;
    return ta - tb || a.orderId - b.orderId;
  });
}

function render() {
  const board = clear($('#order-board'));
  const list = sorted();
  for (const o of list) board.append(ticket(o, false));
  show('#board-empty', list.length === 0);
  $('#order-count').textContent = T.t('kitchen.count', { n: list.length });
  const served = clear($('#served-list'));
  for (const o of state.served) served.append(ticket(o, true));
  state.fresh.clear();
  tick();
}

function ticket(o, served) {
  const next = NEXT[o.status];
  const back = BACK[o.status];
  const busy = state.busy.has(o.orderId);
  return h(
    'article',
    {
      class: ['ticket', state.fresh.has(o.orderId) && 'is-new'],
      dataset: { orderId: String(o.orderId), status: o.status, created: o.createdAt || '' },
    },
    h(
      'div',
      { class: 'head' },
      o.ticketNo ? h('span', { class: 'ticket-no', text: 'No.' + o.ticketNo }) : null,
      h('span', { class: 'table', text: o.tableId }),
      h('span', { class: 'muted', text: '#' + o.orderId }),
      h('span', { class: 'status status-' + o.status, text: T.t('status.' + o.status) }),
      served ? null : h('span', { class: 'age' }),
    ),
    h(
      'ul',
      { class: 'lines' },
      (o.items || []).map((it) =>
        h(
          'li',
          null,
          h('span', { class: ['qty', it.quantity > 1 && 'many'], text: it.quantity + '×' }),
          h('span', { text: it.name || it.menuId }),
          (it.options || []).length ? h('ul', { class: 'options' }, it.options.map((x) => h('li', { text: '・' + (x.name || x.optionId) }))) : null,
          (it.toppings || []).length ? h('ul', { class: 'toppings' }, it.toppings.map((t) => h('li', { text: '+ ' + (t.name || t.toppingId) }))) : null,
          it.note ? h('div', { class: 'line-note', text: '※ ' + it.note }) : null,
        ),
      ),
    ),
    !state.station && (o.bumped || []).length
      ? h('div', { class: 'muted small-text bumped', text: T.t('kitchen.station.bumped', { stations: o.bumped.join(', ') }) })
      : null,
    state.station && !served
      ? h(
          'div',
          { class: 'actions' },
          h('button', { type: 'button', class: 'primary', dataset: { action: 'station-bump' }, disabled: busy, text: T.t('kitchen.station.done'), onclick: () => bumpStation(o) }),
        )
      : h(
      'div',
      { class: 'actions' },
      back
        ? h('button', { type: 'button', class: 'small', dataset: { action: 'recall' }, disabled: busy, text: T.t('kitchen.recall'), onclick: () => setStatus(o, back) })
        : null,
      served ? null : h('button', { type: 'button', class: 'small danger', dataset: { action: 'cancel' }, disabled: busy, text: T.t('kitchen.cancel'), onclick: () => cancelOrder(o) }),
      next && !served ? h('button', { type: 'button', class: 'primary', dataset: { action: 'bump' }, disabled: busy, text: T.t('kitchen.bump.' + o.status), onclick: () => setStatus(o, next) }) : null,
    ),
  );
}

// tick refreshes the age timers and the clock without redrawing tickets.
function tick() {
  const now = api.serverNow();
  for (const el of document.querySelectorAll('#order-board .ticket')) {
    const created = Date.parse(el.dataset.created);
    const age = Number.isNaN(created) ? 0 : Math.max(0, now - created);
    const ageEl = el.querySelector('.age');
    if (ageEl) ageEl.textContent = mmss(age);
    el.classList.toggle('age-warn', age >= WARN_MS && age < LATE_MS);
    el.classList.toggle('age-late', age >= LATE_MS);
  }
  $('#clock').textContent = timeOf(new Date()); // on the store's clock (its time zone)
  // a connection that went silent although the server pings is dead
  if (state.conn === 'live' && Date.now() - state.lastMessageAt > SILENCE_MS) streamLost();
}

async function setStatus(o, status) {
  state.busy.add(o.orderId);
  render();
  try {
    const updated = await api.patch('/api/staff/orders/' + encodeURIComponent(o.orderId), { status });
    if (updated && updated.orderId != null) upsert(updated);
  } catch (e) {
    if (e.status !== 401) toast(e.message, 'error');
    if (e.reasonCode === 'INVALID_TRANSITION') reload();
  } finally {
    state.busy.delete(o.orderId);
    render();
  }
}

// bumpStation marks this station's lines of o done; the server makes the
// order READY once every station in it has bumped.
async function bumpStation(o) {
  state.busy.add(o.orderId);
  render();
  try {
    const updated = await api.post('/api/kitchen/orders/' + encodeURIComponent(o.orderId) + '/bump', { station: state.station });
    if (updated && updated.orderId != null) upsert(updated);
  } catch (e) {
    if (e.status !== 401) toast(e.message, 'error');
    if (e.reasonCode === 'INVALID_TRANSITION' || e.reasonCode === 'INVALID_REQUEST') reload();
  } finally {
    state.busy.delete(o.orderId);
    render();
  }
}

// loadStations fills the station picker from the menu's stations.
async function loadStations() {
  let items = [];
  try {
    const d = await api.get('/api/staff/menu');
    items = (d && d.items) || [];
  } catch (_) {
    // the picker keeps what it has; the board works without it
  }
  const stations = [...new Set(items.map((i) => i.station).filter(Boolean))].sort();
  if (state.station && !stations.includes(state.station)) stations.push(state.station);
  const sel = $('#station-select');
  const all = sel.querySelector('option[value=""]');
  clear(sel).append(all);
  for (const s of stations) sel.append(h('option', { value: s, text: s }));
  sel.value = state.station;
}

function chooseStation(s) {
  state.station = s;
  prefs.setItem(STATION_KEY, s);
  // Another station's view is another stream: start from a snapshot.
  closeStream();
  state.lastId = null;
  state.orders = new Map();
  state.served = [];
  render();
  reload().then(() => {
    if (api.token()) connect();
  });
}

async function cancelOrder(o) {
  const ok = await confirmDialog(T.t('kitchen.cancel.confirm', { table: o.tableId, orderId: o.orderId }), {
    ok: T.t('kitchen.cancel.yes'),
    cancel: T.t('common.no'),
    danger: true,
    kind: 'cancel',
  });
  if (ok) setStatus(o, 'CANCELLED');
}

async function reload() {
  try {
    const d = await api.get(withStation('/api/kitchen/orders'));
    replaceAll((d && d.orders) || []);
    render();
  } catch (e) {
    if (e.status !== 401) toast(e.message, 'error');
  }
}

// ---------------------------------------------------------------- sound

function audioContext() {
  const AC = globalThis.AudioContext || globalThis.webkitAudioContext;
  if (!AC) return null;
  if (!state.audio) state.audio = new AC();
  return state.audio;
}

function beep() {
  if (!state.soundOn) return;
  const ctx = state.audio;
  if (!ctx || ctx.state !== 'running') {
    renderSound();
    return;
  }
  const t0 = ctx.currentTime;
  for (const [freq, at] of [
    [880, 0],
    [1318.5, 0.2],
  ]) {
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.type = 'sine';
    osc.frequency.value = freq;
    gain.gain.setValueAtTime(0.0001, t0 + at);
    gain.gain.exponentialRampToValueAtTime(0.5, t0 + at + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, t0 + at + 0.18);
    osc.connect(gain);
    gain.connect(ctx.destination);
    osc.start(t0 + at);
    osc.stop(t0 + at + 0.2);
  }
}

// unlockAudio must run inside a user gesture: browsers keep audio off
// until the page was touched.
function unlockAudio() {
  const ctx = audioContext();
  if (ctx && ctx.state !== 'running') ctx.resume().then(renderSound, renderSound);
}

function renderSound() {
  const b = $('#sound-toggle');
  const blocked = state.soundOn && (!state.audio || state.audio.state !== 'running');
  b.textContent = !state.soundOn ? T.t('kitchen.sound.off') : blocked ? T.t('kitchen.sound.blocked') : T.t('kitchen.sound.on');
  b.dataset.sound = !state.soundOn ? 'off' : blocked ? 'blocked' : 'on';
}

function bindSound() {
  $('#sound-toggle').addEventListener('click', () => {
    const blocked = state.soundOn && (!state.audio || state.audio.state !== 'running');
    if (!blocked) state.soundOn = !state.soundOn;
    prefs.setItem(SOUND_KEY, state.soundOn ? 'on' : 'off');
    if (state.soundOn) {
      unlockAudio();
      setTimeout(beep, 50);
    }
    renderSound();
  });
  // any touch of the screen unlocks audio
  document.addEventListener('pointerdown', () => {
    if (state.soundOn) unlockAudio();
  });
}

// ---------------------------------------------------------------- sold out

async function openSoldOut() {
  show('#soldout-panel', true);
  await loadSoldOut();
}

async function loadSoldOut() {
  try {
    const [menu, stock] = await Promise.all([api.get('/api/staff/menu'), api.get('/api/staff/stock')]);
    state.menu = (menu && menu.items) || [];
    state.stock = new Map(((stock && stock.stock) || []).map((s) => [s.sku, s.quantity]));
  } catch (e) {
    if (e.status !== 401) toast(e.message, 'error');
  }
  renderSoldOut();
}

function itemSoldOut(item) {
  return item.available === false || state.stock.get(item.menuId) === 0;
}

function renderSoldOut() {
  const items = clear($('#soldout-items'));
  const tops = clear($('#soldout-toppings'));
  const seen = new Map();
  for (const item of state.menu) {
    const out = itemSoldOut(item);
    items.append(
      h(
        'div',
        { class: 'soldout-row' },
        h('span', { class: 'name', text: item.name + (T.lang() === 'en' && item.nameEn ? ' / ' + item.nameEn : '') }),
        h('button', {
          type: 'button',
          class: ['small', out && 'is-soldout'],
          dataset: { soldoutMenuId: item.menuId, soldout: out ? 'true' : 'false' },
          text: out ? T.t('kitchen.soldout.out') : T.t('kitchen.soldout.sellable'),
          onclick: () => toggleItem(item),
        }),
      ),
    );
    for (const t of item.toppings || []) if (!seen.has(t.toppingId)) seen.set(t.toppingId, t);
  }
  for (const t of seen.values()) {
    const out = state.stock.get(t.toppingId) === 0;
    tops.append(
      h(
        'div',
        { class: 'soldout-row' },
        h('span', { class: 'name', text: t.name }),
        h('button', {
          type: 'button',
          class: ['small', out && 'is-soldout'],
          dataset: { soldoutToppingId: t.toppingId, soldout: out ? 'true' : 'false' },
          text: out ? T.t('kitchen.soldout.out') : T.t('kitchen.soldout.sellable'),
          onclick: () => toggleTopping(t.toppingId),
        }),
      ),
    );
  }
}

// An item is sold out when it is switched off or its stock is 0. Selling
// out switches it off; selling again switches it on and, if its stock
// says 0, stops counting it.
async function toggleItem(item) {
  try {
    if (!itemSoldOut(item)) {
      await api.put('/api/staff/menu/' + encodeURIComponent(item.menuId), menuBody(item, { available: false }));
    } else {
      if (item.available === false) await api.put('/api/staff/menu/' + encodeURIComponent(item.menuId), menuBody(item, { available: true }));
      if (state.stock.get(item.menuId) === 0) await api.put('/api/staff/stock/' + encodeURIComponent(item.menuId), { quantity: null });
    }
  } catch (e) {
    if (e.status !== 401) toast(e.message, 'error');
  }
  await loadSoldOut();
}

async function toggleTopping(toppingId) {
  const out = state.stock.get(toppingId) === 0;
  try {
    await api.put('/api/staff/stock/' + encodeURIComponent(toppingId), { quantity: out ? null : 0 });
  } catch (e) {
    if (e.status !== 401) toast(e.message, 'error');
  }
  await loadSoldOut();
}

// ---------------------------------------------------------------- login

function showLogin(message) {
  closeStream();
  health.stop();
  state.lastId = null; // the next login starts from a snapshot
  clearTimeout(state.reconnectTimer);
  show('#board', false);
  show('#logout', false);
  show('#login', true);
  setError('#login-error', message);
  setConn('connecting');
  $('#login-password').focus();
}

async function startBoard() {
  // The banners above the board first, as on the staff screen: a banner
  // drawn after the board pushes a ticket down under a cook's finger.
  await health.start();
  if (!api.token()) return; // refused meanwhile: the login form is back
  show('#login', false);
  show('#board', true);
  show('#logout', true);
  api.pool.refresh().catch(() => {});
  await reload();
  if (!api.token()) return;
  loadStations();
  calls.start();
  connect();
  checkPrinters();
}

function bindLogin() {
  $('#login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    unlockAudio();
    try {
      await api.login($('#login-password').value);
      $('#login-password').value = '';
      startBoard();
    } catch (e) {
      setError('#login-error', e.message || [T, 'login.failed']);
    }
  });
  $('#logout').addEventListener('click', async () => {
    await api.logout();
    showLogin();
  });
  api.onUnauthorized(() => showLogin());
  api.onStale(setOffline);
}

// ---------------------------------------------------------------- start

const calls = createCallsPanel({ el: $('#calls-panel'), api, t: T.t, ring: beep });
// A box silent for five minutes, or a memory card in trouble: the cooks
// tell the manager.
// And while the boxes do not know the time, they ask for a manager.
const health = createHealthBanner({
  el: $('#health-banner'),
  api,
  T,
  tail: 'health.banner.kitchen',
  clockEl: $('#clock-banner'),
  clockMode: () => 'kitchen',
});

function start() {
  T.apply();
  T.bindToggle($('#lang-toggle'));
  T.onChange(() => {
    setConn(state.conn);
    setOffline(state.offline);
    renderPrinters();
    health.render();
    render();
    renderSound();
    renderSoldOut();
    calls.render();
  });
  bindLogin();
  bindSound();
  renderSound();
  $('#soldout-open').addEventListener('click', openSoldOut);
  $('#station-select').addEventListener('change', (ev) => chooseStation(ev.currentTarget.value));
  $('#soldout-close').addEventListener('click', () => show('#soldout-panel', false));
  setInterval(tick, 1000);
  setInterval(() => {
    if (api.token()) checkPrinters();
  }, 10000);
  setConn('connecting');
  if (api.token()) startBoard();
  else showLogin();
}

start();
