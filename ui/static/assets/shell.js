// shell.js — the markup the three apps share, drawn here once instead of
// copied into each index.html: the top bar's language toggle (and the
// logout button where the <header> says data-logout), the staff login form
// inside an empty <section id="login">, the confirm dialog and the toast.
// Each app imports this module first, so these elements exist, with the
// same ids as before, before any of its code looks them up.

import { h } from './dom.js';
import { createI18n } from './i18n.js';

const T = createI18n();

// text is the attributes of an element whose text is the key's (the app's
// T.apply() fills it again on a language switch).
function text(key, attrs) {
  return Object.assign({ dataset: { i18n: key }, text: T.t(key) }, attrs);
}

const bar = document.querySelector('header.topbar');
if (bar) {
  bar.append(h('button', text('lang.switch', { id: 'lang-toggle', type: 'button' })));
  if (bar.hasAttribute('data-logout')) {
    bar.append(h('button', text('common.logout', { id: 'logout', type: 'button', hidden: true })));
  }
}

const login = document.querySelector('section#login');
if (login) {
  login.append(
    h('form', { id: 'login-form', class: 'card login-box' },
      h('h2', text('login.title')),
      h('div', { class: 'field' },
        h('label', text('login.password', { for: 'login-password' })),
        h('input', { id: 'login-password', type: 'password', autocomplete: 'current-password', required: true })),
      h('p', { id: 'login-error', class: 'error', role: 'alert', hidden: true }),
      h('button', text('login.submit', { id: 'login-submit', type: 'submit', class: 'primary big' }))));
}

document.body.append(
  h('div', { id: 'confirm-dialog', class: 'modal', hidden: true },
    h('div', { class: 'modal-box', role: 'alertdialog', 'aria-modal': 'true', 'aria-labelledby': 'confirm-message' },
      h('p', { id: 'confirm-message' }),
      h('div', { class: 'row' },
        h('button', { id: 'confirm-cancel', type: 'button', text: 'Cancel' }),
        h('button', { id: 'confirm-ok', type: 'button', class: 'primary', text: 'OK' })))),
  h('div', { id: 'toast', class: 'toast', role: 'status', hidden: true }));
