// dom.js — small DOM helpers shared by the apps.
//
// Everything the server sends (menu names, table ids, messages) reaches the
// page through textContent, never as HTML markup. Visibility goes through the
// hidden attribute and styling through classes: the server's CSP allows
// no inline styles or scripts.

export function $(sel, root) {
  return (root || document).querySelector(sel);
}

export function $$(sel, root) {
  return Array.from((root || document).querySelectorAll(sel));
}

// h('button', {class: 'primary', dataset: {menuId: 'ramen'}, onclick: f}, 'text', child…);
// {words: [T, key, params]} instead of {text: …} keeps the key on the
// element, so that T.apply() words it again in the next language.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'words') v[0].put(el, v[1], v[2]); // [T, key, params]: worded again on a language switch
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c == null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function show(el, on) {
  if (typeof el === 'string') el = $(el);
  if (el) el.hidden = !on;
}

// setError puts msg into an error element and shows it; an empty msg hides it.
// msg is words already made (the server's message), or [T, key, params]:
// words of the page's own, which a language switch words again (T.put).
export function setError(el, msg) {
  if (typeof el === 'string') el = $(el);
  if (!el) return;
  delete el.dataset.i18n;
  delete el.dataset.i18nParams;
  if (Array.isArray(msg)) {
    const [T, key, params] = msg;
    T.put(el, key, params);
    el.hidden = false;
    return;
  }
  el.textContent = msg || '';
  el.hidden = !msg;
}

// fieldError marks an input as wrong and says why right below it (an
// element .field-error after the input, made on first use); an empty msg
// clears both. msg as for setError.
export function fieldError(input, msg) {
  if (typeof input === 'string') input = $(input);
  if (!input) return;
  let note = input.nextElementSibling;
  if (!note || !note.classList.contains('field-error')) {
    if (!msg) return;
    note = h('p', { class: 'field-error error', role: 'alert' });
    input.after(note);
  }
  setError(note, msg);
  if (msg) input.setAttribute('aria-invalid', 'true');
  else input.removeAttribute('aria-invalid');
}

export function yen(n) {
  const v = Number(n);
  if (!Number.isFinite(v)) return '—';
  return '¥' + v.toLocaleString('ja-JP');
}

export function pad2(n) {
  return String(n).padStart(2, '0');
}

// mmss formats a duration in ms as m:ss (h:mm:ss past an hour).
export function mmss(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = s % 60;
  return hh > 0 ? hh + ':' + pad2(mm) + ':' + pad2(ss) : mm + ':' + pad2(ss);
}

// The store's time zone (timeZone of the staff status, an IANA name):
// the screens show times in it, whatever zone the tablet runs in. Unset
// (or a name this browser does not know): the tablet's own.
let storeZone = '';
let zoneFormat = null;

// fieldsFormat reads an instant's fields in zone z ('' : the tablet's);
// it throws for a zone this browser does not know.
function fieldsFormat(z) {
  return new Intl.DateTimeFormat('en-US', {
    timeZone: z || undefined, hourCycle: 'h23',
    year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
  });
}

// setStoreZone sets the zone times are shown in; true when it changed.
export function setStoreZone(zone) {
  const z = typeof zone === 'string' ? zone : '';
  if (z === storeZone && zoneFormat) return false;
  try {
    zoneFormat = fieldsFormat(z);
  } catch (_) {
    return false; // a zone this browser does not know: keep the one we have
  }
  storeZone = z;
  return true;
}

// storeZoneName is the zone set by setStoreZone ('' : the tablet's).
export function storeZoneName() {
  return storeZone;
}

// zoned is instant t (a Date or ms) on the store's clock:
// {year, month (1–12), day, hour (0–23), minute, second}.
export function zoned(t) {
  if (!zoneFormat) zoneFormat = fieldsFormat('');
  const out = {};
  for (const p of zoneFormat.formatToParts(t instanceof Date ? t : new Date(t))) {
    if (p.type !== 'literal') out[p.type] = Number(p.value);
  }
  if (out.hour === 24) out.hour = 0;
  return out;
}

// dateOf is "YYYY-MM-DD" of instant t on the store's clock.
export function dateOf(t) {
  const z = zoned(t);
  return z.year + '-' + pad2(z.month) + '-' + pad2(z.day);
}

export function timeOf(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const z = zoned(d);
  return pad2(z.hour) + ':' + pad2(z.minute);
}

export function dateTimeOf(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso || '');
  const z = zoned(d);
  return dateOf(d) + ' ' + pad2(z.hour) + ':' + pad2(z.minute) + ':' + pad2(z.second);
}

let toastTimer = null;

// toast shows a short message in #toast.
export function toast(message, kind) {
  const el = $('#toast');
  if (!el) return;
  el.textContent = message;
  el.className = 'toast' + (kind ? ' toast-' + kind : '');
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    el.hidden = true;
  }, 4000);
}

// confirmDialog shows #confirm-dialog and resolves true (#confirm-ok) or
// false (#confirm-cancel, Escape). A page-made dialog rather than
// window.confirm, so browser tests can click it like any other element.
export function confirmDialog(message, opts) {
  const o = opts || {};
  const dlg = $('#confirm-dialog');
  const ok = $('#confirm-ok');
  const cancel = $('#confirm-cancel');
  $('#confirm-message').textContent = message;
  ok.textContent = o.ok || 'OK';
  cancel.textContent = o.cancel || 'Cancel';
  ok.className = o.danger ? 'danger' : 'primary';
  dlg.dataset.kind = o.kind || '';
  dlg.hidden = false;
  ok.focus();
  return new Promise((resolve) => {
    function done(v) {
      dlg.hidden = true;
      ok.removeEventListener('click', yes);
      cancel.removeEventListener('click', no);
      document.removeEventListener('keydown', key);
      resolve(v);
    }
    function yes() {
      done(true);
    }
    function no() {
      done(false);
    }
    function key(e) {
      if (e.key === 'Escape') done(false);
    }
    ok.addEventListener('click', yes);
    cancel.addEventListener('click', no);
    document.addEventListener('keydown', key);
  });
}
