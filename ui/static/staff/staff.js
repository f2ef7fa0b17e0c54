// staff.js — the staff console: login, tabs, and the tables page (open a
// table with its QR code and PIN, checkout). Menu and stock live in
// catalog.js; audit log, locks and the cluster page in ops.js.

import '/assets/shell.js'; // first: draws the shared markup the code below looks up
import { createStaffApi } from '/assets/staff-api.js';
import { createI18n } from '/assets/i18n.js';
import { $, $$, h, clear, show, setError, yen, dateTimeOf, toast, confirmDialog, setStoreZone } from '/assets/dom.js';
import { STRINGS } from '/staff/strings.js';
import { createMenuPage, createStockPage } from '/staff/catalog.js';
import { createAuditPage, createLocksPage, createClusterPage } from '/staff/ops.js';
import { createTimeZoneCard } from '/staff/timezone.js';
import { createReportsPage, REPORT_STRINGS } from '/staff/reports.js';
import { createCallsPanel, followCalls, withCallStrings, chime } from '/assets/calls.js';
import { createHealthBanner, withHealthStrings } from '/assets/health.js';
import { createPrintersPage } from '/staff/printers.js';
import { createCloudPage, CLOUD_STRINGS } from '/staff/cloud.js';
import { createUpdateCard, UPDATE_STRINGS } from '/staff/update.js';
import { createBackupsPage, BACKUP_STRINGS } from '/staff/backups.js';
import { withContentStrings } from '/staff/content-editor.js';
import { CSV_STRINGS } from '/staff/menucsv.js';
import { chosenPayment, resetPayment, showBillTax } from '/staff/payment.js';

const T = createI18n(
  withHealthStrings(
    withContentStrings(
      withCallStrings({
        ja: Object.assign({}, STRINGS.ja, REPORT_STRINGS.ja, CSV_STRINGS.ja, CLOUD_STRINGS.ja, UPDATE_STRINGS.ja, BACKUP_STRINGS.ja),
        en: Object.assign({}, STRINGS.en, REPORT_STRINGS.en, CSV_STRINGS.en, CLOUD_STRINGS.en, UPDATE_STRINGS.en, BACKUP_STRINGS.en),
      }),
    ),
  ),
);
const api = createStaffApi();
// The banner over every page while a box has been silent five minutes or
// its memory card is in trouble; the cluster page feeds it what it shows.
// Under it, while no source gave the boxes the time, the clock prompt: a
// manager sets it from this tablet's clock in one tap.
const health = createHealthBanner({
  el: $('#health-banner'),
  api,
  T,
  tail: 'health.banner.console',
  certs: true,
  clockEl: $('#clock-banner'),
  clockMode: () => api.role(),
});
const ctx = { api, T, onStatus: (st) => health.show(st) };

const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
const BILL_STATUSES = 'ACCEPTED,COOKING,READY,SERVED,CANCELLED';

// ---------------------------------------------------------------- tables page

