// guest.js — the guest's phone: PIN, menu, cart, confirm, order history.
// Opened from the table's QR code as /guest/?s=SESSION. Orders go through
// order-sdk.js, which owns every rule about keys, retries and duplicates;
// this file only draws screens and reacts to the SDK's outcomes.

import '/assets/shell.js'; // first: draws the shared markup the code below looks up
import { createOrderSdk } from '/assets/order-sdk.js';
import { createI18n, getLang, GUEST_LANGS } from '/assets/i18n.js';
import { withContentStrings, CATEGORY_NAMES_MORE } from './strings.js';
import { localName, cardPicture, cardDetails, filterBar, hiddenAllergens, hiddenBy } from './menucontent.js';
import { safeStorage } from '/assets/cluster.js';
import { $, $$, h, clear, show, setError, yen, timeOf, toast, confirmDialog } from '/assets/dom.js';

const T = createI18n(withContentStrings({
  ja: {
    'guest.brand': 'モバイルオーダー',
    'guest.table': 'テーブル {table}',
    'guest.nosession.title': 'テーブルのQRコードを読み取ってください',
    'guest.nosession.body': 'このページはテーブルに置かれたQRコードから開きます。',
    'guest.pin.title': 'PINを入力してください',
    'guest.pin.help': 'テーブルのカードに書かれた4桁の番号です。',
    'guest.pin.label': 'PIN（4桁）',
    'guest.pin.submit': 'はじめる',
    'guest.pin.format': '4桁の数字を入力してください。',
    'guest.nav.menu': 'メニュー',
    'guest.nav.cart': 'カート',
    'guest.nav.history': '注文履歴',
    'guest.menu.add': '追加',
    'guest.menu.soldout': '売り切れ',
    'guest.menu.added': '{name} をカートに追加しました',
    'guest.menu.empty': 'ただいまご注文いただけるメニューがありません。',
    'guest.sheet.qty': '数量',
    'guest.sheet.add': 'カートに追加  {price}',
    'guest.sheet.required': '必須',
    'guest.sheet.upTo': '{max}つまで',
    'guest.sheet.choose': '「{group}」を選んでください',
    'guest.sheet.note': 'ご要望（任意）',
    'guest.sheet.notePlaceholder': '例: ネギ抜き',
    'guest.ticket': 'お呼び出し番号',
    'guest.cart.title': 'ご注文内容の確認',
    'guest.cart.empty': 'カートは空です。',
    'guest.cart.total': '合計（税込）',
    'guest.cart.note': '「注文を確定する」を押すと厨房に届きます。',
    'guest.cart.confirm': '注文を確定する',
    'guest.cart.sending': '送信中…',
    'guest.cart.back': 'メニューに戻る',
    'guest.cart.remove': '削除',
    'guest.cart.unavailable': 'この商品は現在ご注文いただけません',
    'guest.cart.fixSoldout': '売り切れの商品をカートから削除してください。',
    'guest.cart.uncertain': 'ご注文が届いたかどうか、注文履歴でご確認いただけます。',
    'guest.done.ordered': 'ご注文を受け付けました',
    'guest.done.replayed': 'ご注文はすでに受け付けています',
    'guest.done.detail': '注文番号 #{orderId}・合計 {total}（税込）',
    'guest.done.history': '注文履歴を見る',
    'guest.done.menu': 'メニューに戻る',
    'guest.repeat.question': '同じ内容のご注文（注文番号 #{orderId}）を少し前に受け付けています。もう一度同じものを注文しますか？',
    'guest.repeat.yes': 'もう一度注文する',
    'guest.repeat.no': 'やめる',
    'guest.history.title': '注文履歴',
    'guest.history.empty': 'まだご注文はありません。',
    'guest.history.updated': '{time} 更新',
    'guest.closed.title': 'ご利用ありがとうございました',
    'guest.call.staff': '店員を呼ぶ',
    'guest.call.bill': 'お会計',
    'guest.call.water': 'お水',
    'guest.call.sent.staff': '店員をお呼びしました。少々お待ちください。',
    'guest.call.sent.bill': 'お会計をお伝えしました。席でお待ちください。',
    'guest.call.sent.water': 'お水をお持ちします。',
    'guest.notfound.title': 'テーブルが見つかりません',
    'guest.net': '接続が不安定です。自動で再試行しています…',
    'guest.offline': 'オフライン — 最後に確認できた注文を表示しています。いまは注文できません。',
    'guest.priceChanged': '価格が変わりました。内容をご確認のうえ、もう一度お試しください。',
  },
  en: {
    'guest.brand': 'Mobile order',
    'guest.table': 'Table {table}',
    'guest.nosession.title': 'Please scan the QR code on your table',
    'guest.nosession.body': 'This page opens from the QR code placed on your table.',
    'guest.pin.title': 'Enter your PIN',
    'guest.pin.help': 'The 4-digit number on your table card.',
    'guest.pin.label': 'PIN (4 digits)',
    'guest.pin.submit': 'Start',
    'guest.pin.format': 'Please enter 4 digits.',
    'guest.nav.menu': 'Menu',
    'guest.nav.cart': 'Cart',
    'guest.nav.history': 'My orders',
    'guest.menu.add': 'Add',
    'guest.menu.soldout': 'Sold out',
    'guest.menu.added': 'Added {name} to your cart',
    'guest.menu.empty': 'Nothing can be ordered right now.',
    'guest.sheet.qty': 'Quantity',
    'guest.sheet.add': 'Add to cart  {price}',
    'guest.sheet.required': 'Required',
    'guest.sheet.upTo': 'up to {max}',
    'guest.sheet.choose': 'Choose "{group}"',
    'guest.sheet.note': 'Request (optional)',
    'guest.sheet.notePlaceholder': 'e.g. no green onions',
    'guest.ticket': 'Your number',
    'guest.cart.title': 'Check your order',
    'guest.cart.empty': 'Your cart is empty.',
    'guest.cart.total': 'Total (tax incl.)',
    'guest.cart.note': 'Tap "Place order" to send it to the kitchen.',
    'guest.cart.confirm': 'Place order',
    'guest.cart.sending': 'Sending…',
    'guest.cart.back': 'Back to menu',
    'guest.cart.remove': 'Remove',
    'guest.cart.unavailable': 'This item cannot be ordered right now',
    'guest.cart.fixSoldout': 'Please remove sold-out items from your cart.',
    'guest.cart.uncertain': 'You can check in your order history whether the order arrived.',
    'guest.done.ordered': 'Your order has been received',
    'guest.done.replayed': 'Your order was already received',
    'guest.done.detail': 'Order #{orderId} · total {total} (tax incl.)',
    'guest.done.history': 'See my orders',
    'guest.done.menu': 'Back to menu',
    'guest.repeat.question': 'We received exactly this order (#{orderId}) a moment ago. Order the same again?',
    'guest.repeat.yes': 'Order again',
    'guest.repeat.no': 'No',
    'guest.history.title': 'My orders',
    'guest.history.empty': 'No orders yet.',
    'guest.history.updated': 'updated {time}',
    'guest.closed.title': 'Thank you for dining with us',
    'guest.call.staff': 'Call staff',
    'guest.call.bill': 'Bill please',
    'guest.call.water': 'Water',
    'guest.call.sent.staff': 'A staff member is on the way.',
    'guest.call.sent.bill': 'We will bring your bill. Please stay seated.',
    'guest.call.sent.water': 'We will bring water.',
    'guest.notfound.title': 'Table not found',
    'guest.net': 'The connection is unstable. Retrying automatically…',
    'guest.offline': 'Offline — showing the last known orders. Ordering is paused.',
    'guest.priceChanged': 'Prices have changed. Please check your order and try again.',
  },
}), { langs: Object.keys(GUEST_LANGS), fallback: 'ja' });

