// reports.js — the staff console's Reports page: a business day's totals,
// sales by hour (an inline SVG bar chart drawn here: no chart library),
// top items, tables, payment mix, the CSV download, and closing the day.

import { $, h, clear, yen, toast, confirmDialog, dateOf } from '/assets/dom.js';

export const REPORT_STRINGS = {
  ja: {
    'staff.tab.reports': 'レポート',
    'staff.reports.title': '売上レポート',
    'staff.reports.date': '営業日',
    'staff.reports.total': '売上（税込）',
    'staff.reports.tax': 'うち消費税',
    'staff.reports.orders': '注文数',
    'staff.reports.items': '品数',
    'staff.reports.cancelled': '取消（件／金額）',
    'staff.reports.byHour': '時間帯別売上',
    'staff.reports.topItems': '売れ筋',
    'staff.reports.tables': 'テーブル別',
    'staff.reports.payments': '支払方法',
    'staff.reports.key': '項目',
    'staff.reports.share': '割合',
    'staff.reports.taxCol': '消費税',
    'staff.reports.tableKey': 'テーブル {table}',
    'staff.reports.none': 'この日の売上はまだありません。',
    'staff.reports.csv': 'CSVをダウンロード',
    'staff.reports.csvBy.item': '商品別',
    'staff.reports.csvBy.hour': '時間帯別',
    'staff.reports.csvBy.table': 'テーブル別',
    'staff.reports.csvBy.payment': '支払方法別',
    'staff.reports.csvBy.day': '日別',
    'staff.reports.close': '営業日を締める',
    'staff.reports.closeConfirm': '本日の営業を締めますか？締めた後の注文は翌営業日に計上されます。',
    'staff.reports.forceConfirm': 'お会計の済んでいないテーブルがあります。それでも締めますか？',
    'staff.reports.forceConfirmTables': 'お会計の済んでいないテーブルが {n} 卓あります（{tables}）。それでも締めますか？',
    'staff.reports.force': 'それでも締める',
    'staff.reports.closed': '第{day}営業日（{label}）を締めました。売上 {total}',
    'staff.reports.pay.cash': '現金',
    'staff.reports.pay.card': 'カード',
    'staff.reports.pay.qr': 'QR決済',
    'staff.reports.pay.other': 'その他',
    'staff.reports.pay.unpaid': '未会計',
  },
  en: {
    'staff.tab.reports': 'Reports',
    'staff.reports.title': 'Sales report',
    'staff.reports.date': 'Business day',
    'staff.reports.total': 'Sales (tax incl.)',
    'staff.reports.tax': 'Tax included',
    'staff.reports.orders': 'Orders',
    'staff.reports.items': 'Items',
    'staff.reports.cancelled': 'Cancelled (orders / amount)',
    'staff.reports.byHour': 'Sales by hour',
    'staff.reports.topItems': 'Top items',
    'staff.reports.tables': 'By table',
    'staff.reports.payments': 'Payment mix',
    'staff.reports.key': 'Key',
    'staff.reports.share': 'Share',
    'staff.reports.taxCol': 'Tax',
    'staff.reports.tableKey': 'Table {table}',
    'staff.reports.none': 'No sales on this day yet.',
    'staff.reports.csv': 'Download CSV',
    'staff.reports.csvBy.item': 'by item',
    'staff.reports.csvBy.hour': 'by hour',
    'staff.reports.csvBy.table': 'by table',
    'staff.reports.csvBy.payment': 'by payment',
    'staff.reports.csvBy.day': 'by day',
    'staff.reports.close': 'Close the day',
    'staff.reports.closeConfirm': 'Close today\'s business day? Orders after this count to the next day.',
    'staff.reports.forceConfirm': 'Some tables have not been checked out. Close the day anyway?',
    'staff.reports.forceConfirmTables': '{n} tables have not been checked out ({tables}). Close the day anyway?',
    'staff.reports.force': 'Close anyway',
    'staff.reports.closed': 'Closed business day {day} ({label}). Sales {total}',
    'staff.reports.pay.cash': 'Cash',
    'staff.reports.pay.card': 'Card',
    'staff.reports.pay.qr': 'QR',
    'staff.reports.pay.other': 'Other',
    'staff.reports.pay.unpaid': 'Not paid yet',
  },
};

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// businessDate mirrors the server (orders/reports.go): the date in the
// store's time zone (dom.js setStoreZone), a time before 05:00 counting
// to the day before.
export function businessDate(now) {
  return dateOf((now || Date.now()) - 5 * 3600 * 1000);
}

