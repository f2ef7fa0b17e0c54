// setup.js — the setup wizard: pick boxes, name the shop, watch the
// boxes form the cluster, then the done page with the tablets' CA and a
// printable setup sheet. The passwords stay in this page's memory only,
// for the sheet: the page is plain HTTP on the store Wi-Fi, so it checks
// init's strength rule itself, hashes each password with bcrypt and sends
// the boxes only the hashes.

import '/assets/shell.js';
import { $, $$, h, clear, setError } from '/assets/dom.js';
import { createI18n } from '/assets/i18n.js';
import { withHealthStrings } from '/assets/health.js';
import { STRINGS } from './strings.js';
import { bcryptHash } from './bcrypt.js';
import { passwordProblem } from './password-rule.js';
import { fillZones, phoneZone } from '/assets/zones.js';

// The health strings: the setup sheet names the staff screen's own
// "Replace … with this box" button, in its words.
const T = createI18n(withHealthStrings(STRINGS));
const STEPS = ['found', 'claimed', 'started', 'joined', 'ready'];

const state = {
  step: 'boxes',
  boxes: [],
  picked: new Set(),
  looking: false,
  form: null, // what the owner typed, for the sheet
  progress: null,
  restore: false, // "Restore a store from a backup" was chosen
  backup: null, // the file the box took: { file, size, sha256 }
  sending: false,
};

async function api(method, path, body) {
  const opts = { method, headers: { 'Accept-Language': T.lang(), 'Content-Type': 'application/json' } };
  if (body !== undefined) opts.body = JSON.stringify(body);
  const res = await fetch(path, opts);
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  return { status: res.status, data };
}

let toastTimer = 0;
function toast(msg) {
  const el = $('#toast');
  el.textContent = msg;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, 3500);
}

function show(step) {
  state.step = step;
  for (const s of $$('main > .screen')) s.hidden = s.id !== 'step-' + step;
  const order = ['boxes', 'shop', 'progress', 'done'];
  for (const li of $$('.steps li')) {
    const i = order.indexOf(li.dataset.step);
    li.classList.toggle('is-current', li.dataset.step === step);
    li.classList.toggle('is-past', i < order.indexOf(step));
  }
  render();
}

// ---- step 1: boxes

async function lookForBoxes() {
  state.looking = true;
  render();
  try {
    const r = await api('GET', '/setup/api/boxes');
    if (r.status === 200) {
      state.boxes = r.data.boxes || [];
      const ids = new Set(state.boxes.map((b) => b.id));
      for (const id of [...state.picked]) if (!ids.has(id)) state.picked.delete(id);
      if (state.picked.size === 0) {
        // Three recommended: tick up to three boxes whose window is open.
        for (const b of state.boxes) if (b.windowOpen && state.picked.size < 3) state.picked.add(b.id);
      }
    } else if (r.status === 409) {
      memberBanner();
    }
  } catch {
    toast(T.t('common.network'));
  }
  state.looking = false;
  render();
}