const CATEGORY_NAMES = {
  ja: { noodles: '麺類', ramen: 'ラーメン', rice: 'ご飯もの', sides: 'サイド', side: 'サイド', drinks: 'ドリンク', drink: 'ドリンク', dessert: 'デザート', desserts: 'デザート', set: 'セット', sets: 'セット', toppings: 'トッピング', other: 'その他' },
  en: { noodles: 'Noodles', ramen: 'Ramen', rice: 'Rice', sides: 'Sides', side: 'Sides', drinks: 'Drinks', drink: 'Drinks', dessert: 'Dessert', desserts: 'Desserts', set: 'Sets', sets: 'Sets', toppings: 'Toppings', other: 'Other' },
  ...CATEGORY_NAMES_MORE,
};

const sdk = createOrderSdk({ lang: getLang });
const sessionId = new URLSearchParams(location.search).get('s') || '';
const store = safeStorage(globalThis.sessionStorage);
const PIN_KEY = 'masterorder.pin.' + sessionId;
const CART_KEY = 'masterorder.cart.' + sessionId;

const HISTORY_FAST_MS = 5000;
const HISTORY_SLOW_MS = 20000;
const MENU_REFRESH_MS = 60000;

const state = {
  pin: store.getItem(PIN_KEY) || '',
  info: null,
  menu: [],
  categories: {}, // category → names by language (staff console)
  filterOpen: false,
  byId: new Map(),
  cart: loadCart(),
  screen: 'loading',
  orders: null,
  historyAt: null,
  sending: false,
  sheet: null,
  timers: [],
};

// ---------------------------------------------------------------- cart

