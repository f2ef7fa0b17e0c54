// menu-import.js — the menu page's CSV card: export the menu, read a CSV,
// show what it would do row by row (a bad row in red, saying what is
// wrong), and import nothing until the owner taps Import with no bad row:
// then every new or changed item goes in one request, all or none
// (POST /api/staff/menu). The CSV's format: menucsv.js.

import { $, h, clear, show, toast, dateOf } from '/assets/dom.js';
import { decodeCSV, menuToCSV, planImport, MAX_ROWS } from '/staff/menucsv.js';

// createMenuImport works on the menu page: items() is the menu as shown,
// reload() loads it again after an import.
export function createMenuImport({ api, T, items, reload }) {
  let plan = null; // the rows of the CSV read last

  function render() {
    show('#menu-csv-preview', !!plan);
    if (!plan) return;
    const tb = clear($('#menu-csv-rows'));
    const count = { new: 0, change: 0, same: 0, bad: 0 };
    for (const r of plan) {
      count[r.state]++;
      const result = r.state === 'bad' ? r.problems.map(([k, p]) => T.t(k, p)).join('; ') : T.t('staff.csv.' + r.state);
      tb.append(
        h(
          'tr',
          { dataset: { row: String(r.row), state: r.state, menuId: r.menuId || '' } },
          h('td', { class: 'num', text: String(r.row) }),
          h('td', { text: r.name }),
          h('td', { class: 'num', text: r.price }),
          h('td', { class: 'csv-state', text: result }),
        ),
      );
    }
    const sum = $('#menu-csv-summary');
    if (count.bad) T.put(sum, 'staff.csv.summaryBad', { bad: count.bad });
    else if (!count.new && !count.change) T.put(sum, 'staff.csv.nothing');
    else T.put(sum, 'staff.csv.summary', { rows: plan.length, new: count.new, change: count.change, same: count.same });
    sum.className = count.bad ? 'error' : 'notice';
    $('#menu-csv-import').disabled = count.bad > 0 || !(count.new + count.change);
  }

  async function read(ev) {
    const file = ev.currentTarget.files && ev.currentTarget.files[0];
    ev.currentTarget.value = ''; // the same file again reads again
    if (!file) return;
    await reload(); // against the menu as it is now
    const rows = planImport(decodeCSV(new Uint8Array(await file.arrayBuffer())), items());
    if (!rows.length || rows.length > MAX_ROWS) {
      plan = null;
      render();
      toast(T.t(rows.length ? 'staff.csv.tooMany' : 'staff.csv.empty'), 'error');
      return;
    }
    plan = rows;
    render();
    $('#menu-csv-preview').scrollIntoView({ block: 'nearest' });
  }

  async function commit() {
    if (!plan || plan.some((r) => r.state === 'bad')) return;
    const send = plan.filter((r) => r.state === 'new' || r.state === 'change');
    if (!send.length) return;
    const btn = $('#menu-csv-import');
    btn.disabled = true;
    try {
      await api.post('/api/staff/menu', { items: send.map((r) => r.body) });
      toast(T.t('staff.csv.done', { n: send.length }), 'ok');
      plan = null;
      render();
      await reload();
    } catch (e) {
      if (e.status === 401) return;
      // The server names the item (items[3].price): that row goes red.
      const m = /^items\[(\d+)\]/.exec((e.body && e.body.field) || '');
      const r = m && send[Number(m[1])];
      if (r) {
        r.state = 'bad';
        r.problems = [['staff.csv.bad.server', { message: e.message + (e.body.field.length > m[0].length ? ' (' + e.body.field.slice(m[0].length + 1) + ')' : '') }]];
        render();
      } else {
        toast(e.message, 'error');
        btn.disabled = false;
      }
    }
  }

  function download() {
    const url = URL.createObjectURL(new Blob([menuToCSV(items(), T.lang())], { type: 'text/csv;charset=utf-8' }));
    const a = h('a', { href: url, download: 'menu-' + dateOf(Date.now()) + '.csv' }); // the store's date
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  function bind() {
    $('#menu-csv-file').addEventListener('change', read);
    $('#menu-csv-import').addEventListener('click', commit);
    $('#menu-csv-cancel').addEventListener('click', () => {
      plan = null;
      render();
    });
    $('#menu-csv-export').addEventListener('click', download);
  }

  return { bind, render };
}