export function createReportsPage({ api, T }) {
  const data = { hour: null, item: null, table: null, payment: null };

  function day() {
    const v = $('#reports-date').value;
    return v || businessDate();
  }

  function query(by) {
    const d = day();
    return '/api/staff/reports/sales?from=' + d + '&to=' + d + '&by=' + by;
  }

  async function load() {
    if (!$('#reports-date').value) $('#reports-date').value = businessDate();
    try {
      const [hour, item, table, payment] = await Promise.all(['hour', 'item', 'table', 'payment'].map((by) => api.get(query(by))));
      Object.assign(data, { hour, item, table, payment });
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  function render() {
    renderTotals();
    renderHours();
    renderItems();
    renderTable('#reports-tables', data.table, (r) => T.t('staff.reports.tableKey', { table: r.key }));
    renderTable('#reports-payments', data.payment, (r) => T.t('staff.reports.pay.' + r.key), true);
  }

  function renderTotals() {
    const el = clear($('#reports-totals'));
    const r = data.hour;
    if (!r) return;
    for (const [label, value, id] of [
      ['staff.reports.total', yen(r.total), 'total'],
      ['staff.reports.tax', yen(r.taxIncluded), 'tax'],
      ['staff.reports.orders', String(r.orders), 'orders'],
      ['staff.reports.items', String(r.items), 'items'],
      ['staff.reports.cancelled', r.cancelled.orders + ' / ' + yen(r.cancelled.total), 'cancelled'],
    ]) {
      el.append(h('div', { class: 'stat', dataset: { stat: id } }, h('span', { class: 'muted small-text', text: T.t(label) }), h('strong', { text: value })));
    }
  }

  // renderHours: one bar per hour from the first to the last hour with
  // sales (at least 11:00–22:00, a restaurant's day), labelled every 2 h.
  function renderHours() {
    const box = clear($('#reports-hours'));
    const rows = (data.hour && data.hour.rows) || [];
    const by = new Map(rows.map((r) => [Number(r.key), r.total]));
    let lo = 11;
    let hi = 22;
    for (const k of by.keys()) {
      lo = Math.min(lo, k);
      hi = Math.max(hi, k);
    }
    const n = hi - lo + 1;
    const max = Math.max(1, ...by.values());
    // drawn at the box's own pixel width, so the labels stay 12 px
    const W = Math.max(280, box.clientWidth || 640);
    const H = 220;
    const left = 56;
    const bottom = 24;
    const bw = (W - left - 8) / n;
    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': T.t('staff.reports.byHour'), class: 'chart', id: 'reports-hour-chart' });
    for (const f of [0, 0.5, 1]) {
      const y = H - bottom - f * (H - bottom - 12);
      chart.append(svg('line', { x1: left, x2: W - 4, y1: y, y2: y, class: 'chart-grid' }));
      chart.append(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', class: 'chart-label' }, yen(Math.round(max * f))));
    }
    for (let i = 0; i < n; i++) {
      const hour = lo + i;
      const v = by.get(hour) || 0;
      const bh = (v / max) * (H - bottom - 12);
      const x = left + i * bw + 2;
      const bar = svg('rect', { x, y: H - bottom - bh, width: Math.max(1, bw - 4), height: bh, class: 'chart-bar', 'data-hour': hour, 'data-total': v });
      bar.append(svg('title', {}, hour + ':00 ' + yen(v)));
      chart.append(bar);
      if (i % (bw < 28 ? 2 : 1) === 0) chart.append(svg('text', { x: x + (bw - 4) / 2, y: H - 6, 'text-anchor': 'middle', class: 'chart-label' }, hour));
    }
    box.append(chart);
  }

  // renderItems: the ten best sellers as horizontal bars.
  function renderItems() {
    const box = clear($('#reports-items'));
    const rows = ((data.item && data.item.rows) || []).slice(0, 10);
    if (!rows.length) {
      box.append(h('p', { class: 'muted', text: T.t('staff.reports.none') }));
      return;
    }
    const max = Math.max(1, ...rows.map((r) => r.total));
    const W = Math.max(280, box.clientWidth || 640);
    const rowH = 28;
    const labelW = Math.min(220, Math.round(W * 0.4));
    const chart = svg('svg', { viewBox: `0 0 ${W} ${rows.length * rowH}`, role: 'img', 'aria-label': T.t('staff.reports.topItems'), class: 'chart', id: 'reports-item-chart' });
    rows.forEach((r, i) => {
      const y = i * rowH;
      const bw = ((W - labelW - 80) * r.total) / max;
      chart.append(svg('text', { x: labelW - 8, y: y + 19, 'text-anchor': 'end', class: 'chart-label' }, (r.name || r.key) + ' ×' + r.items));
      chart.append(svg('rect', { x: labelW, y: y + 5, width: Math.max(1, bw), height: rowH - 10, class: 'chart-bar', 'data-item': r.key }));
      chart.append(svg('text', { x: labelW + bw + 6, y: y + 19, class: 'chart-label' }, yen(r.total)));
    });
    box.append(chart);
  }

  function renderTable(sel, rep, label, share) {
    const tb = clear($(sel));
    const rows = (rep && rep.rows) || [];
    for (const r of rows) {
      const pct = rep.total ? Math.round((100 * r.total) / rep.total) + '%' : '';
      tb.append(
        h(
          'tr',
          { dataset: { key: r.key } },
          h('td', { text: label(r) }),
          h('td', { class: 'num', text: String(r.orders) }),
          h('td', { class: 'num', text: yen(r.total) }),
          h('td', { class: 'num', text: share ? pct : yen(r.taxIncluded) }),
        ),
      );
    }
    if (!rows.length) tb.append(h('tr', null, h('td', { colspan: 4, class: 'muted', text: T.t('staff.reports.none') })));
  }

  // downloadCsv fetches with the token (the same auth as every call) and
  // hands the file to the browser.
  async function downloadCsv() {
    const by = $('#reports-csv-by').value;
    try {
      const res = await fetch(query(by) + '&format=csv', { headers: { Authorization: 'Bearer ' + api.token() }, cache: 'no-store' });
      if (!res.ok) throw new Error(res.status + ' ' + res.statusText);
      const url = URL.createObjectURL(await res.blob());
      const a = h('a', { href: url, download: 'sales-' + day() + '-' + by + '.csv' });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      toast(e.message, 'error');
    }
  }

  // forceQuestion names the tables still open, so the staff can go and
  // check them out instead (the generic question if they cannot be read).
  async function forceQuestion() {
    try {
      const d = await api.get('/api/staff/sessions?status=ACTIVE');
      const ids = ((d && d.sessions) || []).map((x) => x.tableId).sort((a, b) => String(a).localeCompare(String(b), undefined, { numeric: true }));
      if (ids.length > 0) {
        const shown = ids.slice(0, 8).join(', ') + (ids.length > 8 ? ' …' : '');
        return T.t('staff.reports.forceConfirmTables', { n: ids.length, tables: shown });
      }
    } catch (_) {
      // fall through
    }
    return T.t('staff.reports.forceConfirm');
  }

  async function closeDay() {
    const ok = await confirmDialog(T.t('staff.reports.closeConfirm'), { ok: T.t('staff.reports.close'), cancel: T.t('common.cancel'), kind: 'day-close' });
    if (!ok) return;
    let r;
    try {
      r = await api.post('/api/staff/days/close');
    } catch (e) {
      if (e.reasonCode !== 'SESSIONS_OPEN') {
        if (e.status !== 401) toast(e.message, 'error');
        return;
      }
      const force = await confirmDialog(await forceQuestion(), { ok: T.t('staff.reports.force'), cancel: T.t('common.cancel'), danger: true, kind: 'day-close-force' });
      if (!force) return;
      try {
        r = await api.post('/api/staff/days/close?force=true');
      } catch (e2) {
        if (e2.status !== 401) toast(e2.message, 'error');
        return;
      }
    }
    $('#reports-result').textContent = T.t('staff.reports.closed', { day: r.day, label: r.label, total: yen(r.report && r.report.total) });
    // the button sits at the page's foot: bring the answer into view
    $('#reports-result').scrollIntoView({ block: 'nearest' });
    load();
  }

  function bind() {
    let resize = null;
    window.addEventListener('resize', () => {
      clearTimeout(resize);
      resize = setTimeout(() => {
        if (!$('#page-reports').hidden) render();
      }, 150);
    });
    $('#reports-reload').addEventListener('click', load);
    $('#reports-date').addEventListener('change', load);
    $('#reports-csv').addEventListener('click', downloadCsv);
    $('#reports-close').addEventListener('click', closeDay);
  }

  return { enter: load, bind, rerender: render };
}