function loadCart() {
  try {
    const v = JSON.parse(store.getItem(CART_KEY) || '[]');
    return Array.isArray(v) ? v.filter((l) => l && l.menuId && l.quantity > 0) : [];
  } catch (_) {
    return [];
  }
}

function saveCart() {
  store.setItem(CART_KEY, JSON.stringify(state.cart));
  renderCartCount();
}

// A cart line is {menuId, toppings, quantity, options?: {groupId:
// [optionId]}, note?}: options and the note make a line different, as
// they make the order different on the server.
function lineKey(line) {
  const opts = Object.keys(line.options || {})
    .sort()
    .map((g) => g + '=' + [...line.options[g]].sort().join('+'))
    .join(';');
  return line.menuId + '|' + [...line.toppings].sort().join(',') + '|' + opts + '|' + (line.note || '');
}

function addToCart(menuId, toppings, qty, options, note) {
  const line = { menuId, toppings: [...toppings].sort(), quantity: qty };
  if (options && Object.keys(options).length) line.options = options;
  if (note) line.note = note;
  const k = lineKey(line);
  const same = state.cart.find((l) => lineKey(l) === k);
  if (same) same.quantity = Math.min(99, same.quantity + qty);
  else state.cart.push(line);
  saveCart();
}

function cartItems() {
  return state.cart.map((l) => {
    const out = { menuId: l.menuId, quantity: l.quantity, toppings: l.toppings.slice() };
    if (l.options && Object.keys(l.options).length) out.options = l.options;
    if (l.note) out.note = l.note;
    return out;
  });
}

function unitPrice(line) {
  const item = state.byId.get(line.menuId);
  if (!item) return NaN;
  let p = Number(item.price);
  for (const tid of line.toppings) {
    const t = (item.toppings || []).find((x) => x.toppingId === tid);
    if (!t) return NaN;
    p += Number(t.price);
  }
  for (const [gid, ids] of Object.entries(line.options || {})) {
    const g = (item.optionGroups || []).find((x) => x.groupId === gid);
    for (const oid of ids) {
      const o = g && g.options.find((x) => x.optionId === oid);
      if (!o) return NaN;
      p += Number(o.price);
    }
  }
  return p;
}

// missingGroup is the first required group a line has not chosen (null
// when every choice is made).
function missingGroup(item, options) {
  for (const g of (item && item.optionGroups) || []) {
    if (((options || {})[g.groupId] || []).length < g.min) return g;
  }
  return null;
}

function cartTotal() {
  return state.cart.reduce((s, l) => s + unitPrice(l) * l.quantity, 0);
}

function soldOut(item) {
  return !item || item.soldOut === true || item.available === false;
}

function lineProblem(line) {
  const item = state.byId.get(line.menuId);
  if (soldOut(item)) return true;
  if (missingGroup(item, line.options) || !Number.isFinite(unitPrice(line))) return true;
  return line.toppings.some((tid) => {
    const t = (item.toppings || []).find((x) => x.toppingId === tid);
    return !t || t.soldOut === true;
  });
}

// ---------------------------------------------------------------- names

function itemName(item) {
  return localName(item, getLang());
}

// otherName: the second line of a card — the Japanese name (what the
// staff and the paper menu say) when the guest reads another language,
// the English one for a Japanese reader.
function otherName(item) {
  const shown = itemName(item);
  if (getLang() !== 'ja') return item.name !== shown ? item.name : '';
  return item.nameEn && item.nameEn !== item.name ? item.nameEn : '';
}

function toppingName(item, tid) {
  const t = item && (item.toppings || []).find((x) => x.toppingId === tid);
  if (!t) return tid;
  return localName(t, getLang());
}

// groupName: an option group's or option's label, picked like an item's.
function groupName(g) {
  return localName(g, getLang());
}

// optionNames are a line's chosen options, in the menu's order.
function optionNames(item, options) {
  const out = [];
  for (const g of (item && item.optionGroups) || []) {
    for (const o of g.options) if (((options || {})[g.groupId] || []).includes(o.optionId)) out.push(groupName(o));
  }
  return out;
}

function categoryName(c) {
  const l = getLang();
  const own = state.categories[c] || {};
  if (own[l]) return own[l];
  const builtIn = CATEGORY_NAMES[l] || CATEGORY_NAMES.en;
  const known = builtIn[String(c).toLowerCase()];
  if (known) return known;
  if (l !== 'ja' && own.en) return own.en;
  return c || builtIn.other;
}

// ---------------------------------------------------------------- screens

const SCREENS = ['loading', 'nosession', 'pin', 'menu', 'cart', 'done', 'history', 'closed'];
const WITH_NAV = ['menu', 'cart', 'done', 'history'];