function renderBoxes() {
  const list = $('#box-list');
  clear(list);
  for (const b of state.boxes) {
    const picked = state.picked.has(b.id);
    const check = h('input', { type: 'checkbox', id: 'pick-' + b.id, checked: picked, disabled: !b.windowOpen, dataset: { boxId: b.id },
      'aria-label': (b.hostname || b.shortCode) });
    check.addEventListener('change', () => {
      if (check.checked) state.picked.add(b.id); else state.picked.delete(b.id);
      render();
    });
    const sub = [b.model, b.serial ? T.t('setup.boxes.serial', { serial: b.serial }) : ''].filter(Boolean).join(' · ');
    const blink = h('button', { type: 'button', class: 'small', dataset: { identify: b.id }, text: T.t('setup.boxes.identify') });
    blink.addEventListener('click', () => identify(b.id));
    list.append(h('div', { class: ['box-card', picked && 'is-picked'], dataset: { box: b.id } },
      check,
      h('label', { for: 'pick-' + b.id },
        h('div', { class: 'name' }, b.hostname || '—', ' ', h('span', { class: 'code', title: T.t('setup.boxes.code') }, b.shortCode)),
        sub ? h('div', { class: 'sub', text: sub }) : null,
        b.self ? h('div', { class: 'tag', text: T.t('setup.boxes.thisBox') }) : null,
        b.windowOpen ? null : h('div', { class: 'error', text: T.t('setup.boxes.closed') })),
      blink));
  }
  const empty = $('#box-empty');
  empty.hidden = state.boxes.length > 0;
  empty.textContent = state.looking ? T.t('setup.boxes.empty') : T.t('setup.boxes.none');
  const n = state.picked.size;
  const warn = $('#box-warning');
  warn.hidden = !(n === 1 || n === 2);
  warn.textContent = n === 1 ? T.t('setup.boxes.one') : n === 2 ? T.t('setup.boxes.two') : '';
  $('#box-next').disabled = n === 0;
  $('#box-refresh').disabled = state.looking;
}

async function identify(id) {
  try {
    const r = await api('POST', '/setup/api/identify', { id });
    // The box itself answers whether it has a light it could blink,
    // this one or another (setup/device.go's Identify).
    if (r.status === 200) toast(r.data.blinking ? T.t('setup.boxes.blinking') : T.t('setup.boxes.noLed'));
    else toast((r.data && r.data.message) || T.t('common.error'));
  } catch {
    toast(T.t('common.network'));
  }
}

// ---- step 2: shop

function renderShop() {
  const needCode = state.boxes.some((b) => state.picked.has(b.id) && b.codeRequired);
  $('#code-field').hidden = !needCode;
  // The store's time zone: this phone's, which the owner rarely changes.
  const zone = $('#time-zone');
  if (!zone.options.length) fillZones(zone, phoneZone() || 'Asia/Tokyo');
  $('#backup-field').hidden = !state.restore;
  const b = $('#shop-create');
  if (b.getAttribute('aria-busy') !== 'true') {
    b.dataset.i18n = state.restore ? 'setup.restore.create' : 'setup.shop.create';
    b.textContent = T.t(b.dataset.i18n);
  }
  const st = $('#backup-state');
  const chosen = $('#backup-file').files[0];
  const ok = state.backup && chosen && state.backup.file === chosen;
  st.hidden = !(state.sending || ok);
  st.dataset.state = state.sending ? 'sending' : ok ? 'ok' : '';
  st.textContent = state.sending ? T.t('setup.restore.sending') : ok ? T.t('setup.restore.ok', { size: sizeOf(state.backup.size) }) : '';
}

function sizeOf(n) {
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MB';
  if (n >= 1 << 10) return Math.round(n / (1 << 10)) + ' KB';
  return n + ' B';
}

// sendBackup sends the chosen backup file to this box, which keeps it
// once it arrived whole and restores (POST /setup/api/restore); the
// same file is sent once. It answers the box's refusal, or null.
async function sendBackup() {
  const file = $('#backup-file').files[0];
  if (!file) return { message: [T, 'setup.restore.noFile'] };
  if (state.backup && state.backup.file === file) return null;
  state.sending = true;
  renderShop();
  try {
    const res = await fetch('/setup/api/restore', { method: 'POST', headers: { 'Accept-Language': T.lang(), 'Content-Type': 'application/octet-stream' }, body: file });
    let data = null;
    try { data = await res.json(); } catch { data = null; }
    if (res.status !== 200) return { message: (data && data.message) || [T, 'common.error'] };
    state.backup = { file, size: data.bytes, sha256: data.sha256 };
    return null;
  } finally {
    state.sending = false;
    renderShop();
  }
}

// The form's inputs by the field names the server's refusals give.
const FIELD_INPUTS = {
  shopName: '#shop-name', managerPasswordHash: '#manager-pw', kitchenPasswordHash: '#kitchen-pw',
  managerPassword: '#manager-pw', kitchenPassword: '#kitchen-pw', taxRatePercent: '#tax-rate', guestName: '#guest-name', timeZone: '#time-zone',
};

