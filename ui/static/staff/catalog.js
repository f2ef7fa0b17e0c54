// catalog.js — the staff console's menu and stock pages.

import { menuBody } from '/assets/staff-api.js';
import { $, h, clear, setError, fieldError, yen, toast } from '/assets/dom.js';
import { createContentEditor } from '/staff/content-editor.js';
import { createOptionsEditor } from '/staff/options-editor.js';
import { ID_RE, newId } from '/staff/ids.js';
import { createMenuImport } from '/staff/menu-import.js';

function wholeNumber(v) {
  const s = String(v).trim();
  return /^\d+$/.test(s) ? Number(s) : NaN;
}

// ---------------------------------------------------------------- menu

export function createMenuPage({ api, T }) {
  let items = [];
  let editing = null; // menuId of the item in the form, null for a new one
  let categories = {}; // category → names by language
  const content = createContentEditor({ api, T });
  const options = createOptionsEditor({ T });
  const csv = createMenuImport({ api, T, items: () => items, reload: () => load() });

  async function load() {
    try {
      const d = await api.get('/api/staff/menu');
      items = (d && d.items) || [];
      categories = (d && d.categories) || {};
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  function render() {
    const tb = clear($('#menu-list'));
    for (const it of items) {
      tb.append(
        h(
          'tr',
          { dataset: { menuId: it.menuId } },
          h('td', null, h('div', { text: it.name }), it.nameEn ? h('div', { class: 'muted small-text', text: it.nameEn }) : null, h('div', { class: 'item-id', text: it.menuId })),
          h('td', { class: 'col-category', text: it.category || '' }),
          h('td', { class: 'num', text: yen(it.price) }),
          h('td', null, h('span', { class: 'status ' + (it.available === false ? 'status-CANCELLED' : 'status-READY'), text: it.available === false ? T.t('staff.menu.off') : T.t('staff.menu.onSale') })),
          h('td', null, h('button', { type: 'button', class: 'small', dataset: { action: 'edit' }, text: T.t('staff.menu.editButton'), onclick: () => fill(it) })),
        ),
      );
    }
    const dl = clear($('#menu-categories'));
    for (const c of new Set(items.map((i) => i.category).filter(Boolean))) dl.append(h('option', { value: c }));
    if (editing === null && !filled) fill(null);
  }

  // A topping row: its name and price; its id, kept from the item or made
  // at save, is no field of the owner's.
  function toppingRow(t) {
    const row = h(
      'div',
      { class: 'topping-edit', dataset: { toppingRow: '', toppingId: (t && t.toppingId) || '', nameEn: (t && t.nameEn) || '' } },
      h('input', { type: 'text', dataset: { field: 'name', i18nAriaLabel: 'staff.menu.name' }, value: (t && t.name) || '', 'aria-label': T.t('staff.menu.name') }),
      h('input', { type: 'number', dataset: { field: 'price', i18nAriaLabel: 'staff.menu.price' }, value: t ? String(t.price) : '0', min: '0', step: '1', 'aria-label': T.t('staff.menu.price') }),
      h('button', { type: 'button', class: 'small', words: [T, 'staff.menu.removeTopping'], onclick: () => row.remove() }),
    );
    return row;
  }

  // ids every item and topping holds now: a new one must differ from all
  // (menu and topping ids share the stock's names).
  function takenIds() {
    const taken = new Set();
    for (const it of items) {
      taken.add(it.menuId);
      for (const t of it.toppings || []) taken.add(t.toppingId);
    }
    return taken;
  }

  // toppingFor is the id and English name for a new topping row: another
  // item's topping of the same name (so they share their stock), else a
  // new id.
  function toppingFor(name, taken) {
    for (const it of items) for (const t of it.toppings || []) if (t.name === name) return { toppingId: t.toppingId, nameEn: t.nameEn || '' };
    const id = newId([name], taken, 'topping');
    taken.add(id);
    return { toppingId: id, nameEn: '' };
  }

  let filled = false;

  function fill(item) {
    filled = true;
    editing = item ? item.menuId : null;
    $('#menu-form').dataset.menuId = editing || '';
    T.put('#menu-form-title', item ? 'staff.menu.edit' : 'staff.menu.create');
    for (const el of document.querySelectorAll('#menu-form [aria-invalid]')) fieldError(el, '');
    $('#menu-name').value = item ? item.name || '' : '';
    $('#menu-name-en').value = item ? item.nameEn || '' : '';
    $('#menu-category').value = item ? item.category || '' : '';
    $('#menu-station').value = item ? item.station || 'kitchen' : 'kitchen';
    $('#menu-price').value = item ? String(item.price) : '';
    $('#menu-available').checked = item ? item.available !== false : true;
    const box = clear($('#menu-toppings'));
    for (const t of (item && item.toppings) || []) box.append(toppingRow(t));
    setError('#menu-error', '');
    options.fill(item);
    content.fill(item, categories);
  }

  // wrong marks the field and says why below it; false, for return.
  function wrong(input, key) {
    fieldError(input, [T, key]);
    input.focus();
    return false;
  }

  async function save(ev) {
    ev.preventDefault();
    for (const el of document.querySelectorAll('#menu-form [aria-invalid]')) fieldError(el, '');
    setError('#menu-error', '');
    const name = $('#menu-name').value.trim();
    const price = wholeNumber($('#menu-price').value);
    if (!name) return wrong($('#menu-name'), 'staff.menu.invalidName');
    if (!Number.isFinite(price)) return wrong($('#menu-price'), 'staff.menu.invalidPrice');
    const taken = takenIds();
    const toppings = [];
    for (const row of document.querySelectorAll('#menu-toppings [data-topping-row]')) {
      const input = (f) => row.querySelector('[data-field="' + f + '"]');
      const t = { toppingId: row.dataset.toppingId, nameEn: row.dataset.nameEn, name: input('name').value.trim(), price: wholeNumber(input('price').value.trim()) };
      if (!t.toppingId && !t.name) continue;
      if (!t.name) return wrong(input('name'), 'staff.menu.invalidName');
      if (!Number.isFinite(t.price)) return wrong(input('price'), 'staff.menu.invalidPrice');
      toppings.push(t);
    }
    const groups = options.body();
    if (groups.error) return wrong(groups.error.input, groups.error.key);
    // The ids: an item's and a topping's once made stay; new ones come
    // from the names. Chosen only now, when nothing is wrong.
    const menuId = editing || newId([name, $('#menu-name-en').value.trim()], taken, 'item');
    taken.add(menuId);
    for (const t of toppings) if (!t.toppingId) Object.assign(t, toppingFor(t.name, taken));
    options.assignIds();
    const current = items.find((i) => i.menuId === editing);
    const body = menuBody({
      // its place in the menu; a new item goes last
      sortOrder: current ? current.sortOrder : Math.max(0, ...items.map((i) => Number(i.sortOrder) || 0)) + 1,
      station: $('#menu-station').value.trim() || 'kitchen',
      optionGroups: groups.optionGroups,
      name,
      nameEn: $('#menu-name-en').value.trim(),
      category: $('#menu-category').value.trim(),
      price,
      available: $('#menu-available').checked,
      toppings,
      ...content.body(),
    });
    try {
      const saved = await api.put('/api/staff/menu/' + encodeURIComponent(menuId), body);
      editing = menuId;
      $('#menu-form').dataset.menuId = menuId;
      await content.afterSave(menuId);
      toast(T.t('staff.menu.saved', { name }), 'ok');
      await load();
      fill(items.find((i) => i.menuId === menuId) || (saved && saved.menuId ? saved : null) || null);
    } catch (e) {
      if (e.status !== 401) setError('#menu-error', e.message);
    }
  }

  function bind() {
    $('#menu-form').addEventListener('submit', save);
    $('#menu-new').addEventListener('click', () => fill(null));
    $('#menu-reload').addEventListener('click', load);
    $('#menu-topping-add').addEventListener('click', () => $('#menu-toppings').append(toppingRow(null)));
    $('#menu-category').addEventListener('input', () => content.renderCategory());
    csv.bind();
  }

  return {
    bind,
    enter: load,
    rerender: () => {
      render();
      csv.render();
    },
  };
}

// ---------------------------------------------------------------- stock

export function createStockPage({ api, T }) {
  let stock = [];
  let names = new Map();

  async function load() {
    try {
      const [s, m] = await Promise.all([api.get('/api/staff/stock'), api.get('/api/staff/menu')]);
      stock = (s && s.stock) || [];
      names = new Map();
      for (const it of (m && m.items) || []) {
        names.set(it.menuId, it.name);
        for (const t of it.toppings || []) if (!names.has(t.toppingId)) names.set(t.toppingId, t.name);
      }
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  function render() {
    const tb = clear($('#stock-list'));
    for (const s of stock.slice().sort((a, b) => String(a.sku).localeCompare(String(b.sku)))) {
      const input = h('input', { type: 'number', min: '0', step: '1', value: s.quantity == null ? '' : String(s.quantity), dataset: { field: 'quantity' }, 'aria-label': s.sku });
      tb.append(
        h(
          'tr',
          { dataset: { sku: s.sku } },
          h('td', { class: 'mono', text: s.sku }),
          h('td', { text: names.get(s.sku) || '' }),
          h('td', { class: 'num' }, h('strong', { text: s.quantity == null ? T.t('staff.stock.untracked') : String(s.quantity) })),
          h(
            'td',
            null,
            h(
              'div',
              { class: 'row' },
              input,
              h('button', { type: 'button', class: 'small primary', dataset: { action: 'save' }, text: T.t('staff.stock.save'), onclick: () => put(s.sku, input.value) }),
              h('button', { type: 'button', class: 'small', dataset: { action: 'untrack' }, text: T.t('staff.stock.untracked'), onclick: () => put(s.sku, '') }),
            ),
          ),
        ),
      );
    }
    const dl = clear($('#stock-skus'));
    for (const [sku, name] of names) dl.append(h('option', { value: sku, label: name }));
  }

  async function put(sku, raw, errSel) {
    let quantity = null;
    if (String(raw).trim() !== '') {
      quantity = wholeNumber(raw);
      if (!Number.isFinite(quantity)) {
        if (errSel) setError(errSel, [T, 'staff.stock.invalidQty']);
        else toast(T.t('staff.stock.invalidQty'), 'error');
        return false;
      }
    }
    try {
      await api.put('/api/staff/stock/' + encodeURIComponent(sku), { quantity });
      toast(T.t('staff.stock.saved', { sku }), 'ok');
      await load();
      return true;
    } catch (e) {
      if (e.status === 401) return false;
      if (errSel) setError(errSel, e.message);
      else toast(e.message, 'error');
      return false;
    }
  }

  function bind() {
    $('#stock-reload').addEventListener('click', load);
    $('#stock-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const sku = $('#stock-sku').value.trim();
      if (!ID_RE.test(sku)) return setError('#stock-error', [T, 'staff.menu.invalidId']);
      setError('#stock-error', '');
      if (await put(sku, $('#stock-qty').value, '#stock-error')) {
        $('#stock-sku').value = '';
        $('#stock-qty').value = '';
      }
    });
  }

  return { bind, enter: load, rerender: render };
}