function showScreen(name) {
  state.screen = name;
  show('#toast', false);
  for (const s of SCREENS) show('#screen-' + s, s === name);
  show('#bottom-nav', WITH_NAV.includes(name));
  for (const [id, scr] of [
    ['#nav-menu', 'menu'],
    ['#nav-cart', 'cart'],
    ['#nav-history', 'history'],
  ]) {
    $(id).classList.toggle('active', scr === name);
  }
  if (name === 'cart') {
    // a new cart screen: the requestId every tap here will use
    sdk.openCart(sessionId, cartItems());
    hideOrderMessages();
    renderCart();
  }
  if (name === 'history') {
    renderHistory();
    loadHistory();
  }
  if (name === 'pin') {
    setTimeout(() => $('#pin-input').focus(), 0);
  }
  window.scrollTo(0, 0);
}

function renderHeader() {
  $('#table-label').textContent = state.info && state.info.tableId ? T.t('guest.table', { table: state.info.tableId }) : '';
  // The shop's name, once the session tells it, in place of "Mobile order".
  const shop = (state.info && state.info.shopName) || '';
  const brand = $('#guest-brand');
  if (shop) {
    delete brand.dataset.i18n;
    brand.textContent = shop;
    document.title = shop;
  } else {
    T.put(brand, 'guest.brand');
  }
}

// setOffline shows the banner while the store servers answer from a box
// that lost the others (X-MasterOrder-Stale): the menu and history are
// what that box holds, and orders wait until the servers are back.
function setOffline(on) {
  const b = $('#offline-banner');
  b.textContent = T.t('guest.offline');
  b.hidden = !on;
}

function setNetworkTrouble(on) {
  const b = $('#net-banner');
  b.textContent = T.t('guest.net');
  b.hidden = !on;
}

// ---------------------------------------------------------------- errors

// handleSessionError handles the answers that end what the guest was
// doing; it returns true when it did.
function handleSessionError(e) {
  switch (e && e.reasonCode) {
    case 'INVALID_PIN':
      state.pin = '';
      store.removeItem(PIN_KEY);
      showScreen('pin');
      showPinError(e.message);
      return true;
    case 'PIN_LOCKED':
      state.pin = '';
      store.removeItem(PIN_KEY);
      showScreen('pin');
      showPinError(e.message);
      return true;
    case 'SESSION_CLOSED':
      closeDown(T.t('guest.closed.title'), e.message);
      return true;
    case 'SESSION_NOT_FOUND':
      closeDown(T.t('guest.notfound.title'), e.message);
      return true;
  }
  return false;
}

function closeDown(title, message) {
  stopTimers();
  store.removeItem(PIN_KEY);
  store.removeItem(CART_KEY);
  state.cart = [];
  $('#closed-title').textContent = title;
  $('#closed-message').textContent = message || '';
  $('#table-label').textContent = '';
  showScreen('closed');
}

function showPinError(msg) {
  setError('#pin-error', msg);
}

function hideOrderMessages() {
  show('#order-error', false);
  show('#order-uncertain', false);
}

function showOrderError(msg, uncertain) {
  setError('#order-error', msg);
  show('#order-uncertain', !!uncertain);
}

// ---------------------------------------------------------------- start

async function enter() {
  showScreen('loading');
  try {
    state.info = await sdk.getSession(sessionId, state.pin);
  } catch (e) {
    if (handleSessionError(e)) return;
    showScreen('pin');
    $('#pin-input').value = state.pin;
    showPinError(e.message);
    return;
  }
  store.setItem(PIN_KEY, state.pin);
  renderHeader();
  await loadMenu();
  showScreen('menu');
  startTimers();
  loadHistory();
}

async function loadMenu() {
  try {
    const { items, categories } = await sdk.getCatalog(sessionId, state.pin);
    state.menu = items;
    state.categories = categories;
    state.byId = new Map(items.map((i) => [i.menuId, i]));
    setNetworkTrouble(false);
  } catch (e) {
    if (handleSessionError(e)) return;
    if (e.reasonCode === 'NETWORK_ERROR') setNetworkTrouble(true);
    else toast(e.message, 'error');
  }
  renderMenu();
  if (state.screen === 'cart') renderCart();
}

async function loadHistory() {
  try {
    state.orders = await sdk.getOrders(sessionId, state.pin, { limit: 20 });
    state.historyAt = new Date();
    setNetworkTrouble(false);
  } catch (e) {
    if (handleSessionError(e)) return;
    if (e.reasonCode === 'NETWORK_ERROR') setNetworkTrouble(true);
    return;
  }
  renderHistory();
}