// message is the box's words, or [T, key] for the page's own (worded
// again when the language changes).
function fieldError(input, message) {
  setError('#shop-error', message);
  if (input) {
    $(input).setAttribute('aria-invalid', 'true');
    $(input).focus();
  }
}

// The create button says it is working while the passwords are hashed
// (a fraction of a second on a laptop, more on an old phone) and sent.
function working(on) {
  const b = $('#shop-create');
  b.disabled = on;
  b.setAttribute('aria-busy', on ? 'true' : 'false');
  b.dataset.i18n = on ? 'setup.shop.working' : state.restore ? 'setup.restore.create' : 'setup.shop.create';
  b.textContent = T.t(b.dataset.i18n);
}

// painted resolves once the browser has drawn the working state (or after
// 100 ms: a tab in the background draws nothing and must not stall).
const painted = () => new Promise((res) => {
  requestAnimationFrame(() => setTimeout(res, 0));
  setTimeout(res, 100);
});

async function create(ev) {
  ev.preventDefault();
  if ($('#shop-create').disabled) return; // already hashing and sending
  $('#shop-error').hidden = true;
  for (const el of $$('#shop-form [aria-invalid]')) el.removeAttribute('aria-invalid');
  const managerPassword = $('#manager-pw').value;
  const kitchenPassword = $('#kitchen-pw').value;
  const form = {
    boxes: state.boxes.filter((b) => state.picked.has(b.id)).map((b) => b.id),
    shopName: $('#shop-name').value.trim(),
    taxRatePercent: Number($('#tax-rate').value || 0),
    guestName: $('#guest-name').value.trim(),
    timeZone: $('#time-zone').value,
    setupCode: $('#setup-code').value.trim(),
  };
  if (!form.shopName) return fieldError('#shop-name', [T, 'setup.shop.needName']);
  // init's strength rule, here: the boxes will only ever see hashes.
  if (passwordProblem(managerPassword)) return fieldError('#manager-pw', [T, 'setup.shop.weak']);
  if (passwordProblem(kitchenPassword)) return fieldError('#kitchen-pw', [T, 'setup.shop.weak']);
  if (kitchenPassword === managerPassword) return fieldError('#kitchen-pw', [T, 'setup.shop.same']);
  if (state.restore && !$('#backup-file').files[0]) return fieldError('#backup-file', [T, 'setup.restore.noFile']);
  working(true);
  try {
    await painted();
    if (state.restore) {
      const refused = await sendBackup();
      if (refused) return fieldError('#backup-file', refused.message);
      form.restore = true;
    }
    form.managerPasswordHash = await bcryptHash(managerPassword);
    form.kitchenPasswordHash = await bcryptHash(kitchenPassword);
    const r = await api('POST', '/setup/api/create', form);
    if (r.status === 202) {
      state.form = { ...form, managerPassword, kitchenPassword }; // for the sheet, never sent
      state.progress = r.data;
      show('progress');
      poll();
      return;
    }
    fieldError(FIELD_INPUTS[r.data && r.data.field], (r.data && r.data.message) || [T, 'common.error']);
  } catch {
    fieldError(null, [T, 'common.network']);
  } finally {
    working(false);
  }
}

// ---- step 3: progress

// fetchProgress asks the box where the wizard is (its messages in the
// page's language) and keeps it; null when the box gives no progress.
async function fetchProgress() {
  const r = await api('GET', '/setup/api/progress');
  if (r.status !== 200 || !r.data) return null;
  state.progress = r.data;
  return r.data;
}

async function poll() {
  for (;;) {
    try {
      // The box showing this page becomes a store box midway: a moment
      // without an answer is expected.
      const p = await fetchProgress();
      if (p) {
        render();
        if (p.state === 'done') {
          await walked(); // every step shown before the done page
          show('done');
          return;
        }
        if (p.state === 'failed') return;
      }
    } catch { /* keep asking */ }
    await new Promise((res) => setTimeout(res, 700));
  }
}

