// options-editor.js — the menu form's option groups (API.md "Menu:
// options, notes, stations, languages"): a group's names and how many
// choices it takes (min ≥ 1: the guest must choose), and its options with
// their surcharges. Ids are no field of the owner's: a group's or option's
// id once made stays, a new one is made from its name (ids.js). A group's
// or option's other-language names are not edited here; they are kept as
// they are through a save.

import { $, h, clear } from '/assets/dom.js';
import { newId } from '/staff/ids.js';

export const OPTION_STRINGS = {
  ja: {
    'staff.options.title': '選択肢（麺のかたさなど）',
    'staff.options.help': '最小 1 以上のグループはお客様が必ず選びます。',
    'staff.options.addGroup': '＋ 選択肢グループを追加',
    'staff.options.removeGroup': 'グループを削除',
    'staff.options.min': '最小',
    'staff.options.max': '最大',
    'staff.options.addOption': '＋ 選択肢を追加',
    'staff.options.remove': '削除',
    'staff.options.invalidCount': '選択肢グループの最小・最大は 0 以上の整数で、最小 ≤ 最大 にしてください。',
    'staff.options.noOptions': '選択肢グループには選択肢が 1 つ以上必要です。',
  },
  en: {
    'staff.options.title': 'Choices (noodle firmness, …)',
    'staff.options.help': 'A group with a minimum of 1 or more must be chosen by the guest.',
    'staff.options.addGroup': '+ Add a choice group',
    'staff.options.removeGroup': 'Remove group',
    'staff.options.min': 'Min',
    'staff.options.max': 'Max',
    'staff.options.addOption': '+ Add a choice',
    'staff.options.remove': 'Remove',
    'staff.options.invalidCount': 'A group’s min and max are whole numbers of 0 or more, min ≤ max.',
    'staff.options.noOptions': 'A choice group needs at least one choice.',
  },
};

function wholeNumber(v) {
  const s = String(v).trim();
  return /^\d+$/.test(s) ? Number(s) : NaN;
}