function startTimers() {
  stopTimers();
  let last = 0;
  state.timers.push(
    setInterval(() => {
      if (document.visibilityState !== 'visible') return;
      const fast = state.screen === 'history' || state.screen === 'done';
      const every = fast ? HISTORY_FAST_MS : HISTORY_SLOW_MS;
      if (Date.now() - last < every - 500) return;
      last = Date.now();
      loadHistory();
    }, 1000),
  );
  state.timers.push(
    setInterval(() => {
      if (document.visibilityState === 'visible' && state.screen === 'menu') loadMenu();
    }, MENU_REFRESH_MS),
  );
}

function stopTimers() {
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
}

// ---------------------------------------------------------------- menu

function renderMenu() {
  const list = clear($('#menu-list'));
  const tabs = clear($('#category-tabs'));
  const groups = new Map();
  const hidden = hiddenAllergens();
  const shown = state.menu.filter((item) => !hiddenBy(item, hidden));
  const filter = clear($('#menu-filter'));
  if (state.menu.length > 0) {
    filter.append(
      filterBar(T, state.menu.length - shown.length, state.filterOpen, (open) => {
        state.filterOpen = open;
        renderMenu();
      }),
    );
  }
  for (const item of shown) {
    const c = item.category || 'other';
    if (!groups.has(c)) groups.set(c, []);
    groups.get(c).push(item);
  }
  if (groups.size === 0) {
    list.append(h('p', { class: 'muted', text: T.t(state.menu.length > 0 ? 'guest.menu.allHidden' : 'guest.menu.empty') }));
    return;
  }
  let first = true;
  for (const [cat, items] of groups) {
    const secId = 'cat-' + cat.replace(/[^A-Za-z0-9_-]/g, '_');
    tabs.append(
      h('button', {
        type: 'button',
        class: first ? 'active' : '',
        dataset: { category: cat },
        text: categoryName(cat),
        onclick: (ev) => {
          for (const b of $$('#category-tabs button')) b.classList.toggle('active', b === ev.currentTarget);
          const sec = document.getElementById(secId);
          if (sec) sec.scrollIntoView({ behavior: 'smooth', block: 'start' });
        },
      }),
    );
    first = false;
    list.append(
      h('section', { class: 'menu-category', id: secId, dataset: { category: cat } }, h('h2', { text: categoryName(cat) }), h('div', { class: 'menu-grid' }, items.map(menuCard))),
    );
  }
}

function menuCard(item) {
  const out = soldOut(item);
  const sub = otherName(item);
  return h(
    'article',
    { class: ['menu-item', out && 'is-soldout', item.imageUrl && 'has-photo'], dataset: { itemId: item.menuId } },
    cardPicture(item),
    h('div', { class: 'name', text: itemName(item) }),
    sub ? h('div', { class: 'sub', text: sub }) : null,
    cardDetails(T, item, getLang()),
    h(
      'div',
      { class: 'row' },
      h('span', { class: 'price', text: yen(item.price) }),
      out ? h('span', { class: 'badge soldout', text: T.t('guest.menu.soldout') }) : null,
      h('span', { class: 'spacer' }),
      h('button', {
        type: 'button',
        class: 'primary add',
        dataset: { menuId: item.menuId },
        disabled: out,
        'aria-label': T.t('guest.menu.add') + ' ' + itemName(item),
        text: out ? T.t('guest.menu.soldout') : T.t('guest.menu.add'),
        onclick: () => onAdd(item.menuId),
      }),
    ),
  );
}

function onAdd(menuId) {
  const item = state.byId.get(menuId);
  if (!item || soldOut(item)) return;
  if ((item.toppings || []).length > 0 || (item.optionGroups || []).length > 0) {
    openSheet(item);
    return;
  }
  addToCart(menuId, [], 1);
  toast(T.t('guest.menu.added', { name: itemName(item) }), 'ok');
}

// ---------------------------------------------------------------- topping sheet

function openSheet(item) {
  state.sheet = { menuId: item.menuId, toppings: new Set(), qty: 1, options: {} };
  $('#sheet-note').value = '';
  renderSheet();
  show('#topping-sheet', true);
}

function closeSheet() {
  state.sheet = null;
  show('#topping-sheet', false);
}

function renderSheet() {
  const s = state.sheet;
  if (!s) return;
  const item = state.byId.get(s.menuId);
  if (!item) return closeSheet();
  $('#sheet-title').textContent = itemName(item);
  $('#sheet-price').textContent = yen(item.price);
  renderSheetOptions(item);
  const box = clear($('#sheet-toppings'));
  for (const t of item.toppings || []) {
    const out = t.soldOut === true;
    box.append(
      h(
        'label',
        { class: ['topping-option', out && 'is-soldout'] },
        h('input', {
          type: 'checkbox',
          dataset: { toppingId: t.toppingId },
          checked: s.toppings.has(t.toppingId),
          disabled: out,
          onchange: (ev) => {
            if (ev.currentTarget.checked) s.toppings.add(t.toppingId);
            else s.toppings.delete(t.toppingId);
            renderSheetTotal();
          },
        }),
        h('span', { text: toppingName(item, t.toppingId) }),
        h('span', { class: 'spacer' }),
        h('span', { class: 'muted', text: out ? T.t('guest.menu.soldout') : '+' + yen(t.price) }),
      ),
    );
  }
  renderSheetTotal();
}

