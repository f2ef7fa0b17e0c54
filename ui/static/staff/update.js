// update.js — "Updating the store" on the Boxes page (manager): the
// version each box runs, a newer version offered (from the release index
// on a tap, or a file picked on this tablet), one tap to update the store
// one box at a time, and each box's progress in words. The calls go to the
// box this page came from: the offered bundle is kept on that box.

import { $, h, clear, toast, confirmDialog } from '/assets/dom.js';

export const UPDATE_STRINGS = {
  ja: {
    'update.title': 'ストアの更新',
    'update.intro': '新しいバージョンは端末を1台ずつ入れ替えます。そのあいだも注文は止まりません。',
    'update.box': '端末 {id}',
    'update.version': 'バージョン {v}',
    'update.noAnswer': '応答がありません',
    'update.state.receiving': '更新ファイルを受け取っています…',
    'update.state.installing': '更新を書き込んでいます…',
    'update.state.rebooting': '新しいバージョンで起動しています…',
    'update.state.trial': '新しいバージョンを確かめています…',
    'update.state.rolledBack': '新しいバージョンが正しく動かなかったため、自動で {v} に戻りました。',
    'update.state.failed': '更新できませんでした。{v} のままです。',
    'update.look': '新しいバージョンをさがす',
    'update.looking': 'さがしています…',
    'update.pick': '更新ファイルを選ぶ',
    'update.pickHelp': 'インターネットのないお店では、家でダウンロードした更新ファイル（.raucb）や USB メモリーのファイルをこのタブレットで選べます。',
    'update.sending': '更新ファイルを送っています… {p}%',
    'update.checking': '更新ファイルを確かめています…',
    'update.downloading': 'バージョン {v} をダウンロードしています…',
    'update.offered': 'バージョン {v} を入れられます（{from}）。',
    'update.from.index': 'インターネットから',
    'update.from.file': '選んだファイルから',
    'update.downgrade': 'これは今より古いバージョンです。',
    'update.confirmDowngrade': '古いバージョンに戻すことを確認しました',
    'update.start': 'ストアを更新する',
    'update.startConfirm': '3台の端末を1台ずつバージョン {v} に更新しますか？それぞれの端末は1回再起動します。そのあいだも注文は続けられます。',
    'update.current': 'すべての端末が最新です。',
    'update.offerFailed': '更新を用意できませんでした：{message}',
    'update.step.waiting': '順番待ち',
    'update.step.installing': '更新を書き込んでいます…',
    'update.step.restarting': '再起動して、お店に戻るのを待っています…',
    'update.step.handover': '役割をほかの端末に引き継いでいます…',
    'update.step.done': '完了',
    'update.step.failed': '止まりました',
    'update.rollout.running': 'バージョン {v} に更新しています。注文はそのまま続けられます。',
    'update.rollout.done': 'すべての端末がバージョン {v} になりました。',
    'update.rollout.stopped': '{message}',
    'update.rollout.mixed': '端末ごとのバージョンは上のとおりです。',
  },
  en: {
    'update.title': 'Updating the store',
    'update.intro': 'A new version replaces the boxes one at a time. Orders go on meanwhile.',
    'update.box': 'Box {id}',
    'update.version': 'version {v}',
    'update.noAnswer': 'not answering',
    'update.state.receiving': 'receiving the update file…',
    'update.state.installing': 'writing the update…',
    'update.state.rebooting': 'starting on the new version…',
    'update.state.trial': 'checking the new version…',
    'update.state.rolledBack': 'the new version did not work properly, so it went back to {v} by itself.',
    'update.state.failed': 'could not be updated; it still runs {v}.',
    'update.look': 'Look for a new version',
    'update.looking': 'Looking…',
    'update.pick': 'Choose an update file',
    'update.pickHelp': 'A shop without internet can choose an update file (.raucb) downloaded at home or copied from a USB stick on this tablet.',
    'update.sending': 'Sending the update file… {p}%',
    'update.checking': 'Checking the update file…',
    'update.downloading': 'Downloading version {v}…',
    'update.offered': 'Version {v} can be installed ({from}).',
    'update.from.index': 'from the internet',
    'update.from.file': 'from the chosen file',
    'update.downgrade': 'This is an older version than the boxes run.',
    'update.confirmDowngrade': 'Yes, go back to this older version',
    'update.start': 'Update the store',
    'update.startConfirm': 'Update the three boxes to version {v}, one at a time? Each box restarts once; orders go on meanwhile.',
    'update.current': 'Every box runs the newest version.',
    'update.offerFailed': 'The update could not be prepared: {message}',
    'update.step.waiting': 'waiting for its turn',
    'update.step.installing': 'writing the update…',
    'update.step.restarting': 'restarting; waiting for it to be back in the store…',
    'update.step.handover': 'handing its role over to another box…',
    'update.step.done': 'done',
    'update.step.failed': 'stopped',
    'update.rollout.running': 'Updating to version {v}. Orders go on as usual.',
    'update.rollout.done': 'Every box runs version {v}.',
    'update.rollout.stopped': '{message}',
    'update.rollout.mixed': 'Each box’s version is shown above.',
  },
};

