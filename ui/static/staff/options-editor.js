// options-editor.js — the menu form's option groups (API.md "Menu:
// options, notes, stations, languages"): a group's id, names and how many
// choices it takes (min ≥ 1: the guest must choose), and its options with
// their surcharges. A group's or option's other-language names are not
// edited here; they are kept as they are through a save.

import { $, h, clear } from '/assets/dom.js';

export const OPTION_STRINGS = {
  ja: {
    'staff.options.title': '選択肢（麺のかたさなど）',
    'staff.options.help': '最小 1 以上のグループはお客様が必ず選びます。',
    'staff.options.addGroup': '＋ 選択肢グループを追加',
    'staff.options.removeGroup': 'グループを削除',
    'staff.options.groupId': 'グループID',
    'staff.options.min': '最小',
    'staff.options.max': '最大',
    'staff.options.addOption': '＋ 選択肢を追加',
    'staff.options.optionId': '選択肢ID',
    'staff.options.remove': '削除',
    'staff.options.invalidCount': '選択肢グループの最小・最大は 0 以上の整数で、最小 ≤ 最大 にしてください。',
    'staff.options.noOptions': '選択肢グループには選択肢が 1 つ以上必要です。',
  },
  en: {
    'staff.options.title': 'Choices (noodle firmness, …)',
    'staff.options.help': 'A group with a minimum of 1 or more must be chosen by the guest.',
    'staff.options.addGroup': '+ Add a choice group',
    'staff.options.removeGroup': 'Remove group',
    'staff.options.groupId': 'Group id',
    'staff.options.min': 'Min',
    'staff.options.max': 'Max',
    'staff.options.addOption': '+ Add a choice',
    'staff.options.optionId': 'Choice id',
    'staff.options.remove': 'Remove',
    'staff.options.invalidCount': 'A group’s min and max are whole numbers of 0 or more, min ≤ max.',
    'staff.options.noOptions': 'A choice group needs at least one choice.',
  },
};

const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

function wholeNumber(v) {
  const s = String(v).trim();
  return /^\d+$/.test(s) ? Number(s) : NaN;
}

// createOptionsEditor draws into #menu-options. fill(item) shows an
// item's groups; body() returns {optionGroups} or {error} (a message).
export function createOptionsEditor({ T }) {
  const names = new WeakMap(); // row → its stored other-language names

  // input is one field with its caption above it (a filled field shows no
  // placeholder, and "size" next to "量" says nothing by itself).
  function input(field, value, label, attrs) {
    return h(
      'label',
      { class: 'option-field' },
      h('span', { text: label }),
      h('input', Object.assign({ type: 'text', dataset: { field }, value: value == null ? '' : String(value) }, attrs || {})),
    );
  }

  function optionRow(o) {
    const row = h(
      'div',
      { class: 'option-edit', dataset: { optionRow: '' } },
      input('optionId', o && o.optionId, T.t('staff.options.optionId'), { maxlength: '64', autocomplete: 'off' }),
      input('name', o && o.name, T.t('staff.menu.name'), { maxlength: '100' }),
      input('nameEn', o && o.nameEn, T.t('staff.menu.nameEn'), { maxlength: '100' }),
      input('price', o ? o.price : 0, T.t('staff.menu.price'), { type: 'number', min: '0', step: '1', inputmode: 'numeric' }),
      h('button', { type: 'button', class: 'small', dataset: { action: 'remove-option' }, text: T.t('staff.options.remove'), onclick: () => row.remove() }),
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
      { class: 'option-group-edit', dataset: { groupRow: '' } },
      h(
        'div',
        { class: 'option-group-head' },
        input('groupId', g && g.groupId, T.t('staff.options.groupId'), { maxlength: '64', autocomplete: 'off' }),
        input('name', g && g.name, T.t('staff.menu.name'), { maxlength: '100' }),
        input('nameEn', g && g.nameEn, T.t('staff.menu.nameEn'), { maxlength: '100' }),
        input('min', g ? g.min : 0, T.t('staff.options.min'), { type: 'number', min: '0', step: '1', inputmode: 'numeric' }),
        input('max', g ? g.max : 1, T.t('staff.options.max'), { type: 'number', min: '1', step: '1', inputmode: 'numeric' }),
      ),
      options,
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'button', class: 'small', dataset: { action: 'add-option' }, text: T.t('staff.options.addOption'), onclick: () => options.append(optionRow(null)) }),
        h('button', { type: 'button', class: 'small danger', dataset: { action: 'remove-group' }, text: T.t('staff.options.removeGroup'), onclick: () => box.remove() }),
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
      h('h3', { text: T.t('staff.options.title') }),
      h('p', { class: 'muted small-text', text: T.t('staff.options.help') }),
      groups,
      h('button', { id: 'menu-group-add', type: 'button', class: 'small', text: T.t('staff.options.addGroup'), onclick: () => groups.append(groupRow(null)) }),
    );
  }

  // body reads the groups; rows left wholly empty are ignored.
  function body() {
    const optionGroups = [];
    for (const box of document.querySelectorAll('#menu-options [data-group-row]')) {
      const get = (row, f) => row.querySelector('[data-field="' + f + '"]').value.trim();
      const head = box.querySelector('.option-group-head');
      const options = [];
      for (const row of box.querySelectorAll('[data-option-row]')) {
        const o = { optionId: get(row, 'optionId'), name: get(row, 'name'), nameEn: get(row, 'nameEn'), price: wholeNumber(get(row, 'price') || '0') };
        if (!o.optionId && !o.name && !o.nameEn) continue;
        if (!ID_RE.test(o.optionId)) return { error: T.t('staff.menu.invalidId') };
        if (!o.name) return { error: T.t('staff.menu.invalidName') };
        if (!Number.isFinite(o.price)) return { error: T.t('staff.menu.invalidPrice') };
        o.names = names.get(row) || {};
        options.push(o);
      }
      const g = { groupId: get(head, 'groupId'), name: get(head, 'name'), nameEn: get(head, 'nameEn'), min: wholeNumber(get(head, 'min')), max: wholeNumber(get(head, 'max')) };
      if (!g.groupId && !g.name && !g.nameEn && !options.length) continue;
      if (!ID_RE.test(g.groupId)) return { error: T.t('staff.menu.invalidId') };
      if (!g.name) return { error: T.t('staff.menu.invalidName') };
      if (!options.length) return { error: T.t('staff.options.noOptions') };
      if (!Number.isFinite(g.min) || !Number.isFinite(g.max) || g.max < 1 || g.min > g.max) return { error: T.t('staff.options.invalidCount') };
      g.names = names.get(box) || {};
      g.options = options;
      optionGroups.push(g);
    }
    return { optionGroups };
  }

  return { fill, body };
}