// renderSheetOptions draws the item's option groups: one choice (radio)
// or several up to max (checkboxes); a required group is marked and the
// add button waits for it.
function renderSheetOptions(item) {
  const s = state.sheet;
  const box = clear($('#sheet-options'));
  for (const g of item.optionGroups || []) {
    const chosen = s.options[g.groupId] || [];
    const single = g.max === 1;
    const missing = chosen.length < g.min;
    box.append(
      h(
        'fieldset',
        { class: ['option-group', g.min > 0 && 'is-required', missing && 'is-missing'], dataset: { groupId: g.groupId } },
        h(
          'legend',
          null,
          h('span', { text: groupName(g) }),
          g.min > 0 ? h('span', { class: 'badge required', text: T.t('guest.sheet.required') }) : null,
          !single ? h('span', { class: 'muted small-text', text: T.t('guest.sheet.upTo', { max: g.max }) }) : null,
        ),
        g.options.map((o) => {
          const on = chosen.includes(o.optionId);
          return h(
            'label',
            { class: ['topping-option', on && 'is-chosen'] },
            h('input', {
              type: single ? 'radio' : 'checkbox',
              name: 'opt-' + g.groupId,
              dataset: { groupId: g.groupId, optionId: o.optionId },
              checked: on,
              disabled: !single && !on && chosen.length >= g.max,
              onchange: (ev) => chooseOption(g, o.optionId, ev.currentTarget.checked),
            }),
            h('span', { text: groupName(o) }),
            h('span', { class: 'spacer' }),
            Number(o.price) ? h('span', { class: 'muted', text: '+' + yen(o.price) }) : null,
          );
        }),
      ),
    );
  }
}

function chooseOption(g, optionId, on) {
  const s = state.sheet;
  if (!s) return;
  let ids = s.options[g.groupId] || [];
  if (g.max === 1) ids = on ? [optionId] : [];
  else ids = on ? [...new Set([...ids, optionId])].slice(0, g.max) : ids.filter((x) => x !== optionId);
  if (ids.length) s.options[g.groupId] = ids;
  else delete s.options[g.groupId];
  renderSheetOptions(state.byId.get(s.menuId));
  renderSheetTotal();
}

function renderSheetTotal() {
  const s = state.sheet;
  $('#sheet-qty').textContent = String(s.qty);
  const item = state.byId.get(s.menuId);
  const price = unitPrice({ menuId: s.menuId, toppings: [...s.toppings], options: s.options }) * s.qty;
  const missing = missingGroup(item, s.options);
  const add = $('#sheet-add');
  add.disabled = !!missing;
  add.textContent = missing ? T.t('guest.sheet.choose', { group: groupName(missing) }) : T.t('guest.sheet.add', { price: yen(price) });
}

function bindSheet() {
  $('#sheet-qty-minus').addEventListener('click', () => {
    if (state.sheet && state.sheet.qty > 1) state.sheet.qty--;
    renderSheetTotal();
  });
  $('#sheet-qty-plus').addEventListener('click', () => {
    if (state.sheet && state.sheet.qty < 99) state.sheet.qty++;
    renderSheetTotal();
  });
  $('#sheet-cancel').addEventListener('click', closeSheet);
  $('#topping-sheet').addEventListener('click', (ev) => {
    if (ev.target === ev.currentTarget) closeSheet();
  });
  $('#sheet-add').addEventListener('click', () => {
    const s = state.sheet;
    if (!s) return;
    const item = state.byId.get(s.menuId);
    if (missingGroup(item, s.options)) return;
    const note = $('#sheet-note').value.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ').trim().slice(0, 140);
    addToCart(s.menuId, [...s.toppings], s.qty, { ...s.options }, note);
    closeSheet();
    toast(T.t('guest.menu.added', { name: itemName(item) }), 'ok');
  });
}

// ---------------------------------------------------------------- cart screen

function renderCartCount() {
  const n = state.cart.reduce((s, l) => s + l.quantity, 0);
  const b = $('#cart-count');
  b.textContent = String(n);
  b.hidden = n === 0;
}

