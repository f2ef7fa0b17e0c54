// menucontent.js — what a guest chooses by: the name in their language,
// the picture, the description, allergen marks and the "hide items
// with …" filter. Everything from the menu data is put in as text
// (dom.js h(): textContent), never as HTML.

import { h } from '/assets/dom.js';
import { safeStorage } from '/assets/cluster.js';
import { ALLERGEN_CODES } from './strings.js';

const FILTER_KEY = 'masterorder.hideAllergens';
const store = safeStorage(globalThis.localStorage);

// localName picks a name for lang: Japanese is `name`; another language
// its own entry in `names` (exact tag, then its language), then English,
// then Japanese.
export function localName(obj, lang) {
  if (!obj) return '?';
  if (lang === 'ja') return obj.name;
  const names = obj.names || {};
  if (names[lang]) return names[lang];
  const base = lang.split('-')[0];
  for (const k of Object.keys(names)) if (k.split('-')[0] === base && names[k]) return names[k];
  return obj.nameEn || obj.name;
}

export function localDescription(item, lang) {
  if (lang === 'ja') return item.description || item.descriptionEn || '';
  return item.descriptionEn || item.description || '';
}

// ---- the filter

export function hiddenAllergens() {
  try {
    const v = JSON.parse(store.getItem(FILTER_KEY) || '[]');
    return new Set(Array.isArray(v) ? v.filter((c) => ALLERGEN_CODES.includes(c)) : []);
  } catch (_) {
    return new Set();
  }
}

function saveHidden(set) {
  store.setItem(FILTER_KEY, JSON.stringify([...set]));
}

// hiddenBy reports whether the filter hides item.
export function hiddenBy(item, hidden) {
  return (item.allergens || []).some((a) => hidden.has(a));
}

// filterBar draws the filter button (with how many items it hides) and,
// when open, the allergen checkboxes; onChange re-renders the menu.
export function filterBar(T, hiddenCount, open, onChange) {
  const hidden = hiddenAllergens();
  const bar = h(
    'div',
    { class: 'filter-bar' },
    h('button', {
      type: 'button',
      id: 'filter-toggle',
      class: ['small', hidden.size > 0 && 'active'],
      'aria-expanded': open ? 'true' : 'false',
      text: T.t('guest.filter.open') + (hidden.size > 0 ? ' (' + hidden.size + ')' : ''),
      onclick: () => onChange(!open),
    }),
    hidden.size > 0 ? h('span', { id: 'filter-hidden', class: 'muted small-text', text: T.t('guest.filter.hidden', { n: hiddenCount }) }) : null,
  );
  if (!open) return bar;
  const panel = h(
    'fieldset',
    { id: 'filter-panel', class: 'filter-panel' },
    h('legend', { text: T.t('guest.filter.title') }),
    h(
      'div',
      { class: 'filter-grid' },
      ALLERGEN_CODES.map((code) =>
        h(
          'label',
          { class: 'filter-option' },
          h('input', {
            type: 'checkbox',
            value: code,
            checked: hidden.has(code),
            onchange: (ev) => {
              const set = hiddenAllergens();
              if (ev.currentTarget.checked) set.add(code);
              else set.delete(code);
              saveHidden(set);
              onChange(true);
            },
          }),
          h('span', { text: T.t('allergen.' + code) }),
        ),
      ),
    ),
    h(
      'div',
      { class: 'row' },
      h('button', {
        type: 'button',
        class: 'small',
        text: T.t('guest.filter.clear'),
        onclick: () => {
          saveHidden(new Set());
          onChange(true);
        },
      }),
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', class: 'small primary', text: T.t('guest.filter.done'), onclick: () => onChange(false) }),
    ),
  );
  return h('div', {}, bar, panel);
}

// ---- the card's content

// cardPicture is the item's picture (lazy, sized by CSS), or nothing.
export function cardPicture(item) {
  if (!item.imageUrl || !/^\/api\/images\/[0-9a-f]{64}$/.test(item.imageUrl)) return null;
  return h('img', { class: 'menu-photo', src: item.imageUrl, alt: '', loading: 'lazy', decoding: 'async' });
}

// cardDetails: the description and the allergen marks.
export function cardDetails(T, item, lang) {
  const desc = localDescription(item, lang);
  const codes = (item.allergens || []).filter((a) => ALLERGEN_CODES.includes(a));
  return [
    desc ? h('p', { class: 'desc', text: desc }) : null,
    codes.length
      ? h(
          'ul',
          { class: 'allergens', 'aria-label': T.t('guest.menu.allergens') },
          codes.map((a) => h('li', { class: 'allergen', dataset: { allergen: a }, text: T.t('allergen.' + a) })),
        )
      : null,
  ];
}