const POLL_MS = 2000;

export function createUpdateCard({ api, T }) {
  let view = null; // the last GET /api/staff/update
  let timer = null;
  let looking = false;
  let sending = null; // {p} while a file is sent, 'checking' once sent
  let note = null; // {cls, text} the last refusal, in words
  let downgradeOK = false;
  // One file input for the card's life: a redraw (every poll) moves it
  // instead of replacing it, so a pick under way is not lost.
  let input = null;
  function fileInput() {
    if (!input) input = h('input', { id: 'update-file', class: 'visually-hidden', type: 'file', accept: '.raucb', onchange: (ev) => ev.target.files[0] && send(ev.target.files[0]) });
    input.disabled = !!sending;
    return input;
  }

  // The box this page came from holds the offered bundle: every call goes
  // there, not to whichever box the API pool prefers.
  async function call(method, path, body) {
    const res = await fetch(location.origin + path, {
      method,
      headers: {
        Accept: 'application/json',
        'Accept-Language': T.lang() === 'en' ? 'en' : 'ja',
        Authorization: 'Bearer ' + api.token(),
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      cache: 'no-store',
      // a box switched off answers nothing; the index is read within 20 s
      signal: AbortSignal.timeout(method === 'GET' ? 8000 : 30000),
    });
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      const e = new Error((data && data.message) || res.status + ' ' + res.statusText);
      e.status = res.status;
      e.reasonCode = data && data.reasonCode;
      throw e;
    }
    return data;
  }

  // refresh redraws only what changed: a button is not replaced under a
  // finger between two polls.
  let drawn = '';
  let polling = false;
  async function refresh() {
    if (polling) return;
    polling = true;
    try {
      await poll();
    } finally {
      polling = false;
    }
  }

  async function poll() {
    try {
      view = await call('GET', '/api/staff/update');
    } catch (e) {
      if (e.status === 404) view = null; // a box without updates (the demo)
      else if (!e.status) {
        // This page's box is restarting (its turn in the rollout): any
        // other box shows the same rollout.
        try {
          view = await api.get('/api/staff/update', { timeoutMs: 5000 });
        } catch (_) {
          // the next poll tells
        }
      }
    }
    const now = JSON.stringify([view, note, sending, looking, T.lang()]);
    if (now === drawn) return;
    render();
  }

  async function look() {
    looking = true;
    note = null;
    render();
    try {
      await call('POST', '/api/staff/update/check', {});
    } catch (e) {
      note = { cls: e.reasonCode === 'UPDATE_ALREADY_CURRENT' ? 'health-ok' : 'health-bad', text: e.message, code: e.reasonCode };
    } finally {
      looking = false;
    }
    refresh();
  }

  // The file goes up as it is (streamed to the box's card), with XHR for
  // the progress of a large file over Wi-Fi.
  function send(file) {
    note = null;
    sending = { p: 0 };
    render();
    const xhr = new XMLHttpRequest();
    xhr.open('POST', location.origin + '/api/staff/update/bundle');
    xhr.setRequestHeader('Authorization', 'Bearer ' + api.token());
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.setRequestHeader('Accept-Language', T.lang() === 'en' ? 'en' : 'ja');
    xhr.upload.onprogress = (ev) => {
      if (ev.lengthComputable) sending = { p: Math.floor((100 * ev.loaded) / ev.total) };
      if (ev.loaded === ev.total) sending = 'checking';
      render();
    };
    xhr.onload = xhr.onerror = () => {
      sending = null;
      let data = null;
      try {
        data = JSON.parse(xhr.responseText);
      } catch (_) {}
      if (xhr.status !== 200) note = { cls: 'health-bad', text: (data && data.message) || T.t('update.offerFailed', { message: String(xhr.status || '') }), code: data && data.reasonCode };
      if (input) input.value = '';
      refresh();
    };
    xhr.send(file);
  }

  async function start() {
    const o = view.offered;
    const ok = await confirmDialog(T.t('update.startConfirm', { v: o.version }), { ok: T.t('update.start'), cancel: T.t('common.cancel') });
    if (!ok) return;
    note = null;
    try {
      await call('POST', '/api/staff/update/start', { confirmDowngrade: !!(o.downgrade && downgradeOK) });
    } catch (e) {
      note = { cls: 'health-bad', text: e.message, code: e.reasonCode };
    }
    refresh();
  }

  function boxLine(b, step) {
    let words = b.reachable ? T.t('update.version', { v: b.version }) : T.t('update.noAnswer');
    let cls = 'muted';
    const stateKey = { receiving: 1, installing: 1, rebooting: 1, trial: 1 };
    if (b.reachable && stateKey[b.state]) {
      words += ' — ' + T.t('update.state.' + b.state);
      cls = 'health-warn';
    } else if (b.reachable && (b.state === 'rolledBack' || b.state === 'failed')) {
      words += ' — ' + T.t('update.state.' + b.state, { v: b.version });
      cls = 'health-bad';
    }
    return h(
      'li',
      { dataset: { updateBox: b.nodeId, state: b.state || '', step: step ? step.step : '' } },
      // A box the rollout is restarting is expected to be silent for a while.
      h('span', { class: ['dot', cls === 'health-warn' || (!b.reachable && step && (step.step === 'installing' || step.step === 'restarting')) ? 'warn' : !b.reachable || cls === 'health-bad' ? 'bad' : 'ok'] }),
      h('strong', { text: T.t('update.box', { id: b.nodeId }) }),
      ' ',
      h('span', { class: cls === 'muted' ? null : cls, text: words }),
      step && step.step !== 'waiting' && (cls === 'muted' || step.step === 'failed') && !(step.step === 'done' && b.state === 'committed' && view.rollout.state !== 'running')
        ? h('div', { class: ['small-text', step.step === 'failed' ? 'health-bad' : step.step === 'done' ? 'health-ok' : 'health-warn'] }, T.t('update.step.' + step.step))
        : step && step.step === 'waiting' && view.rollout.state === 'running'
          ? h('div', { class: 'small-text muted' }, T.t('update.step.waiting'))
          : null,
    );
  }

  function render() {
    const card = $('#update-card');
    if (!card) return;
    drawn = JSON.stringify([view, note, sending, looking, T.lang()]);
    card.hidden = !view;
    if (!view) return;
    const r = view.rollout;
    const running = r && r.state === 'running';
    const steps = new Map(((r && r.boxes) || []).map((s) => [s.nodeId, s]));
    const o = view.offered || { state: 'none' };
    const parts = [
      h('h2', { text: T.t('update.title') }),
      h('p', { class: 'muted', text: T.t('update.intro') }),
      h('ul', { class: 'health-boxes', id: 'update-boxes' }, view.boxes.map((b) => boxLine(b, r ? steps.get(b.nodeId) : null))),
      r
        ? h(
            'div',
            { id: 'update-rollout', dataset: { state: r.state } },
            h('p', {
              class: r.state === 'stopped' ? 'health-bad' : r.state === 'done' ? 'health-ok' : 'health-warn',
              text: T.t('update.rollout.' + r.state, { v: r.version, message: r.message || r.error || '' }),
            }),
            r.state === 'stopped' ? h('p', { text: T.t('update.rollout.mixed') }) : null,
            r.detail ? h('details', null, h('summary', { text: T.t('health.details') }), h('p', { class: 'mono small-text', text: r.detail })) : null,
          )
        : null,
      offerPart(o, running),
      note ? h('p', { id: 'update-note', class: note.cls, dataset: { code: note.code || '' }, text: note.text }) : null,
      running
        ? null
        : h(
            'div',
            { class: 'row found-actions' },
            view.releaseIndex ? h('button', { type: 'button', id: 'update-look', disabled: looking || !!sending, onclick: look, text: T.t(looking ? 'update.looking' : 'update.look') }) : null,
            h('label', { class: 'button', for: 'update-file' }, T.t('update.pick')),
            fileInput(),
          ),
      running ? null : h('p', { class: 'muted small-text', text: T.t('update.pickHelp') }),
    ];
    clear(card).append(...parts.filter(Boolean));
  }

  function offerPart(o, running) {
    if (sending) return h('p', { id: 'update-offer', class: 'health-warn', dataset: { state: 'sending' }, text: sending === 'checking' ? T.t('update.checking') : T.t('update.sending', { p: sending.p }) });
    if (running) return null;
    if (o.state === 'downloading') return h('p', { id: 'update-offer', class: 'health-warn', dataset: { state: o.state }, text: T.t('update.downloading', { v: o.version }) });
    if (o.state === 'failed') return h('p', { id: 'update-offer', class: 'health-bad', dataset: { state: o.state }, text: T.t('update.offerFailed', { message: o.message || o.error || '' }) });
    if (o.state !== 'ready' || view.boxes.every((b) => b.version === o.version)) return null;
    return h(
      'div',
      { id: 'update-offer', class: 'update-offer', dataset: { state: o.state, version: o.version, source: o.source || '' } },
      h('p', { class: 'health-ok', text: T.t('update.offered', { v: o.version, from: T.t('update.from.' + (o.source || 'file')) }) }),
      o.downgrade
        ? h(
            'p',
            { class: 'health-warn' },
            T.t('update.downgrade') + ' ',
            h('label', null, h('input', { type: 'checkbox', id: 'update-downgrade', checked: downgradeOK, onchange: (ev) => { downgradeOK = ev.target.checked; } }), ' ' + T.t('update.confirmDowngrade')),
          )
        : null,
      h('button', { type: 'button', class: 'primary', id: 'update-start', onclick: start, text: T.t('update.start') }),
    );
  }

  return {
    enter: () => {
      clearInterval(timer);
      refresh();
      timer = setInterval(() => {
        if (document.visibilityState === 'visible' && !sending) refresh();
      }, POLL_MS);
    },
    leave: () => {
      clearInterval(timer);
      timer = null;
    },
    rerender: render,
  };
}