function renderCart() {
  renderCartCount();
  const ul = clear($('#cart-lines'));
  show('#cart-empty', state.cart.length === 0);
  let problems = false;
  state.cart.forEach((line, idx) => {
    const item = state.byId.get(line.menuId);
    const bad = lineProblem(line);
    problems = problems || bad;
    const price = unitPrice(line);
    ul.append(
      h(
        'li',
        { class: ['cart-line', bad && 'is-problem'], dataset: { lineIndex: String(idx), menuId: line.menuId } },
        h(
          'div',
          { class: 'what' },
          h('div', { text: itemName(item || { name: line.menuId }) }),
          optionNames(item, line.options).length ? h('ul', { class: 'options' }, optionNames(item, line.options).map((n) => h('li', { text: '・' + n }))) : null,
          line.toppings.length ? h('ul', { class: 'toppings' }, line.toppings.map((tid) => h('li', { text: '+ ' + toppingName(item, tid) }))) : null,
          line.note ? h('div', { class: 'line-note', text: '※ ' + line.note }) : null,
          bad ? h('div', { class: 'small-text', text: T.t('guest.cart.unavailable') }) : null,
          h('div', { class: 'muted small-text', text: yen(price) + ' × ' + line.quantity + ' = ' + yen(price * line.quantity) }),
        ),
        h(
          'div',
          { class: 'qty-stepper' },
          h('button', { type: 'button', class: 'qty-minus', 'aria-label': '-', text: line.quantity > 1 ? '−' : '×', onclick: () => changeQty(idx, -1) }),
          h('span', { class: 'qty', text: String(line.quantity) }),
          h('button', { type: 'button', class: 'qty-plus', 'aria-label': '+', text: '＋', onclick: () => changeQty(idx, +1) }),
        ),
      ),
    );
  });
  const total = cartTotal();
  $('#cart-total').textContent = Number.isFinite(total) ? yen(total) : '—';
  $('#cart-confirm').disabled = state.cart.length === 0 || problems;
  if (problems) showOrderError(T.t('guest.cart.fixSoldout'));
  renderSending();
}

function changeQty(idx, d) {
  const line = state.cart[idx];
  if (!line) return;
  line.quantity += d;
  if (line.quantity <= 0) state.cart.splice(idx, 1);
  if (line.quantity > 99) line.quantity = 99;
  saveCart();
  hideOrderMessages();
  renderCart();
}

function renderSending() {
  const b = $('#cart-confirm');
  b.classList.toggle('is-busy', state.sending);
  b.setAttribute('aria-busy', state.sending ? 'true' : 'false');
  b.textContent = state.sending ? T.t('guest.cart.sending') : T.t('guest.cart.confirm');
}

// onConfirm is every tap on "place order". The button stays tappable while
// sending: a second tap with the same cart joins the request in flight in
// the SDK, it never sends a second order.
async function onConfirm(allowRepeat) {
  hideOrderMessages();
  const total = cartTotal();
  const plan = sdk.planSubmit({
    sessionId,
    pin: state.pin,
    items: cartItems(),
    expectedTotal: Number.isFinite(total) ? total : undefined,
    allowRepeat: allowRepeat === true,
  });
  switch (plan.mode) {
    case 'empty':
      showOrderError(plan.message);
      return;
    case 'blocked':
      toast(plan.message, 'error');
      return;
    case 'join':
      return; // the first tap shows the result
    case 'confirm-repeat':
      if (await askRepeat(plan.previous)) onConfirm(true);
      return;
  }
  state.sending = true;
  renderSending();
  let again = false;
  try {
    const r = await plan.promise;
    again = await handleOutcome(r);
  } catch (e) {
    await handleOrderError(e);
  } finally {
    state.sending = false;
    renderSending();
  }
  if (again) onConfirm(true);
}

function askRepeat(previous) {
  return confirmDialog(T.t('guest.repeat.question', { orderId: (previous && previous.orderId) || '?' }), {
    ok: T.t('guest.repeat.yes'),
    cancel: T.t('guest.repeat.no'),
    kind: 'repeat',
  });
}

// handleOutcome shows a placed order; it returns true when the guest
// asked to order the same cart again.
async function handleOutcome(r) {
  if (r.kind === 'already-ordered' && (await askRepeat(r))) return true;
  state.cart = [];
  saveCart();
  $('#done-message').textContent = r.kind === 'ordered' ? T.t('guest.done.ordered') : T.t('guest.done.replayed');
  $('#done-detail').textContent = T.t('guest.done.detail', { orderId: r.orderId, total: yen(r.totalPrice) });
  clear($('#done-ticket')).append(h('span', { class: 'label', text: T.t('guest.ticket') }), h('span', { class: 'num', text: String(r.ticketNo || '') }));
  show('#done-ticket', !!r.ticketNo);
  showScreen('done');
  loadHistory();
  return false;
}

