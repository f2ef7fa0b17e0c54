// backups.js — the staff console's Backups page (manager): one tap makes
// a backup of the whole store on the box this tablet talks to, the box
// checks that it restores, and the tablet downloads it as one file named
// for the shop and the day. The page checks what arrived (its length and
// SHA-256 against what the box answered) before it hands the file over.
// The page draws itself into #page-backups.

import { $, h, clear, setError } from '/assets/dom.js';

export const BACKUP_STRINGS = {
  ja: {
    'staff.tab.backups': 'バックアップ',
    'backups.title': 'バックアップ',
    'backups.intro': 'お店のデータ全部を、ひとつのファイルにしてこのタブレットに保存します。端末が全部こわれても、新しいカードを書いた端末にこのファイルから戻せます。',
    'backups.in.title': 'ファイルに入るもの',
    'backups.in': 'メニュー（値段・写真・オプション）、在庫、テーブルと PIN、すべての注文、売上と締め、監査ログ、プリンターと画面の文言の設定。',
    'backups.out.title': '入らないもの',
    'backups.out': 'パスワード、端末どうしの鍵と証明書、クラウド同期の鍵。戻すときはセットアップ画面で新しいパスワードを決め、クラウド同期を使っていれば「クラウド」のページで鍵ファイルをもう一度選びます。',
    'backups.make': 'バックアップを作ってダウンロード',
    'backups.making': 'バックアップを作っています。戻せるか確かめています…',
    'backups.downloading': 'ダウンロードしています…',
    'backups.done': '保存しました：{file}（{size}）。戻せることを確かめ済みです。',
    'backups.doneWhen': '{time} 時点のお店のデータです。',
    'backups.keep': 'ファイルは端末の外に置いてください（このタブレット、パソコン、クラウドのドライブなど）。ときどき新しいものを作りましょう。',
    'backups.broken': 'ダウンロードが途中で切れました。もう一度押してください。',
    'backups.restore.title': '端末が全部こわれたら',
    'backups.restore': 'カードを書き直した端末の電源を入れ、セットアップ画面で「バックアップからお店を戻す」を選び、このファイルを選びます。くわしくはオーナーガイドの「バックアップ」をご覧ください。',
  },
  en: {
    'staff.tab.backups': 'Backups',
    'backups.title': 'Backups',
    'backups.intro': 'Saves all of the shop’s data as one file on this tablet. If every box is lost, boxes with freshly written cards take the shop back from this file.',
    'backups.in.title': 'What the file holds',
    'backups.in': 'The menu (prices, pictures, options), stock, tables and their PINs, every order, sales and day closes, the audit log, the printers and the pages’ texts.',
    'backups.out.title': 'What it does not hold',
    'backups.out': 'The passwords, the boxes’ keys and certificates, and the cloud sync key. When you restore, you choose new passwords on the setup page and, if you use cloud sync, choose the key file again on the Cloud page.',
    'backups.make': 'Make a backup and download it',
    'backups.making': 'Making the backup and checking that it restores…',
    'backups.downloading': 'Downloading…',
    'backups.done': 'Saved: {file} ({size}). Checked: it restores.',
    'backups.doneWhen': 'The shop’s data as of {time}.',
    'backups.keep': 'Keep the file off the boxes (on this tablet, a computer, a cloud drive). Make a new one now and then.',
    'backups.broken': 'The download was cut. Press the button again.',
    'backups.restore.title': 'If every box is lost',
    'backups.restore': 'Turn on boxes with freshly written cards, open the setup page, choose “Restore a store from a backup” and pick this file. The owner’s guide, “Backups”, has the steps.',
  },
};

// sizeOf words a byte count.
function sizeOf(n) {
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MB';
  if (n >= 1 << 10) return Math.round(n / (1 << 10)) + ' KB';
  return n + ' B';
}

// fileName is the name the tablet saves: the shop and this tablet's date
// (its clock is the owner's; a box may have booted with a wrong one).
function fileName(shopId, d) {
  const p = (x) => String(x).padStart(2, '0');
  return `masterorder-${shopId}-${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}.mosnap`;
}

