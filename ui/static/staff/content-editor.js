// content-editor.js — the menu form's content block: names in other
// languages, descriptions, allergens, the picture, and the category's
// names (API.md "Menu: options, notes, stations, languages").

import { $, h, clear, setError } from '/assets/dom.js';
import { OPTION_STRINGS } from '/staff/options-editor.js';
import { ALLERGEN_CODES, ALLERGEN_NAMES } from '/staff/allergens.js';

export { ALLERGEN_CODES };

export const CONTENT_LANGS = [
  ['zh-Hans', '中文（简体）'],
  ['ko', '한국어'],
];

const MAX_PICTURE = 256 * 1024;

export const CONTENT_STRINGS = {
  ja: {
    'staff.content.title': '説明・アレルギー・写真・多言語',
    'staff.content.names': '名前（他の言語）',
    'staff.content.description': '説明',
    'staff.content.descriptionEn': '説明（英語）',
    'staff.content.allergens': 'アレルギー物質（含むものにチェック）',
    'staff.content.picture': '写真（JPEG・PNG・WebP、256 KB まで）',
    'staff.content.noPicture': '写真なし',
    'staff.content.removePicture': '写真を外す',
    'staff.content.pictureTooBig': '写真が大きすぎます（256 KB まで）。',
    'staff.content.pictureType': 'JPEG・PNG・WebP の写真を選んでください。',
    'staff.content.pictureSaved': '写真を保存しました',
    'staff.content.categoryNames': 'カテゴリ「{category}」の名前（英語・他の言語）',
    ...Object.fromEntries(ALLERGEN_CODES.map((c, i) => ['allergen.' + c, ALLERGEN_NAMES.ja[i]])),
  },
  en: {
    'staff.content.title': 'Description, allergens, picture, languages',
    'staff.content.names': 'Name in other languages',
    'staff.content.description': 'Description (Japanese)',
    'staff.content.descriptionEn': 'Description (English)',
    'staff.content.allergens': 'Allergens (tick what it contains)',
    'staff.content.picture': 'Picture (JPEG, PNG or WebP, up to 256 KB)',
    'staff.content.noPicture': 'No picture',
    'staff.content.removePicture': 'Remove picture',
    'staff.content.pictureTooBig': 'The picture is too large (256 KB at most).',
    'staff.content.pictureType': 'Choose a JPEG, PNG or WebP picture.',
    'staff.content.pictureSaved': 'Picture saved',
    'staff.content.categoryNames': 'Names of the category "{category}" (English, other languages)',
    ...Object.fromEntries(ALLERGEN_CODES.map((c, i) => ['allergen.' + c, ALLERGEN_NAMES.en[i]])),
  },
};

// withContentStrings adds the editors' strings (content, option groups)
// to the console's.
export function withContentStrings(dicts) {
  return {
    ja: Object.assign({}, dicts.ja, CONTENT_STRINGS.ja, OPTION_STRINGS.ja),
    en: Object.assign({}, dicts.en, CONTENT_STRINGS.en, OPTION_STRINGS.en),
  };
}