async function handleOrderError(e) {
  if (handleSessionError(e)) return;
  switch (e.reasonCode) {
    case 'PRICE_MISMATCH':
      await loadMenu();
      showOrderError(e.message + ' ' + T.t('guest.priceChanged'));
      return;
    case 'OUT_OF_STOCK':
    case 'INVALID_ORDER':
      await loadMenu();
      showOrderError(e.message);
      return;
    case 'BLOCKED':
      toast(e.message, 'error');
      return;
    default:
      showOrderError(e.message, e.uncertain);
  }
}

// ---------------------------------------------------------------- history

function renderHistory() {
  const ul = clear($('#order-history'));
  const orders = state.orders || [];
  show('#history-empty', state.orders !== null && orders.length === 0);
  $('#history-updated').textContent = state.historyAt ? T.t('guest.history.updated', { time: state.historyAt.toLocaleTimeString() }) : '';
  for (const o of orders) {
    ul.append(
      h(
        'li',
        { class: 'history-item', dataset: { orderId: String(o.orderId), status: o.status } },
        h(
          'div',
          { class: 'head' },
          o.ticketNo ? h('span', { class: 'ticket-no', 'aria-label': T.t('guest.ticket'), text: 'No.' + o.ticketNo }) : null,
          h('span', { class: 'muted small-text', text: '#' + o.orderId }),
          h('span', { class: 'muted small-text', text: timeOf(o.createdAt) }),
          h('span', { class: 'spacer' }),
          h('span', { class: 'status status-' + o.status, text: T.t('status.' + o.status) }),
        ),
        h(
          'ul',
          { class: 'plain-list' },
          (o.items || []).map((it) => {
            const menuItem = state.byId.get(it.menuId);
            const name = menuItem ? itemName(menuItem) : it.name;
            const tops = (it.toppings || []).map((t) => (menuItem ? toppingName(menuItem, t.toppingId) : t.name));
            const opts = (it.options || []).map((o) => {
              const g = menuItem && (menuItem.optionGroups || []).find((x) => x.groupId === o.groupId);
              const m = g && g.options.find((x) => x.optionId === o.optionId);
              return m ? groupName(m) : o.name;
            });
            return h(
              'li',
              null,
              h('span', { text: name + (opts.length ? '・' + opts.join('・') : '') + (tops.length ? ' (+' + tops.join(', ') + ')' : '') + ' × ' + it.quantity }),
              it.note ? h('div', { class: 'line-note', text: '※ ' + it.note }) : null,
            );
          }),
        ),
        h('div', { class: 'row end' }, h('strong', { text: yen(o.totalPrice) })),
      ),
    );
  }
}

// ---------------------------------------------------------------- wiring

// ---------------------------------------------------------------- calls

async function onCall(kind, btn) {
  btn.disabled = true;
  try {
    await sdk.callStaff(sessionId, state.pin, kind);
    toast(T.t('guest.call.sent.' + kind), 'ok');
  } catch (e) {
    if (!handleSessionError(e)) toast(e.message, 'error');
  } finally {
    btn.disabled = false;
  }
}

function bind() {
  T.apply();
  T.bindSelect($('#lang-select'), GUEST_LANGS);
  T.onChange(() => {
    renderHeader();
    renderMenu();
    renderCart();
    renderHistory();
    renderSheet();
    setNetworkTrouble(!$('#net-banner').hidden);
    setOffline(!$('#offline-banner').hidden);
  });
  sdk.onStale(setOffline);
  $('#pin-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const pin = $('#pin-input').value.trim();
    if (!/^\d{4}$/.test(pin)) {
      showPinError(T.t('guest.pin.format'));
      return;
    }
    showPinError('');
    state.pin = pin;
    enter();
  });
  $('#pin-input').addEventListener('input', (ev) => {
    ev.currentTarget.value = ev.currentTarget.value.replace(/\D/g, '').slice(0, 4);
  });
  for (const b of $$('#call-bar button')) b.addEventListener('click', () => onCall(b.dataset.kind, b));
  $('#nav-menu').addEventListener('click', () => showScreen('menu'));
  $('#nav-cart').addEventListener('click', () => showScreen('cart'));
  $('#nav-history').addEventListener('click', () => showScreen('history'));
  $('#cart-back').addEventListener('click', () => showScreen('menu'));
  $('#cart-confirm').addEventListener('click', () => onConfirm(false));
  $('#done-history').addEventListener('click', () => showScreen('history'));
  $('#done-menu').addEventListener('click', () => showScreen('menu'));
  $('#order-uncertain-history').addEventListener('click', () => showScreen('history'));
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && state.info && state.screen !== 'closed') loadHistory();
  });
  bindSheet();
  renderCartCount();
}

function start() {
  bind();
  if (!sessionId) {
    showScreen('nosession');
    return;
  }
  sdk.pool.refresh(); // learn the other nodes while all is well
  if (!state.pin) {
    showScreen('pin');
    return;
  }
  enter();
}

start();