function createTablesPage() {
  let sessions = [];
  let selected = null;
  let billOrders = [];
  let serverBill = null; // the last bill the server answered, with its taxIncluded

  async function load() {
    try {
      const d = await api.get('/api/staff/sessions?status=ACTIVE');
      sessions = (d && d.sessions) || [];
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  function render() {
    const tb = clear($('#sessions-list'));
    show('#sessions-empty', sessions.length === 0);
    const sorted = sessions.slice().sort((a, b) => String(a.tableId).localeCompare(String(b.tableId), undefined, { numeric: true }));
    for (const s of sorted) {
      tb.append(
        h(
          'tr',
          { dataset: { sessionId: s.sessionId, tableId: s.tableId } },
          h('td', null, h('strong', { text: s.tableId })),
          h('td', { class: 'mono', text: s.pin || '—' }),
          h('td', { class: 'small-text', text: s.createdAt ? dateTimeOf(s.createdAt) : s.openedAt ? dateTimeOf(s.openedAt) : '' }),
          h('td', { text: s.status || '' }),
          h('td', null, h('button', { type: 'button', class: 'small', dataset: { action: 'show' }, text: T.t('staff.session.show'), onclick: () => showDetail(s) })),
        ),
      );
    }
  }

  function guestUrlOf(s) {
    return s.guestUrl || location.origin + '/guest/?s=' + encodeURIComponent(s.sessionId);
  }

  function showDetail(s) {
    const sameSession = selected && selected.sessionId === s.sessionId;
    selected = s;
    const url = guestUrlOf(s);
    $('#session-table').textContent = s.tableId;
    $('#session-pin').textContent = s.pin || '—';
    // same-origin image: the login cookie authorizes it (no headers on <img>)
    $('#session-qr').src = '/api/staff/qr?text=' + encodeURIComponent(url);
    show('#session-qr', true);
    $('#session-url').textContent = url;
    $('#session-url').href = url;
    // The box's own address, for a phone that cannot resolve .local.
    const fallback = s.guestFallbackUrl || '';
    $('#session-fallback').textContent = fallback;
    $('#session-fallback').href = fallback || '#';
    show('#session-fallback-row', !!fallback);
    $('#session-id').textContent = s.sessionId;
    setError('#session-error', '');
    if (!sameSession) {
      showCheckout(false);
      show('#checkout-result', false);
    }
    show('#checkout-begin', $('#checkout-panel').hidden);
    show('#session-new-pin', true);
    show('#session-detail', true);
    // On a phone the card sits above the list the tap came from.
    if (!sameSession) $('#session-detail').scrollIntoView({ block: 'nearest' });
  }

  // newPin: the one tap for a table under a PIN attack — a fresh PIN,
  // the lockout lifted (POST /api/staff/sessions/{id}/pin).
  async function newPin() {
    const s = selected;
    if (!s) return;
    const ok = await confirmDialog(T.t('staff.session.newPinConfirm', { table: s.tableId }), { ok: T.t('staff.session.newPin') });
    if (!ok) return;
    try {
      const r = await api.post(sessionPath(s) + '/pin');
      showDetail(Object.assign({}, s, { pin: r.pin }));
      toast(T.t('staff.session.newPinDone', { pin: r.pin }));
      await load();
    } catch (e) {
      if (e.status !== 401) setError('#session-error', e.message);
    }
  }

  async function openSession(ev) {
    ev.preventDefault();
    const input = $('#open-session-table');
    const tableId = input.value.trim();
    if (!ID_RE.test(tableId)) {
      setError('#open-session-error', [T, 'staff.open.invalid']);
      return;
    }
    setError('#open-session-error', '');
    const btn = $('#open-session-submit');
    btn.disabled = true;
    try {
      const s = await api.post('/api/staff/sessions', { tableId });
      input.value = '';
      showDetail(s);
      await load();
    } catch (e) {
      if (e.status !== 401) setError('#open-session-error', e.message);
    } finally {
      btn.disabled = false;
    }
  }

  function showCheckout(on) {
    show('#checkout-panel', on);
    show('#checkout-begin', !on);
  }

  function sessionPath(s) {
    return '/api/staff/sessions/' + encodeURIComponent(s.sessionId);
  }

  async function beginCheckout() {
    const s = selected;
    if (!s) return;
    setError('#session-error', '');
    show('#checkout-result', false);
    let begun = null;
    try {
      begun = await api.post(sessionPath(s) + '/checkout/begin');
    } catch (e) {
      if (e.status === 401) return;
      // already held (by this tablet or another): complete and cancel
      // still work, so the bill is shown anyway with the message
      setError('#session-error', e.message);
    }
    $('#checkout-status').textContent = T.t('staff.checkout.locked');
    resetPayment();
    showCheckout(true);
    await loadBill(s, begun);
  }

  // loadBill shows the session's orders: from the begin answer when it
  // carries them, else the guest history (all statuses, with the table's
  // PIN), else the kitchen list asked for every status.
  async function loadBill(s, begun) {
    let orders = null;
    let failure = null;
    serverBill = begun;
    if (begun && Array.isArray(begun.orders)) orders = begun.orders;
    if (!orders && s.pin) {
      try {
        orders = await guestHistory(s);
      } catch (e) {
        failure = e;
      }
    }
    if (!orders) {
      try {
        const d = await api.get('/api/kitchen/orders?status=' + BILL_STATUSES);
        orders = ((d && d.orders) || []).filter((o) => o.sessionId === s.sessionId);
        failure = null;
      } catch (e) {
        failure = failure || e;
      }
    }
    if (failure && !orders) setError('#session-error', [T, 'staff.checkout.ordersUnavailable', { message: failure.message }]);
    billOrders = (orders || []).slice().sort((a, b) => (Date.parse(a.createdAt) || 0) - (Date.parse(b.createdAt) || 0) || a.orderId - b.orderId);
    renderBill();
  }

  async function guestHistory(s) {
    const res = await fetch('/api/guest/sessions/' + encodeURIComponent(s.sessionId) + '/orders?limit=200', {
      headers: { Accept: 'application/json', 'X-Session-PIN': s.pin, 'Accept-Language': T.lang() },
      cache: 'no-store',
    });
    const d = await res.json().catch(() => null);
    if (!res.ok) throw new Error((d && d.message) || String(res.status));
    return (d && d.orders) || [];
  }

  function renderBill() {
    const tb = clear($('#checkout-orders'));
    if (billOrders.length === 0) tb.append(h('tr', null, h('td', { colspan: '4', class: 'muted', text: T.t('staff.checkout.noOrders') })));
    let total = 0;
    for (const o of billOrders) {
      const cancelled = o.status === 'CANCELLED';
      if (!cancelled) total += Number(o.totalPrice) || 0;
      tb.append(
        h(
          'tr',
          { class: ['bill-line', cancelled && 'is-cancelled'], dataset: { orderId: String(o.orderId) } },
          h('td', { text: '#' + o.orderId }),
          h('td', { text: (o.items || []).map((it) => (it.name || it.menuId) + ((it.toppings || []).length ? ' (+' + it.toppings.map((t) => t.name || t.toppingId).join(', ') + ')' : '') + ' ×' + it.quantity).join(' / ') }),
          h('td', null, h('span', { class: 'status status-' + o.status, text: T.t('status.' + o.status) })),
          h('td', { class: 'num', text: yen(o.totalPrice) }),
        ),
      );
    }
    $('#checkout-total').textContent = yen(total);
    $('#checkout-total').dataset.total = String(total);
    showBillTax(serverBill, total);
  }

  async function completeCheckout() {
    const s = selected;
    if (!s) return;
    const payment = chosenPayment();
    const paidBy = T.t('staff.pay.' + payment);
    const ok = await confirmDialog(T.t('staff.checkout.confirm', { table: s.tableId, total: $('#checkout-total').textContent, payment: paidBy }), {
      ok: T.t('staff.checkout.complete'),
      cancel: T.t('common.cancel'),
      kind: 'checkout',
    });
    if (!ok) return;
    try {
      const r = await api.post(sessionPath(s) + '/checkout', { payment });
      const n = (r && r.orders ? r.orders : []).length;
      const result = $('#checkout-result');
      result.textContent = T.t('staff.checkout.done', { table: s.tableId, total: yen(r && r.total), tax: yen(r && r.taxIncluded), payment: paidBy, n });
      result.dataset.total = String(r && r.total);
      result.dataset.tax = String(r && r.taxIncluded);
      result.dataset.payment = String((r && r.payment) || '');
      showCheckout(false);
      show('#checkout-begin', false); // the table is closed
      show('#session-new-pin', false); // a paid table's PIN opens nothing
      show('#checkout-result', true);
      setError('#session-error', '');
      show('#session-qr', false);
      await load();
    } catch (e) {
      if (e.status !== 401) setError('#session-error', e.message);
    }
  }

  async function cancelCheckout() {
    const s = selected;
    if (!s) return;
    try {
      await api.post(sessionPath(s) + '/checkout/cancel');
      showCheckout(false);
      setError('#session-error', '');
    } catch (e) {
      if (e.status !== 401) setError('#session-error', e.message);
    }
  }

  function bind() {
    $('#open-session-form').addEventListener('submit', openSession);
    $('#sessions-reload').addEventListener('click', load);
    $('#session-detail-close').addEventListener('click', () => {
      selected = null;
      show('#session-detail', false);
    });
    $('#checkout-begin').addEventListener('click', beginCheckout);
    $('#session-new-pin').addEventListener('click', newPin);
    $('#checkout-complete').addEventListener('click', completeCheckout);
    $('#checkout-cancel').addEventListener('click', cancelCheckout);
  }

  return {
    bind,
    enter: load,
    rerender: () => {
      render();
      renderBill();
    },
  };
}

// ---------------------------------------------------------------- shell

// withCard runs a card drawn by its own module on a page: bound, entered,
// left and worded again with it.
function withCard(page, card) {
  const both = (name) => () => {
    if (page[name]) page[name]();
    if (card[name]) card[name]();
  };
  return { ...page, bind: both('bind'), enter: both('enter'), leave: both('leave'), rerender: both('rerender') };
}

const pages = {
  tables: createTablesPage(),
  menu: createMenuPage(ctx),
  stock: createStockPage(ctx),
  audit: createAuditPage(ctx),
  locks: createLocksPage(ctx),
  printers: createPrintersPage(ctx),
  cloud: createCloudPage(ctx),
  backups: createBackupsPage(ctx),
  cluster: withCard(withCard(createClusterPage(ctx), createTimeZoneCard(ctx)), createUpdateCard(ctx)),
  reports: createReportsPage(ctx),
};

// Open guest calls show above every page, live from the kitchen stream.
const calls = createCallsPanel({ el: $('#calls-panel'), api, t: T.t, ring: chime });
let unfollow = null;
let current = null;

function go(name) {
  if (!pages[name]) name = 'tables';
  if (current && current !== name && pages[current].leave) pages[current].leave();
  current = name;
  for (const k of Object.keys(pages)) show('#page-' + k, k === name);
  for (const b of $$('#tabs button')) b.classList.toggle('active', b.dataset.tab === name);
  if (location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
  pages[name].enter();
}

function showLogin(message) {
  if (current && pages[current].leave) pages[current].leave();
  current = null;
  calls.stop();
  health.stop();
  if (unfollow) unfollow();
  unfollow = null;
  show('#app', false);
  show('#logout', false);
  show('#login', true);
  setError('#login-error', message || '');
  $('#login-password').focus();
}

async function showApp() {
  // The banners above the tabs first (a silent box, the clock prompt), then
  // the tabs: drawn the other way round, a banner arriving a moment later
  // pushes the tabs down under a finger already tapping one.
  await health.start();
  if (!api.token()) return; // refused meanwhile: the login form is back
  show('#login', false);
  show('#app', true);
  show('#logout', true);
  go(location.hash.slice(1) || 'tables');
  calls.start();
  if (!unfollow) unfollow = followCalls(calls, () => '/api/kitchen/stream?token=' + encodeURIComponent(api.token()));
  try {
    const st = await api.pool.refresh();
    if (st && st.nodeId) {
      nodeId = st.nodeId;
      renderNodeLabel();
    }
    // The staff view of the status names the shop: the banners' first
    // poll fetched it (health.start above), unless that box was slow.
    const full = health.status() || (await api.get('/api/cluster/status', { timeoutMs: 5000 }));
    const shop = $('#shop-label');
    shop.textContent = (full && full.shopName) || '';
    shop.hidden = !shop.textContent;
    // ...and its time zone, every time on these pages: draw the page
    // again when it is not the tablet's.
    if (full && setStoreZone(full.timeZone || '') && current) pages[current].rerender && pages[current].rerender();
  } catch (_) {
    // the cluster page says more
  }
}

let nodeId = '';
function renderNodeLabel() {
  $('#node-label').textContent = nodeId ? T.t('staff.node', { id: nodeId }) : '';
}

// setOffline: the box answering lost the others and shows what it holds
// (X-MasterOrder-Stale); writes wait until the quorum is back.
function setOffline(on) {
  const b = $('#offline-banner');
  b.textContent = T.t('staff.offline');
  b.hidden = !on;
}

function start() {
  T.apply();
  T.bindToggle($('#lang-toggle'));
  T.onChange(() => {
    for (const p of Object.values(pages)) if (p.rerender) p.rerender();
    calls.render();
    health.render();
    renderNodeLabel();
    setOffline(!$('#offline-banner').hidden);
  });
  api.onStale(setOffline);
  for (const p of Object.values(pages)) if (p.bind) p.bind();
  for (const b of $$('#tabs button')) b.addEventListener('click', () => go(b.dataset.tab));
  window.addEventListener('hashchange', () => {
    if (!$('#app').hidden) go(location.hash.slice(1));
  });
  $('#login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await api.login($('#login-password').value);
      $('#login-password').value = '';
      if (api.role() === 'kitchen') {
        // A kitchen login cannot run the console (every call would be
        // 403 FORBIDDEN_ROLE): say where it belongs.
        await api.logout();
        setError('#login-error', [T, 'staff.login.kitchenRole']);
        return;
      }
      showApp();
    } catch (e) {
      setError('#login-error', e.message || [T, 'login.failed']);
    }
  });
  $('#logout').addEventListener('click', async () => {
    await api.logout();
    showLogin();
  });
  api.onUnauthorized(() => showLogin());
  if (api.token()) showApp();
  else showLogin();
}

start();