async function sha256Hex(buf) {
  if (!globalThis.crypto || !crypto.subtle) return ''; // not a secure context: the length still counts
  const d = await crypto.subtle.digest('SHA-256', buf);
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

export function createBackupsPage({ api, T }) {
  let busy = '';
  let last = null; // { file, bytes, at }
  let error = null; // a message, or [T, key]

  function draw() {
    const root = clear($('#page-backups'));
    root.append(
      h(
        'div',
        { class: 'card backups-card' },
        h('h2', { id: 'backups-title' }),
        h('p', { id: 'backups-intro' }),
        h('div', { class: 'backups-what' },
          h('div', null, h('h3', { id: 'backups-in-title' }), h('p', { id: 'backups-in', class: 'muted' })),
          h('div', null, h('h3', { id: 'backups-out-title' }), h('p', { id: 'backups-out', class: 'muted' }))),
        h('div', { class: 'row' }, h('button', { id: 'backups-make', type: 'button', class: 'primary big', onclick: make })),
        h('p', { id: 'backups-status', class: 'backups-status', role: 'status', hidden: true }),
        h('p', { id: 'backups-error', class: 'error', role: 'alert', hidden: true }),
        h('p', { id: 'backups-keep', class: 'muted small-text' }),
      ),
      h('div', { class: 'card backups-restore' }, h('h3', { id: 'backups-restore-title' }), h('p', { id: 'backups-restore', class: 'muted' })),
    );
  }

  function render() {
    if (!$('#backups-title')) return;
    const text = { 'backups-title': 'backups.title', 'backups-intro': 'backups.intro', 'backups-in-title': 'backups.in.title', 'backups-in': 'backups.in',
      'backups-out-title': 'backups.out.title', 'backups-out': 'backups.out', 'backups-keep': 'backups.keep',
      'backups-restore-title': 'backups.restore.title', 'backups-restore': 'backups.restore' };
    for (const [id, key] of Object.entries(text)) $('#' + id).textContent = T.t(key);
    const b = $('#backups-make');
    b.textContent = T.t('backups.make');
    b.disabled = !!busy;
    b.classList.toggle('is-busy', !!busy);
    const st = $('#backups-status');
    let words = '';
    if (busy) words = T.t('backups.' + busy);
    else if (last) words = T.t('backups.done', { file: last.file, size: sizeOf(last.bytes) }) + ' ' + T.t('backups.doneWhen', { time: last.at.toLocaleString(T.lang() === 'en' ? 'en-GB' : 'ja-JP') });
    st.textContent = words;
    st.hidden = !words;
    st.dataset.state = busy || (last ? 'saved' : '');
    setError('#backups-error', error || '');
  }

  // call is a request to this page's own box: the file is made on the box
  // the download then asks (the node pool may pick another).
  async function call(method, path) {
    const headers = { Authorization: 'Bearer ' + api.token(), 'Accept-Language': T.lang() === 'en' ? 'en' : 'ja' };
    const init = { method, headers, cache: 'no-store', credentials: 'same-origin' };
    if (method === 'POST') {
      headers['Content-Type'] = 'application/json';
      init.body = '{}';
    }
    const res = await fetch(path, init);
    if (!res.ok) {
      let data = null;
      try {
        data = await res.json();
      } catch (_) {
        // no JSON: the status says it
      }
      const e = new Error((data && data.message) || res.status + ' ' + res.statusText);
      e.status = res.status;
      e.reasonCode = (data && data.reasonCode) || '';
      throw e;
    }
    return res;
  }

  async function make() {
    if (busy) return;
    error = null;
    busy = 'making';
    render();
    try {
      const made = await (await call('POST', '/api/staff/backups')).json();
      busy = 'downloading';
      render();
      const res = await call('GET', '/api/staff/backups/' + encodeURIComponent(made.file));
      const buf = await res.arrayBuffer();
      const digest = await sha256Hex(buf);
      if (buf.byteLength !== made.bytes || (digest && digest !== made.sha256)) {
        error = [T, 'backups.broken'];
        return;
      }
      const now = new Date();
      const name = fileName(made.shopId, now);
      const url = URL.createObjectURL(new Blob([buf], { type: 'application/octet-stream' }));
      const a = h('a', { href: url, download: name, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      last = { file: name, bytes: made.bytes, at: now };
      const page = $('#page-backups');
      page.dataset.sha256 = digest || made.sha256;
      page.dataset.file = name;
    } catch (e) {
      if (e.status === 401) return;
      error = e.message;
    } finally {
      busy = '';
      render();
    }
  }

  function bind() {
    draw();
    render();
  }

  return { bind, enter: render, rerender: render };
}
