// i18n.js — the apps' words in the browser's language until the user
// picks one with the language button (remembered in localStorage for every
// app of this origin). The staff screen, the kitchen screen and the setup
// wizard speak Japanese and English: a browser asking for Japanese gets
// Japanese, any other English. The guest app speaks four languages, the
// browser's first, else Japanese.
//
// Static text in the HTML carries data-i18n="key" (and
// data-i18n-placeholder / data-i18n-title / data-i18n-aria-label for
// attributes; data-i18n-params holds a key's {params} as JSON); apply()
// fills them in the chosen language, <title> included. Words put into an
// element with T.put(el, key, params) carry their key, so a language
// switch words them again (an error shown before the switch among them).

import { safeStorage } from './cluster.js';

const LANG_KEY = 'masterorder.lang';
const store = safeStorage(globalThis.localStorage);

export const COMMON = {
  ja: {
    'lang.switch': 'English',
    'common.ok': 'OK',
    'common.cancel': 'キャンセル',
    'common.yes': 'はい',
    'common.no': 'いいえ',
    'common.close': '閉じる',
    'common.save': '保存',
    'common.reload': '更新',
    'common.loading': '読み込み中…',
    'common.error': 'エラーが発生しました。',
    'common.network': '通信できませんでした。',
    'login.title': 'スタッフログイン',
    'login.password': 'パスワード',
    'login.submit': 'ログイン',
    'login.failed': 'ログインできませんでした。',
    'common.logout': 'ログアウト',
    'status.ACCEPTED': '受付',
    'status.COOKING': '調理中',
    'status.READY': 'できあがり',
    'status.SERVED': '提供済み',
    'status.CANCELLED': '取消',
  },
  en: {
    'lang.switch': '日本語',
    'common.ok': 'OK',
    'common.cancel': 'Cancel',
    'common.yes': 'Yes',
    'common.no': 'No',
    'common.close': 'Close',
    'common.save': 'Save',
    'common.reload': 'Refresh',
    'common.loading': 'Loading…',
    'common.error': 'Something went wrong.',
    'common.network': 'Could not reach the store server.',
    'login.title': 'Staff login',
    'login.password': 'Password',
    'login.submit': 'Log in',
    'login.failed': 'Could not log in.',
    'common.logout': 'Log out',
    'status.ACCEPTED': 'Accepted',
    'status.COOKING': 'Cooking',
    'status.READY': 'Ready',
    'status.SERVED': 'Served',
    'status.CANCELLED': 'Cancelled',
  },
};

// The languages of the running app and the one it falls back to when the
// browser asks for none of them (createI18n sets both).
let appLangs = ['ja', 'en'];
let fallback = 'en';

// GUEST_LANGS, each with its own name for the switcher.
export const GUEST_LANGS = { ja: '日本語', en: 'English', 'zh-Hans': '简体中文', ko: '한국어' };

// matchLang picks from the browser's languages (navigator.languages) the
// first the app has: exact tag, then its language (en-GB → en; every
// Chinese → zh-Hans, the one Chinese script the app has); else otherwise
// (Japanese unless given).
export function matchLang(prefs, langs, otherwise) {
  for (const p of prefs || []) {
    const tag = String(p).toLowerCase();
    const exact = langs.find((l) => l.toLowerCase() === tag);
    if (exact) return exact;
    const base = tag.split('-')[0];
    const same = langs.find((l) => l.toLowerCase().split('-')[0] === base);
    if (same) return same;
  }
  return otherwise || 'ja';
}

export function getLang() {
  const v = store.getItem(LANG_KEY);
  if (appLangs.includes(v)) return v;
  return matchLang(globalThis.navigator && navigator.languages, appLangs, fallback);
}

export function setLang(l) {
  store.setItem(LANG_KEY, appLangs.includes(l) ? l : 'ja');
}

// createI18n merges the app's dictionaries over COMMON. opts.langs names
// the app's languages (default ja, en), opts.fallback the one for a
// browser that asks for none of them (default en).
export function createI18n(dicts, opts) {
  if (opts && opts.langs) appLangs = opts.langs.slice();
  fallback = (opts && opts.fallback) || 'en';
  const d = {};
  for (const l of appLangs) d[l] = Object.assign({}, COMMON[l] || {}, (dicts && dicts[l]) || {});
  const listeners = [];

  function t(key, params) {
    const l = getLang();
    let s = d[l][key];
    if (s == null && l !== 'ja') s = d.en[key]; // a missing zh/ko string: English before Japanese
    if (s == null) s = d.ja[key];
    if (s == null) return key;
    if (params) {
      s = s.replace(/\{(\w+)\}/g, (m, k) => (params[k] != null ? String(params[k]) : m));
    }
    return s;
  }

  function apply(root) {
    const r = root || document;
    document.documentElement.lang = getLang();
    for (const el of r.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n, params(el));
    for (const attr of ['placeholder', 'title', 'aria-label']) {
      const dataKey = 'i18n' + attr.replace(/(^|-)(\w)/g, (m, a, c) => c.toUpperCase());
      for (const el of r.querySelectorAll('[data-i18n-' + attr + ']')) el.setAttribute(attr, t(el.dataset[dataKey]));
    }
  }

  function params(el) {
    if (!el.dataset.i18nParams) return undefined;
    try {
      return JSON.parse(el.dataset.i18nParams);
    } catch (_) {
      return undefined;
    }
  }

  // put words key (with params) into el and marks it with the key, so
  // that apply() words it again in the next language.
  function put(el, key, params) {
    if (typeof el === 'string') el = document.querySelector(el);
    if (!el) return el;
    el.dataset.i18n = key;
    if (params) el.dataset.i18nParams = JSON.stringify(params);
    else delete el.dataset.i18nParams;
    el.textContent = t(key, params);
    return el;
  }

  // bindToggle makes the button switch the language and re-render.
  function bindToggle(button) {
    if (!button) return;
    button.addEventListener('click', () => {
      setLang(getLang() === 'en' ? 'ja' : 'en');
      apply();
      for (const f of listeners) f(getLang());
    });
  }

  // bindSelect fills a <select> with the app's languages (opts.names)
  // and switches on change.
  function bindSelect(select, names) {
    if (!select) return;
    for (const l of appLangs) {
      const o = document.createElement('option');
      o.value = l;
      o.lang = l;
      o.textContent = (names && names[l]) || l;
      select.append(o);
    }
    select.value = getLang();
    select.addEventListener('change', () => {
      setLang(select.value);
      apply();
      for (const f of listeners) f(getLang());
    });
  }

  return { t, put, apply, bindToggle, bindSelect, lang: getLang, onChange: (f) => listeners.push(f) };
}
