// calls.js — the open guest calls (staff / bill / water) as a strip of
// cards with a "done" button, shared by the staff console and the kitchen
// screen. The page tells it when to reload (a call.* stream event); a slow
// poll covers a stream that is down. A call not seen before rings.

import { h, clear, show, toast, timeOf } from '/assets/dom.js';

export const CALL_STRINGS = {
  ja: {
    'calls.title': '呼び出し',
    'calls.kind.staff': 'スタッフ呼び出し',
    'calls.kind.bill': 'お会計',
    'calls.kind.water': 'お水',
    'calls.table': 'テーブル {table}',
    'calls.done': '対応済み',
    'calls.new': 'テーブル {table}：{kind}',
  },
  en: {
    'calls.title': 'Calls',
    'calls.kind.staff': 'Staff call',
    'calls.kind.bill': 'Bill please',
    'calls.kind.water': 'Water',
    'calls.table': 'Table {table}',
    'calls.done': 'Done',
    'calls.new': 'Table {table}: {kind}',
  },
};

// withCallStrings adds the panel's words to a page's dictionaries.
export function withCallStrings(dicts) {
  return {
    ja: Object.assign({}, CALL_STRINGS.ja, dicts.ja),
    en: Object.assign({}, CALL_STRINGS.en, dicts.en),
  };
}

const POLL_MS = 15000;

// createCallsPanel: el is the container, api a staff API (get/post), t the
// page's translator, ring plays the page's sound.
export function createCallsPanel({ el, api, t, ring }) {
  let calls = [];
  let seen = null; // call ids already rung for (null: first load rings nothing)
  let timer = null;
  const busy = new Set();

  async function refresh() {
    let d;
    try {
      d = await api.get('/api/staff/calls?status=OPEN');
    } catch (_) {
      return; // the page shows connection trouble itself
    }
    calls = (d && d.calls) || [];
    const fresh = seen ? calls.filter((c) => !seen.has(c.callId)) : [];
    seen = new Set(calls.map((c) => c.callId));
    render();
    if (fresh.length) {
      ring();
      const c = fresh[fresh.length - 1];
      toast(t('calls.new', { table: c.tableId, kind: t('calls.kind.' + c.kind) }), 'ok');
    }
  }

  async function done(c) {
    busy.add(c.callId);
    render();
    try {
      await api.post('/api/staff/calls/' + encodeURIComponent(c.callId) + '/done');
      calls = calls.filter((x) => x.callId !== c.callId);
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    } finally {
      busy.delete(c.callId);
      render();
    }
  }

  function render() {
    clear(el);
    show(el, calls.length > 0);
    if (!calls.length) return;
    el.append(h('h3', { class: 'calls-title', text: t('calls.title') + ' (' + calls.length + ')' }));
    const list = h('div', { class: 'calls-list' });
    for (const c of calls) {
      list.append(
        h(
          'div',
          { class: ['call-card', 'call-' + c.kind], dataset: { callId: c.callId, kind: c.kind }, role: 'status' },
          h('strong', { class: 'call-table', text: t('calls.table', { table: c.tableId }) }),
          h('span', { class: 'call-kind', text: t('calls.kind.' + c.kind) }),
          h('span', { class: 'call-age muted', text: timeOf(c.createdAt) }),
          h('button', { type: 'button', class: 'primary call-done', disabled: busy.has(c.callId), onclick: () => done(c), text: t('calls.done') }),
        ),
      );
    }
    el.append(list);
  }

  function start() {
    refresh();
    clearInterval(timer);
    timer = setInterval(refresh, POLL_MS);
  }

  function stop() {
    clearInterval(timer);
    timer = null;
  }

  return { refresh, render, start, stop };
}

// followCalls keeps a panel live from the kitchen stream (call.created /
// call.done), reopening it when it drops; url names the stream with the
// page's token. Returns a stop function.
export function followCalls(panel, url) {
  let es = null;
  let retry = null;
  function open() {
    es = new EventSource(url());
    for (const type of ['call.created', 'call.done']) es.addEventListener(type, () => panel.refresh());
    es.onerror = () => {
      es.close();
      clearTimeout(retry);
      retry = setTimeout(open, 3000); // another node may answer by then
    };
  }
  open();
  return () => {
    clearTimeout(retry);
    if (es) es.close();
  };
}

let audio = null;

// chime: two short notes. Browsers keep audio off until the page was
// touched, so the context is made (and resumed) on the first tap.
export function chime() {
  if (!audio || audio.state !== 'running') return;
  const t0 = audio.currentTime;
  for (const [freq, at] of [
    [1046.5, 0],
    [784, 0.25],
  ]) {
    const osc = audio.createOscillator();
    const gain = audio.createGain();
    osc.frequency.value = freq;
    gain.gain.setValueAtTime(0.0001, t0 + at);
    gain.gain.exponentialRampToValueAtTime(0.4, t0 + at + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, t0 + at + 0.22);
    osc.connect(gain);
    gain.connect(audio.destination);
    osc.start(t0 + at);
    osc.stop(t0 + at + 0.25);
  }
}

document.addEventListener(
  'pointerdown',
  () => {
    const AC = globalThis.AudioContext || globalThis.webkitAudioContext;
    if (!AC) return;
    if (!audio) audio = new AC();
    audio.resume().catch(() => {});
  },
  { capture: true },
);