// createContentEditor draws the block into #menu-content. fill(item,
// categories) shows an item; body() is its part of the PUT body;
// afterSave(menuId, category) uploads or removes the picture and saves
// the category's names; each throws the server's error.
export function createContentEditor({ api, T }) {
  let item = null;
  let categories = {};
  let file = null;
  let removePicture = false;
  let preview = null;

  function render() {
    const root = clear($('#menu-content'));
    const names = (item && item.names) || {};
    const allergens = new Set((item && item.allergens) || []);
    root.append(
      h('h3', { words: [T, 'staff.content.title'] }),
      h(
        'div',
        { class: 'content-editor' },
        h('label', { class: 'muted small-text', words: [T, 'staff.content.names'] }),
        h(
          'div',
          { class: 'names-grid' },
          CONTENT_LANGS.map(([tag, label]) => [
            h('label', { for: 'menu-name-' + tag, lang: tag, text: label }),
            h('input', { id: 'menu-name-' + tag, type: 'text', maxlength: '100', lang: tag, dataset: { nameTag: tag }, value: names[tag] || '' }),
          ]),
        ),
        h('label', { for: 'menu-description', words: [T, 'staff.content.description'] }),
        h('textarea', { id: 'menu-description', maxlength: '500', rows: '2' }, (item && item.description) || ''),
        h('label', { for: 'menu-description-en', words: [T, 'staff.content.descriptionEn'] }),
        h('textarea', { id: 'menu-description-en', maxlength: '500', rows: '2' }, (item && item.descriptionEn) || ''),
        h('label', { class: 'muted small-text', words: [T, 'staff.content.allergens'] }),
        h(
          'div',
          { id: 'menu-allergens', class: 'allergen-grid' },
          ALLERGEN_CODES.map((code) =>
            h('label', { class: 'row' }, h('input', { type: 'checkbox', value: code, checked: allergens.has(code) }), h('span', { words: [T, 'allergen.' + code] })),
          ),
        ),
        h('label', { for: 'menu-picture', words: [T, 'staff.content.picture'] }),
        h('div', { id: 'menu-photo-row', class: 'photo-row' }),
        h('div', { id: 'menu-category-names', class: 'content-editor' }),
      ),
    );
    renderPhoto();
    renderCategory();
  }

  // renderPhoto draws the picture row alone (choosing a file must not
  // redraw, and so lose, what was typed above it).
  function renderPhoto() {
    const row = clear($('#menu-photo-row'));
    const src = preview || (!removePicture && item && item.imageUrl) || '';
    // Element.append writes a null as the word "null": only what there is.
    row.append(
      ...[
        src ? h('img', { id: 'menu-picture-preview', src, alt: '' }) : h('span', { class: 'muted small-text', words: [T, 'staff.content.noPicture'] }),
        h('input', { id: 'menu-picture', type: 'file', accept: 'image/jpeg,image/png,image/webp', onchange: onFile }),
        src ? h('button', { id: 'menu-picture-remove', type: 'button', class: 'small', words: [T, 'staff.content.removePicture'], onclick: onRemove }) : null,
      ].filter(Boolean),
    );
  }

  // renderCategory draws the names of the category in the form's
  // category field (it follows that field as it is edited).
  function renderCategory() {
    const box = clear($('#menu-category-names'));
    const cat = $('#menu-category').value.trim();
    if (!cat) return;
    const catNames = categories[cat] || {};
    box.append(
      h('label', { class: 'muted small-text', words: [T, 'staff.content.categoryNames', { category: cat }] }),
      h(
        'div',
        { class: 'names-grid' },
        [['en', 'English'], ...CONTENT_LANGS].map(([tag, label]) => [
          h('label', { for: 'category-name-' + tag, lang: tag, text: label }),
          h('input', { id: 'category-name-' + tag, type: 'text', maxlength: '100', lang: tag, dataset: { categoryTag: tag }, value: catNames[tag] || '' }),
        ]),
      ),
    );
  }

  function onFile(ev) {
    const f = ev.currentTarget.files && ev.currentTarget.files[0];
    preview = null;
    file = null;
    if (!f) return renderPhoto();
    if (!['image/jpeg', 'image/png', 'image/webp'].includes(f.type) || f.size > MAX_PICTURE) {
      setError('#menu-error', [T, f.size > MAX_PICTURE ? 'staff.content.pictureTooBig' : 'staff.content.pictureType']);
      ev.currentTarget.value = '';
      return;
    }
    file = f;
    removePicture = false;
    // A data: URL: the CSP allows no blob: images.
    const reader = new FileReader();
    reader.onload = () => {
      if (file !== f) return;
      preview = String(reader.result);
      renderPhoto();
    };
    reader.readAsDataURL(f);
  }

  function onRemove() {
    preview = null;
    file = null;
    removePicture = true;
    renderPhoto();
  }

  function fill(it, cats) {
    item = it;
    categories = cats || {};
    file = null;
    removePicture = false;
    preview = null;
    render();
  }

  function body() {
    const names = {};
    for (const el of document.querySelectorAll('#menu-content [data-name-tag]')) {
      const v = el.value.trim();
      if (v) names[el.dataset.nameTag] = v;
    }
    const allergens = [...document.querySelectorAll('#menu-allergens input:checked')].map((el) => el.value);
    return {
      names,
      description: $('#menu-description').value.trim(),
      descriptionEn: $('#menu-description-en').value.trim(),
      allergens,
    };
  }

  // upload sends the picture as the body (not JSON), with its own type.
  async function upload(menuId) {
    const res = await fetch('/api/staff/menu/' + encodeURIComponent(menuId) + '/image', {
      method: 'PUT',
      headers: { 'Content-Type': file.type, Accept: 'application/json', Authorization: 'Bearer ' + api.token(), 'Accept-Language': T.lang() },
      body: file,
      credentials: 'same-origin',
      cache: 'no-store',
    });
    const data = await res.json().catch(() => null);
    if (!res.ok) throw new Error((data && data.message) || String(res.status));
  }

  async function afterSave(menuId) {
    if (file) await upload(menuId);
    else if (removePicture && item && item.imageUrl) await api.request('DELETE', '/api/staff/menu/' + encodeURIComponent(menuId) + '/image');
    const cat = $('#menu-category').value.trim();
    const fields = document.querySelectorAll('#menu-content [data-category-tag]');
    if (cat && fields.length) {
      const names = {};
      for (const el of fields) if (el.value.trim()) names[el.dataset.categoryTag] = el.value.trim();
      if (!sameNames(names, categories[cat] || {})) await api.put('/api/staff/categories/' + encodeURIComponent(cat), { names });
    }
  }

  return { fill, body, afterSave, render, renderCategory };
}

function sameNames(a, b) {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}