// createOptionsEditor draws into #menu-options. fill(item) shows an
// item's groups; body() returns {optionGroups} or {error} (a message).
export function createOptionsEditor({ T }) {
  const names = new WeakMap(); // row → its stored other-language names

  // input is one field with its caption (the text key label) above it (a
  // filled field shows no placeholder, and "size" next to "量" says
  // nothing by itself).
  function input(field, value, label, attrs) {
    return h(
      'label',
      { class: 'option-field' },
      h('span', { words: [T, label] }),
      h('input', Object.assign({ type: 'text', dataset: { field }, value: value == null ? '' : String(value) }, attrs || {})),
    );
  }

  function optionRow(o) {
    const row = h(
      'div',
      { class: 'option-edit', dataset: { optionRow: '', id: (o && o.optionId) || '' } },
      input('name', o && o.name, 'staff.menu.name', { maxlength: '100' }),
      input('nameEn', o && o.nameEn, 'staff.menu.nameEn', { maxlength: '100' }),
      input('price', o ? o.price : 0, 'staff.menu.price', { type: 'number', min: '0', step: '1', inputmode: 'numeric' }),
      h('button', { type: 'button', class: 'small', dataset: { action: 'remove-option' }, words: [T, 'staff.options.remove'], onclick: () => row.remove() }),
    );
    if (o && o.names) names.set(row, o.names);
    return row;
  }

  function groupRow(g) {
    const options = h('div', { class: 'option-list' });
    for (const o of (g && g.options) || []) options.append(optionRow(o));
    if (!g) options.append(optionRow(null));
    const box = h(
      'fieldset',
      { class: 'option-group-edit', dataset: { groupRow: '', id: (g && g.groupId) || '' } },
      h(
        'div',
        { class: 'option-group-head' },
        input('name', g && g.name, 'staff.menu.name', { maxlength: '100' }),
        input('nameEn', g && g.nameEn, 'staff.menu.nameEn', { maxlength: '100' }),
        input('min', g ? g.min : 0, 'staff.options.min', { type: 'number', min: '0', step: '1', inputmode: 'numeric' }),
        input('max', g ? g.max : 1, 'staff.options.max', { type: 'number', min: '1', step: '1', inputmode: 'numeric' }),
      ),
      options,
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'button', class: 'small', dataset: { action: 'add-option' }, words: [T, 'staff.options.addOption'], onclick: () => options.append(optionRow(null)) }),
        h('button', { type: 'button', class: 'small danger', dataset: { action: 'remove-group' }, words: [T, 'staff.options.removeGroup'], onclick: () => box.remove() }),
      ),
    );
    if (g && g.names) names.set(box, g.names);
    return box;
  }

  function fill(item) {
    const root = clear($('#menu-options'));
    const groups = h('div', { id: 'menu-option-groups' });
    for (const g of (item && item.optionGroups) || []) groups.append(groupRow(g));
    root.append(
      h('h3', { words: [T, 'staff.options.title'] }),
      h('p', { class: 'muted small-text', words: [T, 'staff.options.help'] }),
      groups,
      h('button', { id: 'menu-group-add', type: 'button', class: 'small', words: [T, 'staff.options.addGroup'], onclick: () => groups.append(groupRow(null)) }),
    );
  }

  // body reads the groups; rows left wholly empty are ignored. A wrong
  // field comes back as {error: {input, key}}. The rows' objects are kept
  // for assignIds.
  let read = [];
  function body() {
    const optionGroups = [];
    read = [];
    for (const box of document.querySelectorAll('#menu-options [data-group-row]')) {
      const field = (row, f) => row.querySelector('[data-field="' + f + '"]');
      const get = (row, f) => field(row, f).value.trim();
      const head = box.querySelector('.option-group-head');
      const options = [];
      for (const row of box.querySelectorAll('[data-option-row]')) {
        const o = { optionId: row.dataset.id, name: get(row, 'name'), nameEn: get(row, 'nameEn'), price: wholeNumber(get(row, 'price') || '0') };
        if (!o.optionId && !o.name && !o.nameEn) continue;
        if (!o.name) return { error: { input: field(row, 'name'), key: 'staff.menu.invalidName' } };
        if (!Number.isFinite(o.price)) return { error: { input: field(row, 'price'), key: 'staff.menu.invalidPrice' } };
        o.names = names.get(row) || {};
        options.push(o);
        read.push([row, o]);
      }
      const g = { groupId: box.dataset.id, name: get(head, 'name'), nameEn: get(head, 'nameEn'), min: wholeNumber(get(head, 'min')), max: wholeNumber(get(head, 'max')) };
      if (!g.groupId && !g.name && !g.nameEn && !options.length) continue;
      if (!g.name) return { error: { input: field(head, 'name'), key: 'staff.menu.invalidName' } };
      if (!options.length) return { error: { input: field(head, 'name'), key: 'staff.options.noOptions' } };
      if (!Number.isFinite(g.min) || !Number.isFinite(g.max) || g.max < 1 || g.min > g.max) return { error: { input: field(head, 'min'), key: 'staff.options.invalidCount' } };
      g.names = names.get(box) || {};
      g.options = options;
      optionGroups.push(g);
      read.push([box, g]);
    }
    return { optionGroups };
  }

  // assignIds gives the groups and options body() read that have no id
  // one from their names: a group's unique in the item, an option's in
  // its group. The rows keep it, so a second save sends the same.
  function assignIds() {
    const groupIds = new Set(read.filter(([, v]) => v.groupId).map(([, v]) => v.groupId));
    for (const [row, v] of read) {
      if (!('options' in v)) continue;
      if (!v.groupId) {
        v.groupId = newId([v.nameEn, v.name], groupIds, 'choice');
        groupIds.add(v.groupId);
        row.dataset.id = v.groupId;
      }
      const optionIds = new Set(v.options.filter((o) => o.optionId).map((o) => o.optionId));
      for (const o of v.options) {
        if (o.optionId) continue;
        o.optionId = newId([o.nameEn, o.name], optionIds, 'option');
        optionIds.add(o.optionId);
        for (const [r, x] of read) if (x === o) r.dataset.id = o.optionId;
      }
    }
  }

  return { fill, body, assignIds };
}
