// printers.js — the staff console's printers page: each kitchen or
// receipt printer with its state (online, last error, queued tickets), and
// a form to add, edit or delete one (manager).

import { $, h, clear, show, toast, confirmDialog } from '/assets/dom.js';

const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

export function createPrintersPage({ api, T }) {
  let printers = [];
  let timer = null;

  async function load() {
    try {
      const d = await api.get('/api/staff/printers');
      printers = (d && d.printers) || [];
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  function render() {
    const tb = clear($('#printers-list'));
    show('#printers-empty', printers.length === 0);
    for (const p of printers) {
      const state = p.online ? T.t('staff.printers.online') : T.t('staff.printers.offline');
      // data-label names each cell where a phone shows the row as a card
      const label = (k) => T.t('staff.printers.' + k);
      tb.append(
        h(
          'tr',
          { dataset: { printerId: p.printerId, online: String(!!p.online) } },
          h('td', { class: 'printer-name' }, h('strong', { text: p.name || p.printerId }), h('div', { class: 'mono small-text', text: p.printerId })),
          h('td', { class: 'mono', dataset: { label: label('addr') }, text: p.addr }),
          h('td', { dataset: { label: label('stations') }, text: (p.stations || []).join(', ') + (p.receipts ? ' + ' + T.t('staff.printers.receipts') : '') }),
          h('td', { dataset: { label: label('state') } }, h('span', { class: ['printer-state', p.online ? 'is-online' : 'is-offline'], dataset: { field: 'state' }, text: state })),
          h('td', { class: 'num', dataset: { field: 'queued', label: label('queued') }, text: String(p.queued || 0) }),
          h('td', { class: 'small-text', dataset: { label: label('lastError') }, text: p.lastError || '—' }),
          h(
            'td',
            { class: 'printer-actions' },
            h('button', { type: 'button', class: 'small', text: T.t('staff.printers.edit'), onclick: () => edit(p) }),
            h('button', { type: 'button', class: 'small danger', text: T.t('staff.printers.delete'), onclick: () => remove(p) }),
          ),
        ),
      );
    }
  }

  function edit(p) {
    $('#printer-id').value = p.printerId;
    $('#printer-name').value = p.name || '';
    $('#printer-addr').value = p.addr || '';
    $('#printer-stations').value = (p.stations || []).join(',');
    $('#printer-receipts').checked = !!p.receipts;
  }

  async function save(ev) {
    ev.preventDefault();
    const id = $('#printer-id').value.trim();
    if (!ID_RE.test(id)) {
      toast(T.t('staff.printers.badId'), 'error');
      return;
    }
    const body = {
      addr: $('#printer-addr').value.trim(),
      stations: $('#printer-stations').value.split(',').map((s) => s.trim()).filter(Boolean),
      receipts: $('#printer-receipts').checked,
      name: $('#printer-name').value.trim(),
    };
    try {
      await api.put('/api/staff/printers/' + encodeURIComponent(id), body);
      toast(T.t('staff.printers.saved', { id }), 'ok');
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    await load();
  }

  async function remove(p) {
    const ok = await confirmDialog(T.t('staff.printers.confirm', { id: p.printerId }), { ok: T.t('staff.printers.delete'), cancel: T.t('common.cancel'), danger: true, kind: 'delete-printer' });
    if (!ok) return;
    try {
      await api.del('/api/staff/printers/' + encodeURIComponent(p.printerId));
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    await load();
  }

  // reprint: a lost or torn ticket, live or archived order alike; the
  // copy is marked 再発行 / REPRINT, never a second new ticket.
  async function reprint(ev) {
    ev.preventDefault();
    const id = $('#reprint-order').value.trim().replace(/^#/, '');
    if (!/^[0-9]{1,19}$/.test(id)) return;
    try {
      const r = await api.post('/api/staff/orders/' + id + '/reprint');
      const n = (r && r.queued) || 0;
      toast(T.t(n > 0 ? 'staff.printers.reprinted' : 'staff.printers.reprintNone', { id, n }), n > 0 ? 'ok' : 'error');
      if (n > 0) $('#reprint-order').value = '';
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    await load();
  }

  function bind() {
    $('#printers-reload').addEventListener('click', load);
    $('#printer-form').addEventListener('submit', save);
    $('#reprint-form').addEventListener('submit', reprint);
  }

  function enter() {
    load();
    clearInterval(timer);
    timer = setInterval(load, 5000); // a printer's state changes by itself
  }

  function leave() {
    clearInterval(timer);
    timer = null;
  }

  return { bind, enter, leave, rerender: render };
}
