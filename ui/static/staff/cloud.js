// cloud.js — the staff console's Cloud page (manager): switch the sync of
// open orders to the shop's Firebase project on with its service account
// key file, see how the sync is doing in words, switch it off. The key is
// read from the chosen file, sent once to the box, checked there with a
// test write and kept only sealed on the boxes: no answer shows it again.
// The page draws itself into #page-cloud.

import { $, h, clear, show, setError, dateTimeOf, toast, confirmDialog } from '/assets/dom.js';

export const CLOUD_STRINGS = {
  ja: {
    'staff.tab.cloud': 'クラウド',
    'cloud.title': 'クラウド同期',
    'cloud.intro': '営業中の注文を、お店の Firebase プロジェクト（Firestore）にも送ります。インターネットが切れても店内の注文はそのまま続き、つながると送ります。',
    'cloud.state.off': 'オフ：注文はクラウドに送っていません。',
    'cloud.state.starting': 'オン：最初の同期を待っています…',
    'cloud.state.on': 'オン：注文をクラウドに送っています。',
    'cloud.state.waiting': 'インターネットを待っています。注文は店内でそのまま受けられ、つながりしだいクラウドに送ります。',
    'cloud.state.error.noAccess': '止まっています：この鍵では Firestore に書き込めなくなりました（権限がないか、鍵が削除されました）。新しい鍵ファイルを選んでください。',
    'cloud.state.error.noDatabase': '止まっています：この Firebase プロジェクトに Firestore のデータベースがありません。Firebase コンソールで作成してください。',
    'cloud.state.error.local': '止まっています：端末どうしで同期を記録できません。「端末」のページを確かめてください。',
    'cloud.state.error.other': '止まっています：Firestore がエラーを返しました。しばらくして直らなければ、下の「くわしく」を技術者に伝えてください。',
    'cloud.state.keyUnreadable': '止まっています：保存した鍵を読めません（端末の秘密の設定が変わったか、別のお店のバックアップから戻しました）。鍵ファイルをもう一度選んでください。',
    'cloud.lastSync': '最後の同期：{time}',
    'cloud.neverSynced': 'まだ同期していません',
    'cloud.pending': 'クラウドに送る変更：{n} 件',
    'cloud.details': 'くわしく（技術者向け）',
    'cloud.fact.project': 'Firebase プロジェクト',
    'cloud.fact.account': 'サービスアカウント',
    'cloud.fact.key': '鍵のID',
    'cloud.fact.saved': '保存',
    'cloud.fact.checked.written': '{time}（試しの書き込み成功）',
    'cloud.fact.checked.unconfirmed': '{time}（インターネットなしで保存）',
    'cloud.file': 'このお店のクラウド同期は、端末の設定ファイル（masterorder.toml の [firestore]）で設定されています。変えるときは設定ファイルで行ってください。',
    'cloud.off': 'クラウド同期をオフにする',
    'cloud.offConfirm': 'クラウド同期をオフにしますか？鍵は端末から消えます。すでにクラウドにある注文はそのまま残ります。',
    'cloud.offDone': 'クラウド同期をオフにしました。',
    'cloud.form.on': 'クラウド同期をオンにする',
    'cloud.form.change': '鍵を取り替える',
    'cloud.step1': 'パソコンで Firebase コンソール（console.firebase.google.com）を開き、お店のプロジェクトの ⚙［プロジェクトの設定］→［サービス アカウント］を開きます。',
    'cloud.step2': '［新しい秘密鍵を生成］を押します。鍵のファイル（.json）がダウンロードされます。このタブレットにそのファイルを送ります（メール、AirDrop、USB メモリなど）。',
    'cloud.step3': 'そのファイルを下で選び、「確認して保存」を押します。',
    'cloud.file.label': '鍵ファイル（.json）',
    'cloud.keep': '鍵はお店の端末にだけ、暗号化して保存します。あとから画面に出ることはありません。',
    'cloud.save': '確認して保存',
    'cloud.checking': '確認しています…',
    'cloud.noFile': '鍵ファイルを選んでください。',
    'cloud.tooBig': 'このファイルは大きすぎます。鍵ファイル（数 KB の .json）を選んでください。',
    'cloud.saved.written': '鍵を確認して保存しました。注文をクラウドに送ります。',
    'cloud.saved.unconfirmed': '鍵を保存しました。いまはインターネットにつながらないため、確認はまだです。つながりしだい確かめて、注文を送ります。',
  },
  en: {
    'staff.tab.cloud': 'Cloud',
    'cloud.title': 'Cloud sync',
    'cloud.intro': 'Open orders also go to your shop’s Firebase project (Firestore). Without the internet, orders in the shop carry on and go to the cloud once it is back.',
    'cloud.state.off': 'Off: orders are not sent to the cloud.',
    'cloud.state.starting': 'On: waiting for the first sync…',
    'cloud.state.on': 'On: orders go to the cloud.',
    'cloud.state.waiting': 'Waiting for the internet. Orders carry on in the shop and go to the cloud as soon as it is back.',
    'cloud.state.error.noAccess': 'Stopped: this key can no longer write to Firestore (no permission, or the key was deleted). Choose a new key file.',
    'cloud.state.error.noDatabase': 'Stopped: this Firebase project has no Firestore database. Create one in the Firebase console.',
    'cloud.state.error.local': 'Stopped: the boxes cannot record the sync. See the Boxes page.',
    'cloud.state.error.other': 'Stopped: Firestore answered with an error. If it does not clear by itself, give a technician the details below.',
    'cloud.state.keyUnreadable': 'Stopped: the saved key cannot be read (the boxes’ secrets changed, or a backup of another shop was restored). Choose the key file again.',
    'cloud.lastSync': 'Last synced at {time}',
    'cloud.neverSynced': 'Not synced yet',
    'cloud.pending': 'Changes waiting for the cloud: {n}',
    'cloud.details': 'Details (for a technician)',
    'cloud.fact.project': 'Firebase project',
    'cloud.fact.account': 'Service account',
    'cloud.fact.key': 'Key id',
    'cloud.fact.saved': 'Saved',
    'cloud.fact.checked.written': '{time} (test write succeeded)',
    'cloud.fact.checked.unconfirmed': '{time} (saved without the internet)',
    'cloud.file': 'This shop’s cloud sync is set in the boxes’ configuration file (masterorder.toml, [firestore]). Change it there.',
    'cloud.off': 'Switch cloud sync off',
    'cloud.offConfirm': 'Switch cloud sync off? The key is removed from the boxes. Orders already in the cloud stay there.',
    'cloud.offDone': 'Cloud sync is off.',
    'cloud.form.on': 'Switch cloud sync on',
    'cloud.form.change': 'Replace the key',
    'cloud.step1': 'On a computer, open the Firebase console (console.firebase.google.com), then your shop’s project → ⚙ Project settings → Service accounts.',
    'cloud.step2': 'Press “Generate new private key”. The key file (.json) downloads. Send that file to this tablet (mail, AirDrop, a USB stick).',
    'cloud.step3': 'Choose that file below and press “Check and save”.',
    'cloud.file.label': 'Key file (.json)',
    'cloud.keep': 'The key is kept only on the shop’s boxes, encrypted. No page ever shows it again.',
    'cloud.save': 'Check and save',
    'cloud.checking': 'Checking…',
    'cloud.noFile': 'Choose the key file.',
    'cloud.tooBig': 'This file is too large to be a key. Choose the key file (a .json of a few KB).',
    'cloud.saved.written': 'Key checked and saved. Orders now go to the cloud.',
    'cloud.saved.unconfirmed': 'Key saved. The shop is not online right now, so it is not checked yet: the boxes check it and send the orders as soon as it is.',
  },
};

