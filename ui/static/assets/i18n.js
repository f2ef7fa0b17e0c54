// i18n.js — Japanese by default, English on request, remembered in
// localStorage for every app of this origin.
//
// Static text in the HTML carries data-i18n="key" (and
// data-i18n-placeholder / data-i18n-title / data-i18n-aria-label for
// attributes); apply() fills them in the chosen language.

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

export function getLang() {
  return store.getItem(LANG_KEY) === 'en' ? 'en' : 'ja';
}

export function setLang(l) {
  store.setItem(LANG_KEY, l === 'en' ? 'en' : 'ja');
}

// createI18n merges the app's dictionaries over COMMON.
export function createI18n(dicts) {
  const d = {
    ja: Object.assign({}, COMMON.ja, (dicts && dicts.ja) || {}),
    en: Object.assign({}, COMMON.en, (dicts && dicts.en) || {}),
  };
  const listeners = [];

  function t(key, params) {
    const l = getLang();
    let s = d[l][key];
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
    for (const el of r.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
    for (const attr of ['placeholder', 'title', 'aria-label']) {
      const dataKey = 'i18n' + attr.replace(/(^|-)(\w)/g, (m, a, c) => c.toUpperCase());
      for (const el of r.querySelectorAll('[data-i18n-' + attr + ']')) el.setAttribute(attr, t(el.dataset[dataKey]));
    }
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

  return { t, apply, bindToggle, lang: getLang, onChange: (f) => listeners.push(f) };
}