// The boxes pass their steps faster than the page asks (a small store
// forms in a second or two): the page shows each box's steps one after
// the other, STEP_MS apart, up to the step the box reached, so the owner
// sees every one of them.
const STEP_MS = 250;
const shownStep = new Map(); // box id → index in STEPS the page shows
let walker = 0;
let walkDone = [];

// stepShown is the step the page shows for b, and whether it is behind
// the box's own.
function stepShown(b) {
  const want = Math.max(0, STEPS.indexOf(b.step));
  if (!shownStep.has(b.id)) shownStep.set(b.id, 0);
  const at = Math.min(shownStep.get(b.id), want);
  return { at, behind: at < want };
}

function walkSteps() {
  if (walker) return;
  const boxes = (state.progress && state.progress.boxes) || [];
  if (!boxes.some((b) => stepShown(b).behind)) {
    for (const f of walkDone.splice(0)) f();
    return;
  }
  walker = setTimeout(() => {
    walker = 0;
    for (const b of (state.progress && state.progress.boxes) || []) {
      const { at, behind } = stepShown(b);
      if (behind) shownStep.set(b.id, at + 1);
    }
    if (state.step === 'progress') renderProgress();
    else walkSteps();
  }, STEP_MS);
}

// walked resolves once every box shows the step it reached.
const walked = () => new Promise((res) => {
  walkDone.push(res);
  walkSteps();
});

function renderProgress() {
  const p = state.progress || { boxes: [] };
  const list = $('#progress-list');
  clear(list);
  for (const b of p.boxes || []) {
    const { at, behind } = stepShown(b);
    const step = STEPS[at];
    list.append(h('li', { class: ['progress-item', step === 'ready' && 'is-ready', b.error && !behind && 'is-failed'], dataset: { box: b.id, step } },
      h('div', { class: 'head' },
        h('span', {}, b.hostname || '—', ' ', h('span', { class: 'code' }, b.shortCode)),
        h('span', { class: 'word', text: T.t('setup.step.' + step) })),
      h('div', { class: 'bar', 'aria-hidden': 'true' }, STEPS.map((s, i) => h('span', { class: i <= at ? 'is-on' : '' }))),
      b.error && !behind ? h('div', { class: 'err', text: b.message || b.error }) : null));
  }
  walkSteps();
  // A failed create says so in its title, not "creating… keep this page open".
  const failed = p.state === 'failed';
  T.put('#progress-title', failed ? 'setup.progress.failedTitle' : p.restore ? 'setup.restore.progress' : 'setup.progress.title');
  T.put('#progress-help', failed ? 'setup.progress.failedHelp' : 'setup.progress.help');
  const e = $('#progress-error');
  e.hidden = !failed;
  e.textContent = failed ? T.t('setup.progress.failed') + (p.message ? ' ' + p.message : '') : '';
  $('#progress-retry').hidden = !failed;
}

// ---- step 4: done