// A key file is about 2.4 KB; the box takes bodies up to 64 KiB.
const MAX_KEY_FILE = 32 * 1024;

export function createCloudPage({ api, T }) {
  let view = null;
  let timer = null;
  let busy = false;
  let saved = ''; // how the last save here went: written, unconfirmed (its words follow the language)

  function draw() {
    const root = clear($('#page-cloud'));
    root.append(
      h(
        'div',
        { class: 'card cloud-card' },
        h('div', { class: 'row' }, h('h2', { id: 'cloud-title' }), h('span', { class: 'spacer' }), h('button', { id: 'cloud-reload', type: 'button', class: 'small', onclick: load })),
        h('p', { id: 'cloud-intro', class: 'muted' }),
        h('p', { id: 'cloud-state', class: 'cloud-state', role: 'status' }),
        h('p', { id: 'cloud-more', class: 'cloud-more' }),
        h('details', { id: 'cloud-details', class: 'cloud-details', hidden: true }, h('summary', { id: 'cloud-details-summary' }), h('p', { id: 'cloud-error', class: 'mono small-text' })),
        h('dl', { id: 'cloud-facts', class: 'kv cloud-facts' }),
        h('p', { id: 'cloud-file-note', class: 'notice', hidden: true }),
        h('div', { class: 'row end' }, h('button', { id: 'cloud-off', type: 'button', class: 'danger', hidden: true, onclick: switchOff })),
      ),
      h(
        'form',
        { id: 'cloud-form', class: 'card cloud-form', novalidate: true, onsubmit: save },
        h('h2', { id: 'cloud-form-title' }),
        h('ol', { class: 'cloud-steps' }, h('li', { id: 'cloud-step1' }), h('li', { id: 'cloud-step2' }), h('li', { id: 'cloud-step3' })),
        h('div', { class: 'field' }, h('label', { id: 'cloud-file-label', for: 'cloud-key-file' }), h('input', { id: 'cloud-key-file', type: 'file', accept: '.json,application/json' })),
        h('p', { id: 'cloud-keep', class: 'muted small-text' }),
        h('p', { id: 'cloud-form-error', class: 'error', role: 'alert', hidden: true }),
        h('details', { id: 'cloud-form-details', class: 'cloud-details', hidden: true }, h('summary', { id: 'cloud-form-details-summary' }), h('p', { id: 'cloud-form-details-text', class: 'mono small-text' })),
        h('p', { id: 'cloud-form-result', class: 'notice', role: 'status', hidden: true }),
        h('div', { class: 'row end' }, h('button', { id: 'cloud-save', type: 'submit', class: 'primary' })),
      ),
    );
  }

  // words fills the page's fixed text in the current language.
  function words() {
    const text = { 'cloud-title': 'cloud.title', 'cloud-intro': 'cloud.intro', 'cloud-details-summary': 'cloud.details', 'cloud-form-details-summary': 'cloud.details', 'cloud-file-note': 'cloud.file',
      'cloud-off': 'cloud.off', 'cloud-step1': 'cloud.step1', 'cloud-step2': 'cloud.step2', 'cloud-step3': 'cloud.step3',
      'cloud-file-label': 'cloud.file.label', 'cloud-keep': 'cloud.keep', 'cloud-reload': 'common.reload' };
    for (const [id, key] of Object.entries(text)) $('#' + id).textContent = T.t(key);
    $('#cloud-save').textContent = T.t(busy ? 'cloud.checking' : 'cloud.save');
    const r = $('#cloud-form-result');
    r.textContent = saved ? T.t('cloud.saved.' + saved) : '';
    r.dataset.checked = saved;
    r.hidden = !saved;
  }

  // stateWords is what the sync is doing, in words.
  function stateWords(v) {
    if (v.state === 'error') return T.t('cloud.state.error.' + (['noAccess', 'noDatabase', 'local'].includes(v.problem) ? v.problem : 'other'));
    return T.t('cloud.state.' + v.state);
  }

  function render() {
    if (!$('#cloud-title')) return;
    words();
    const v = view;
    const page = $('#page-cloud');
    page.dataset.state = v ? v.state : '';
    page.dataset.source = v ? v.source : '';
    if (!v) return;
    const state = $('#cloud-state');
    state.textContent = stateWords(v);
    state.dataset.state = v.state;
    const more = [];
    if (v.source !== 'none') {
      more.push(v.lastSyncAt ? T.t('cloud.lastSync', { time: dateTimeOf(v.lastSyncAt) }) : T.t('cloud.neverSynced'));
      if (v.pending > 0) more.push(T.t('cloud.pending', { n: v.pending }));
    }
    $('#cloud-more').textContent = more.join(' ・ ');
    show('#cloud-more', more.length > 0);
    $('#cloud-error').textContent = v.lastError || '';
    show('#cloud-details', !!v.lastError && v.state !== 'on');

    const facts = clear($('#cloud-facts'));
    const fact = (key, value) => value && facts.append(h('dt', { text: T.t(key) }), h('dd', { class: 'cloud-fact', text: value }));
    fact('cloud.fact.project', v.projectId);
    fact('cloud.fact.account', v.clientEmail);
    fact('cloud.fact.key', v.keyId ? v.keyId.slice(0, 12) + (v.keyId.length > 12 ? '…' : '') : '');
    if (v.savedAt) fact('cloud.fact.saved', T.t('cloud.fact.checked.' + (v.checked === 'unconfirmed' ? 'unconfirmed' : 'written'), { time: dateTimeOf(v.savedAt) }));
    show(facts, facts.childElementCount > 0);

    const fromFile = v.source === 'file';
    show('#cloud-file-note', fromFile);
    show('#cloud-off', v.source === 'console');
    show('#cloud-form', !fromFile);
    $('#cloud-form-title').textContent = T.t(v.source === 'console' ? 'cloud.form.change' : 'cloud.form.on');
  }

  async function load() {
    try {
      view = await api.get('/api/staff/cloud');
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  function setBusy(on) {
    busy = on;
    const b = $('#cloud-save');
    b.disabled = on;
    b.classList.toggle('is-busy', on);
    b.textContent = T.t(on ? 'cloud.checking' : 'cloud.save');
  }

  async function save(ev) {
    ev.preventDefault();
    if (busy) return;
    setError('#cloud-form-error', '');
    show('#cloud-form-details', false);
    saved = '';
    words();
    const input = $('#cloud-key-file');
    const file = input.files && input.files[0];
    if (!file) {
      setError('#cloud-form-error', T.t('cloud.noFile'));
      return;
    }
    if (file.size > MAX_KEY_FILE) {
      setError('#cloud-form-error', T.t('cloud.tooBig'));
      return;
    }
    setBusy(true);
    try {
      const keyFile = await file.text();
      // The box checks the key with a test write (up to 15 s without an
      // answer) before it saves it.
      view = await api.request('PUT', '/api/staff/cloud', { keyFile }, { timeoutMs: 45000 });
      input.value = ''; // the key leaves the page's hands
      saved = view.checked === 'unconfirmed' ? 'unconfirmed' : 'written';
    } catch (e) {
      if (e.status === 401) return;
      // The words first; Firestore's own, for a technician, folded below.
      setError('#cloud-form-error', e.message);
      $('#cloud-form-error').dataset.reason = e.reasonCode || '';
      const details = (e.body && e.body.details) || '';
      $('#cloud-form-details-text').textContent = details;
      show('#cloud-form-details', !!details);
    } finally {
      setBusy(false);
    }
    render();
  }

  async function switchOff() {
    const ok = await confirmDialog(T.t('cloud.offConfirm'), { ok: T.t('cloud.off'), cancel: T.t('common.cancel'), danger: true, kind: 'cloud-off' });
    if (!ok) return;
    try {
      view = await api.del('/api/staff/cloud');
      saved = '';
      toast(T.t('cloud.offDone'), 'ok');
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  function bind() {
    draw();
    render();
  }

  function enter() {
    load();
    clearInterval(timer);
    timer = setInterval(load, 5000); // the sync's state changes by itself
  }

  function leave() {
    clearInterval(timer);
    timer = null;
  }

  return { bind, enter, leave, rerender: render };
}