function renderDone() {
  const d = (state.progress && state.progress.done) || null;
  if (!d) return;
  $('#done-restored').hidden = !state.progress.restore;
  $('#ca-qr').src = '/ca/qr.png';
  $('#ca-ios').href = '/ca.mobileconfig';
  $('#ca-android').href = '/ca.crt';
  $('#ca-qr').alt = T.t('setup.done.tablets');
  // A box whose push failed: the shop formed without it (a majority did).
  const m = $('#done-missing');
  clear(m);
  const missing = (state.progress.boxes || []).filter((b) => b.error);
  m.hidden = missing.length === 0;
  for (const b of missing) {
    m.append(h('div', { class: 'card missing' },
      h('h3', { text: T.t('setup.done.missingTitle', { box: ((b.hostname || '') + ' ' + b.shortCode).trim() }) }),
      h('p', { text: T.t('setup.done.missingWhy', { why: b.message || b.error }) }),
      h('p', { text: T.t('setup.done.missingNext', { node: b.nodeId || '' }) })));
  }
  $('#staff-link').href = d.staffUrl;
  $('#kitchen-link').href = d.kitchenUrl;
  $('#guest-url').textContent = d.guestUrl;
  const f = state.form;
  $('#sheet-shop').textContent = d.shopName;
  $('#sheet-manager').textContent = f ? f.managerPassword : T.t('setup.sheet.lost');
  $('#sheet-kitchen').textContent = f ? f.kitchenPassword : T.t('setup.sheet.lost');
  $('#sheet-staff').textContent = d.staffUrl;
  $('#sheet-guest').textContent = d.guestUrl;
  const boxes = $('#sheet-boxes');
  clear(boxes);
  // The staff address above is the store's name, which a new router does
  // not change; each box's own address is listed as a fallback for a
  // tablet that cannot open .local names (Android before 12), valid
  // until the router gives the box another.
  for (const b of d.boxes || []) boxes.append(h('div', { class: 'mono', text: b.nodeId + ' — ' + (b.hostname || '') + ' — ' + b.staffUrl }));
  // The staff screen's own button, with a letter of this shop's boxes.
  const letters = [...new Set([...(d.boxes || []), ...missing].map((b) => b.nodeId).filter(Boolean))].sort();
  const id = letters[letters.length - 1] || 'a';
  T.put('#sheet-replace', 'setup.sheet.r2', { letters: letters.join(', '), replace: T.t('health.found.replace', { id }) });
}

function memberBanner() {
  const b = $('#member-banner');
  b.textContent = T.t('setup.member');
  b.hidden = false;
}

function render() {
  if (state.step === 'boxes') renderBoxes();
  if (state.step === 'shop') renderShop();
  if (state.step === 'progress') renderProgress();
  if (state.step === 'done') renderDone();
}

$('#box-refresh').addEventListener('click', lookForBoxes);
for (const r of $$('#mode-choice input')) {
  r.addEventListener('change', () => {
    state.restore = $('#mode-restore').checked;
    render();
  });
}
$('#backup-file').addEventListener('change', () => renderShop());
$('#box-next').addEventListener('click', () => show('shop'));
$('#shop-back').addEventListener('click', () => show('boxes'));
$('#shop-form').addEventListener('submit', create);
// An error goes once the owner changes the form (create checks again).
$('#shop-form').addEventListener('input', () => {
  for (const el of $$('#shop-form [aria-invalid]')) el.removeAttribute('aria-invalid');
  $('#shop-error').hidden = true;
});
$('#show-pw').addEventListener('change', () => {
  for (const id of ['#manager-pw', '#kitchen-pw']) $(id).type = $('#show-pw').checked ? 'text' : 'password';
});
$('#print-sheet').addEventListener('click', () => window.print());
// Start over: back to the boxes, the form as typed. The box takes a new
// create after a failure; a reload would only show the failure again.
$('#progress-retry').addEventListener('click', () => {
  state.progress = null;
  shownStep.clear();
  show('boxes');
  lookForBoxes();
});

T.apply();
T.bindToggle($('#lang-toggle'));
T.onChange(async () => {
  T.apply();
  render();
  // The progress's messages come in the language asked for: ask again.
  if (state.progress && (state.step === 'progress' || state.step === 'done')) {
    try {
      if (await fetchProgress()) render();
    } catch { /* the next poll words it */ }
  }
});

// A page reopened midway picks up where the wizard is.
(async () => {
  try {
    const p = await fetchProgress();
    if (p) {
      // A failure is shown to the page that watched it; a page opened
      // afterwards starts over (the box takes a new create).
      if (p.state === 'working') { show('progress'); poll(); return; }
      if (p.state === 'done') { show('done'); return; }
      if (p.state === 'member') { memberBanner(); show('boxes'); return; }
    }
  } catch { /* setup mode: go on */ }
  show('boxes');
  lookForBoxes();
})();
