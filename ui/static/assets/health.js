// health.js — the owner's view of the store's boxes, in plain words.
//
// GET /api/cluster/status (staff view) carries, per box, whether the
// answering box reaches it (reachable), since when it has not
// (downSince), and how its memory card is (disk, as that box last
// reported it). healthOf turns that into what an owner needs: how many
// boxes work, which one is silent and since when, which card is in
// trouble, and why each box last started (lastRestart: a clean restart,
// its watchdog, a crash, a power cut). The console's cluster page and the
// banners of the console and the kitchen both read it; Raft figures and
// systemd's words stay on the cluster page under "details".

import { dateOf, setStoreZone, storeZoneName } from './dom.js';
// A box clock this close to the browser's still dates "since" sensibly.
const CLOCK_CLOSE_MS = 5 * 60 * 1000;

// A box silent this long puts a banner on the console and the kitchen: a
// reboot or an unplugged cable for a minute is not worth a banner.
export const BANNER_AFTER_MS = 5 * 60 * 1000;

const POLL_MS = 20000;
// How long a screen waits for the banners before it shows anyway.
const FIRST_DRAW_MS = 2000;

// Disk states the box itself reports; 'ok' says nothing.
const DISK_TROUBLE = ['low', 'full', 'readonly', 'slow'];
// A box whose card is full or read-only has paused: it does not count as
// working even though it answers.
const DISK_PAUSED = ['full', 'readonly'];

// Why a box last started (lastRestart.reason); anything else reads as
// unknown. A restart other than a clean one is shown as a warning for a
// day.
const RESTART_REASONS = ['stop', 'watchdog', 'crash', 'error', 'killed', 'oom', 'timeout', 'power', 'unknown'];
const RESTART_WARN_MS = 24 * 60 * 60 * 1000;

export const HEALTH_STRINGS = {
  ja: {
    'health.summary': '{total} 台中 {n} 台が動いています',
    'health.staffUrl': 'タブレットにはこのアドレスを保存してください（ルーターを替えても、端末が1台止まっても変わりません）: {url}',
    'health.allGood': '問題ありません。注文はいつもどおり受け付けています。',
    'health.attention': '注文はいつもどおり受け付けています。下の注意を読んで、早めに対処してください。',
    'health.degraded': '注文はほかの端末で続いています。もう1台止まると注文を受け付けられなくなります。早めに対処してください。',
    'health.noQuorum': 'いまは注文を受け付けられません。動いている端末が {need} 台未満です。端末の電源とケーブルを確認してください。',
    'health.single': '端末が1台だけです。この1台が止まると注文は止まります。3台にすると1台止まっても続けられます。',
    'health.box': '端末 {id}',
    'health.this': 'この画面の端末',
    'health.working': '動いています',
    'health.paused': '止まっています（メモリーカード）',
    'health.state.down': '{time} から応答がありません',
    'health.state.downNow': '応答がありません',
    'health.down': '端末 {id} が {time} から応答していません',
    'health.downNow': '端末 {id} が応答していません',
    'health.whatToDo': 'どうすればいい？',
    'health.downStep1': '端末 {id} の電源ケーブルとLANケーブルが抜けていないか確かめます。',
    'health.downStep2': '電源ケーブルを抜いて10秒待ち、差し直します。2分ほどで戻れば、ここが「動いています」に変わります。',
    'health.downStep3': '戻らないときは交換します。新しい端末（またはイメージを書き込み直したカード）の電源を入れると、下の「見つかった新しい端末」に出てきます。「{id} をこの端末と交換」を押すだけです。',
    'health.replace': '{id} を交換する',
    'health.disk.low': '端末 {id} のメモリーカードの空きが少なくなっています（残り {free}）。近いうちにカードを交換してください。',
    'health.disk.full': '端末 {id} のメモリーカードがいっぱいです。注文はほかの端末で続いています。カードを交換してください。',
    'health.disk.readonly': '端末 {id} のメモリーカードが書き込めなくなりました（読み取り専用）。注文はほかの端末で続いています。カードを交換してください。',
    'health.disk.slow': '端末 {id} のメモリーカードがとても遅くなっています。注文はほかの端末で続いています。カードを交換してください。',
    'health.disk.how': 'カードの交換のしかた',
    'health.disk.step1': '新しい microSD カード（32 GB 以上、A1 以上の表示があるもの）に、パソコンの Raspberry Pi Imager で MasterOrder のイメージを書き込みます。',
    'health.disk.step2': '端末 {id} の電源を抜き、カードを差し替えて電源を入れます。',
    'health.disk.step3': '1分ほどで下の「見つかった新しい端末」に出てきます。「{id} をこの端末と交換」を押すと、注文データがほかの端末から写されます。',
    'health.banner.down': '端末 {id} が {time} から応答していません。注文はほかの端末で続いています。',
    'health.banner.downNow': '端末 {id} が応答していません。注文はほかの端末で続いています。',
    'health.banner.console': 'スタッフ画面の「端末」で対処法を確認してください。',
    'health.banner.kitchen': '店長に知らせてください。',
    'health.details': 'くわしい情報（技術者向け）',
    'health.found.title': '見つかった新しい端末',
    'health.found.look': 'さがす',
    'health.found.looking': 'さがしています…',
    'health.found.help': 'イメージを書き込んだカードを入れた端末の電源を入れると、1分ほどでここに出てきます。',
    'health.found.none': 'いまは見つかりません。',
    'health.found.box': '新しい端末 {code}',
    'health.found.add': 'この端末を追加',
    'health.found.replace': '{id} をこの端末と交換',
    'health.found.code': 'セットアップコード',
    'health.found.closed': '電源を入れてから30分を過ぎたため追加できません。電源を入れ直してください。',
    'health.found.confirmReplace': '端末 {id} をはずして、新しい端末 {code} と交換します。よろしいですか？',
    'health.found.confirmAdd': '新しい端末 {code} を追加します。よろしいですか？',
    'health.join.added': '端末 {id} として加わりました。注文データを写しています…',
    'health.join.ready': '端末 {id} の準備ができました。すべての注文を持っています。',
    'health.join.working': '新しい端末 {code} を準備しています…',
    'health.join.failed': '追加できませんでした: {message}',
    'health.restart.stop': '{time} に再起動しました（停止・再起動・更新の操作による通常の再起動）',
    'health.restart.watchdog': '{time} に自動で再起動しました（応答しなくなったため）',
    'health.restart.crash': '{time} に自動で再起動しました（プログラムが異常終了したため）',
    'health.restart.error': '{time} に自動で再起動しました（エラーで止まったため）',
    'health.restart.killed': '{time} に再起動しました（外から強制終了されたため）',
    'health.restart.oom': '{time} に自動で再起動しました（メモリーが足りなくなったため）',
    'health.restart.timeout': '{time} に自動で再起動しました（起動か停止が終わらなかったため）',
    'health.restart.power': '{time} に起動しました（電源が切れたか、端末が固まっていたため）',
    'health.restart.unknown': '{time} に再起動しました（理由はわかりません）',
    'health.restart.column': '最後の起動',
    'health.cert.warn': '端末 {id} の安全な接続のための証明書が {date} に切れます。自動で更新できませんでした。切れると、スタッフ用のタブレットと厨房の画面はこの端末につながらなくなります。',
    'health.cert.banner': '端末 {id} の証明書が {date} に切れます。自動で更新できませんでした。',
    'health.cert.what': 'どうすればいい？',
    'health.cert.step.no_ca_key': 'この端末は自分で証明書を更新できないしくみで設定されています。お店を設定した人（販売店や技術者）に連絡し、{date} より前に証明書の更新を頼んでください。',
    'health.cert.step.ca_expiring': 'お店全体の証明書の期限が近づいています。お店を設定した人（販売店や技術者）に連絡し、{date} より前に設定のやり直しを頼んでください。',
    'health.cert.step.write_failed': '新しい証明書をメモリーカードに書き込めませんでした。カードがいっぱいか傷んでいるかもしれません。カードを交換するか、お店を設定した人に連絡してください。',
    'health.cert.step.other': 'お店を設定した人（販売店や技術者）に連絡し、{date} より前に証明書の更新を頼んでください。下の「くわしい情報」を伝えてください。',
    'health.clock.ask': '端末の時計は {time} です。合っていますか？',
    'health.clock.why': '端末は電源を入れてから、インターネットからも店長からも時刻を受け取っていません。レシートや売上の日付はこの時計で決まります。',
    'health.clock.set': 'このタブレットの時刻（{time}）に合わせる',
    'health.clock.setting': '合わせています…',
    'health.clock.managerOnly': '時計を合わせるには店長でログインしてください。',
    'health.clock.kitchen': '端末の時計が合っているかわかりません。店長に時計を合わせてもらってください。',
  },
  en: {
    'health.summary': '{n} of {total} boxes working',
    'health.staffUrl': 'Save this address on the tablets (it stays the same with a new router, and when a box stops): {url}',
    'health.allGood': 'All is well. Orders are taken as usual.',
    'health.attention': 'Orders are taken as usual. Read the notice below and deal with it soon.',
    'health.degraded': 'Orders continue on the other boxes. If one more box stops, orders stop: deal with it soon.',
    'health.noQuorum': 'Orders cannot be taken right now: fewer than {need} boxes are working. Check the boxes’ power and cables.',
    'health.single': 'This store has one box: if it stops, orders stop. With three boxes, orders continue when one stops.',
    'health.box': 'Box {id}',
    'health.this': 'the box showing this page',
    'health.working': 'working',
    'health.paused': 'paused (memory card)',
    'health.state.down': 'not answering since {time}',
    'health.state.downNow': 'not answering',
    'health.down': 'Box {id} has not answered since {time}',
    'health.downNow': 'Box {id} is not answering',
    'health.whatToDo': 'What to do',
    'health.downStep1': 'Check that box {id}’s power cable and network cable are plugged in.',
    'health.downStep2': 'Unplug its power, wait 10 seconds, plug it back in. If it comes back within about 2 minutes, it shows as “working” here.',
    'health.downStep3': 'If it does not, replace it: power on a new box (or this one with a freshly flashed card). It appears below under “New boxes found”; tap “Replace {id} with this box”. That is all.',
    'health.replace': 'Replace {id}',
    'health.disk.low': 'Box {id}’s memory card is almost full ({free} left). Replace the card soon.',
    'health.disk.full': 'Box {id}’s memory card is full. Orders continue on the other boxes; replace the card.',
    'health.disk.readonly': 'Box {id}’s memory card can no longer be written (read-only). Orders continue on the other boxes; replace the card.',
    'health.disk.slow': 'Box {id}’s memory card is very slow. Orders continue on the other boxes; replace the card.',
    'health.disk.how': 'How to replace the card',
    'health.disk.step1': 'On a computer, write the MasterOrder image to a new microSD card (32 GB or more, marked A1 or better) with Raspberry Pi Imager.',
    'health.disk.step2': 'Unplug box {id}, swap the card, plug it back in.',
    'health.disk.step3': 'Within a minute it appears below under “New boxes found”. Tap “Replace {id} with this box”: the other boxes copy the orders to it.',
    'health.banner.down': 'Box {id} has not answered since {time}. Orders continue on the other boxes.',
    'health.banner.downNow': 'Box {id} is not answering. Orders continue on the other boxes.',
    'health.banner.console': 'See “Boxes” in the staff console for what to do.',
    'health.clock.ask': 'The boxes’ clock says {time}. Is that right?',
    'health.clock.why': 'Since they were switched on, the boxes have had the time neither from the internet nor from a manager. Receipts and sales reports are dated by this clock.',
    'health.clock.set': 'Set it to this tablet’s time ({time})',
    'health.clock.setting': 'Setting…',
    'health.clock.managerOnly': 'Log in as a manager to set the clock.',
    'health.clock.kitchen': 'The boxes do not know the right time. Ask a manager to set the clock.',
    'health.banner.kitchen': 'Please tell the manager.',
    'health.details': 'Details (for technicians)',
    'health.found.title': 'New boxes found',
    'health.found.look': 'Look again',
    'health.found.looking': 'Looking…',
    'health.found.help': 'Power on a box with a freshly flashed card: within a minute it shows here.',
    'health.found.none': 'None found right now.',
    'health.found.box': 'New box {code}',
    'health.found.add': 'Add this box',
    'health.found.replace': 'Replace {id} with this box',
    'health.found.code': 'Setup code',
    'health.found.closed': 'It was powered on more than 30 minutes ago: turn it off and on again to add it.',
    'health.found.confirmReplace': 'Take box {id} out and replace it with the new box {code}?',
    'health.found.confirmAdd': 'Add the new box {code} to the store?',
    'health.join.added': 'It joined as box {id}. Copying the orders to it…',
    'health.join.ready': 'Box {id} is ready: it holds every order.',
    'health.join.working': 'Preparing the new box {code}…',
    'health.join.failed': 'Could not add it: {message}',
    'health.restart.stop': 'Restarted at {time} (a normal stop, restart or update)',
    'health.restart.watchdog': 'Restarted itself at {time} after it stopped answering',
    'health.restart.crash': 'Restarted itself at {time} after the program failed',
    'health.restart.error': 'Restarted itself at {time} after it stopped on an error',
    'health.restart.killed': 'Restarted at {time} after it was stopped from outside',
    'health.restart.oom': 'Restarted itself at {time} after it ran out of memory',
    'health.restart.timeout': 'Restarted itself at {time} after it got stuck starting or stopping',
    'health.restart.power': 'Started at {time} after the power was cut or the box froze',
    'health.restart.unknown': 'Restarted at {time} (the reason is not known)',
    'health.restart.column': 'Last start',
    'health.cert.warn': 'Box {id}’s certificate for secure connections ends on {date}, and it could not renew it by itself. After that, staff tablets and kitchen screens cannot connect to this box.',
    'health.cert.banner': 'Box {id}’s certificate ends on {date} and could not renew itself.',
    'health.cert.what': 'What to do',
    'health.cert.step.no_ca_key': 'This box was set up in a way that does not let it renew its certificate itself. Before {date}, ask whoever set up the store (your dealer or technician) to renew it.',
    'health.cert.step.ca_expiring': 'The store’s own certificate is coming to its end. Before {date}, ask whoever set up the store (your dealer or technician) to set it up again.',
    'health.cert.step.write_failed': 'The new certificate could not be written to the memory card: the card may be full or worn out. Replace the card, or ask whoever set up the store.',
    'health.cert.step.other': 'Before {date}, ask whoever set up the store (your dealer or technician) to renew the certificate, and give them the details below.',
  },
};

// withHealthStrings adds these words to a page's dictionaries.
export function withHealthStrings(dicts) {
  return {
    ja: Object.assign({}, HEALTH_STRINGS.ja, dicts.ja),
    en: Object.assign({}, HEALTH_STRINGS.en, dicts.en),
  };
}

function parseTime(iso) {
  if (typeof iso !== 'string' || iso === '') return null;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : d;
}

// healthOf reads a staff status at browser time now (ms). Each box:
// {id, self, leader, reachable, working, downSince (Date|null), downForMs,
// disk ({state, freeBytes, totalBytes}|null), restart ({reason, at (Date),
// warn, raw}|null: why it last started)}. A box that has been silent
// for longer than BANNER_AFTER_MS is in `banner`, as is every card in
// trouble.
export function healthOf(st, now) {
  const boxes = [];
  const clock = (st && st.clock) || null;
  // "since" is the answering box's wall clock: meaningless when that
  // clock is not known to be right and disagrees with this browser's.
  const clockOK = !(st && st.clockSuspect) || !!(clock && Math.abs(clock.wall - now) < CLOCK_CLOSE_MS);
  for (const n of (st && st.nodes) || []) {
    const self = n.id === st.nodeId;
    const disk = n.disk || (self ? st.disk : null) || null;
    const reachable = self || n.reachable === true;
    const since = reachable ? null : parseTime(n.downSince);
    const paused = !!(disk && DISK_PAUSED.includes(disk.state));
    boxes.push({
      id: n.id,
      self,
      voter: n.suffrage !== 'nonvoter',
      leader: !!(st.leader && st.leader.id === n.id),
      reachable,
      working: reachable && !paused,
      downSince: since,
      // A box clock that is obviously wrong makes "since" meaningless;
      // the box is then treated as down for an unknown time (no banner
      // until the status says when).
      downForMs: since && clockOK ? Math.max(0, now - since.getTime()) : null,
      disk: disk && DISK_TROUBLE.includes(disk.state) ? disk : null,
      restart: restartOf(n.lastRestart, now),
      cert: certOf(n.certificates),
    });
  }
  const voters = boxes.filter((b) => b.voter).length;
  const working = boxes.filter((b) => b.working).length;
  return {
    boxes,
    total: boxes.length,
    working,
    need: Math.floor(voters / 2) + 1,
    quorum: !!(st && st.leader) && !st.stale,
    clockSuspect: !!(st && st.clockSuspect),
    // No source gave the boxes the time (clock.clusterTrusted false): the
    // console asks a manager, the kitchen asks for one. clockWall is the
    // time the boxes go by.
    clockAsk: !!(clock && clock.clusterTrusted === false),
    clockWall: clock && Number.isFinite(clock.clusterWall) ? clock.clusterWall : null,
    banner: boxes.filter((b) => (!b.reachable && b.downForMs != null && b.downForMs > BANNER_AFTER_MS) || b.disk),
  };
}

// certOf reads a member's certificates: the warning when one of them
// lapses within a month and the box could not renew it (warn), else null.
function certOf(c) {
  if (!c || c.warn !== true) return null;
  const at = parseTime(c.lapsesAt);
  if (!at) return null;
  return { at, problem: c.problem || '', raw: c };
}

// certWords: "Box b's certificate … ends on 2027/1/5 …" (long for the
// page, short for the banner).
export function certWords(t, box, lang, short) {
  return t(short ? 'health.cert.banner' : 'health.cert.warn', { id: box.id, date: dateWords(box.cert.at, lang) });
}

// certStep: what the owner does about it, by why the box could not.
export function certStep(t, box, lang) {
  const known = ['no_ca_key', 'ca_expiring', 'write_failed'];
  const key = 'health.cert.step.' + (known.includes(box.cert.problem) ? box.cert.problem : 'other');
  return t(key, { id: box.id, date: dateWords(box.cert.at, lang) });
}

// certDetails: the technical words ("no_ca_key: … ; lapses …").
export function certDetails(c) {
  const parts = [];
  if (c.problem) parts.push(c.problem + (c.detail ? ': ' + c.detail : ''));
  if (c.httpsNotAfter) parts.push('HTTPS ' + c.httpsNotAfter);
  if (c.nodeNotAfter) parts.push('node ' + c.nodeNotAfter);
  if (c.caNotAfter) parts.push('CA ' + c.caNotAfter);
  return parts.join('; ');
}

// dateWords: "2027/1/5" (ja), "5 January 2027" (en).
export function dateWords(d, lang) {
  return lang === 'en'
    ? d.toLocaleDateString('en-GB', { year: 'numeric', month: 'long', day: 'numeric' })
    : d.toLocaleDateString('ja-JP', { year: 'numeric', month: 'numeric', day: 'numeric' });
}

// restartOf reads a member's lastRestart; null when it has none (its first
// start) or no readable time.
function restartOf(r, now) {
  const at = r ? parseTime(r.at) : null;
  if (!at) return null;
  const reason = RESTART_REASONS.includes(r.reason) ? r.reason : 'unknown';
  return { reason, at, warn: reason !== 'stop' && now - at.getTime() < RESTART_WARN_MS, raw: r };
}

// restartWords: "Restarted itself at 14:02 after it stopped answering".
export function restartWords(t, box, now, lang) {
  return t('health.restart.' + box.restart.reason, { time: sinceWords(box.restart.at, now, lang) });
}

// restartDetails: systemd's words for technicians ("watchdog, killed
// KILL; rebooted").
export function restartDetails(r) {
  const parts = [r.reason];
  if (r.serviceResult) parts.push([r.serviceResult, r.exitCode, r.exitStatus].filter(Boolean).join(' '));
  if (r.rebooted) parts.push('rebooted');
  if (r.detail) parts.push(r.detail);
  return parts.join('; ');
}

// sinceWords: "10:42" today, "12/2 10:42" on another day, on the store's
// clock (dom.js setStoreZone).
export function sinceWords(d, now, lang) {
  const loc = lang === 'en' ? 'en-GB' : 'ja-JP';
  const timeZone = storeZoneName() || undefined;
  const time = d.toLocaleTimeString(loc, { hour: '2-digit', minute: '2-digit', timeZone });
  if (dateOf(d) === dateOf(now)) return time;
  return d.toLocaleDateString(loc, { month: 'numeric', day: 'numeric', timeZone }) + ' ' + time;
}

// bytesWords: "1.2 GB", "350 MB".
export function bytesWords(n) {
  const v = Number(n);
  if (!Number.isFinite(v) || v < 0) return '—';
  if (v >= 1e9) return (v / 1e9).toFixed(1) + ' GB';
  return Math.round(v / 1e6) + ' MB';
}

// downWords: the sentence for a silent box.
export function downWords(t, box, now, lang, prefix) {
  const p = prefix || 'health.';
  if (box.downSince && box.downForMs != null) return t(p + 'down', { id: box.id, time: sinceWords(box.downSince, now, lang) });
  return t(p + 'downNow', { id: box.id });
}

export function diskWords(t, box) {
  return t('health.disk.' + box.disk.state, { id: box.id, free: bytesWords(box.disk.freeBytes) });
}

// bannerLines: what the banner says for a health, one line per box; tail
// is the app's "where to look" sentence key; certs: certificates that
// lapse within a month too (the console's banner, not the kitchen's).
export function bannerLines(t, health, now, lang, tail, certs) {
  const lines = [];
  for (const b of health.banner) {
    if (!b.reachable) lines.push(downWords(t, b, now, lang, 'health.banner.'));
    else if (b.disk) lines.push(diskWords(t, b));
  }
  if (certs) for (const b of health.boxes) if (b.cert) lines.push(certWords(t, b, lang, true));
  if (lines.length && tail) lines.push(t(tail));
  return lines;
}

// clockWords: "2026/12/6 9:05" in the browser's zone and locale.
export function clockWords(ms, lang) {
  const loc = lang === 'en' ? 'en-GB' : 'ja-JP';
  return new Date(ms).toLocaleString(loc, { year: 'numeric', month: 'numeric', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

// renderClockPrompt fills el while no source gave the boxes the time: the
// console asks "the boxes' clock says … — is that right?" with one button
// that sends this tablet's clock (a manager's login; a kitchen login is
// told to find one), the kitchen asks for a manager. set() posts it.
function renderClockPrompt(el, health, T, mode, set, state) {
  while (el.firstChild) el.removeChild(el.firstChild);
  const ask = !!(health && health.clockAsk);
  el.hidden = !ask;
  if (!ask) return;
  const line = (text, cls) => {
    const p = document.createElement('div');
    p.textContent = text;
    if (cls) p.className = cls;
    el.append(p);
  };
  if (mode === 'kitchen') {
    line(T.t('health.clock.kitchen'));
    return;
  }
  const wall = health.clockWall != null ? health.clockWall : Date.now();
  line(T.t('health.clock.ask', { time: clockWords(wall, T.lang()) }), 'clock-ask');
  line(T.t('health.clock.why'), 'clock-why');
  if (mode !== 'manager') {
    line(T.t('health.clock.managerOnly'));
    return;
  }
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'primary';
  b.id = 'clock-set';
  b.disabled = state.busy;
  b.textContent = state.busy ? T.t('health.clock.setting') : T.t('health.clock.set', { time: clockWords(Date.now(), T.lang()) });
  b.addEventListener('click', set);
  el.append(b);
  if (state.error) line(state.error, 'clock-error');
}

// createHealthBanner polls the staff status (with the page's staff API,
// whose token may be a kitchen one) and fills el with bannerLines while
// some box has been silent more than five minutes or has a card in
// trouble (or, with certs, a certificate that lapses within a month);
// and clockEl, when given, with the clock prompt (clockMode(): 'manager'
// shows the button, 'kitchen' asks for a manager, anything else says a
// manager's login is needed).
export function createHealthBanner({ el, api, T, tail, certs, clockEl, clockMode }) {
  let timer = null;
  let health = null;
  let last = null; // the newest status drawn, as the box answered it
  const clock = { busy: false, error: '' };

  async function setClock() {
    clock.busy = true;
    clock.error = '';
    render();
    try {
      // The tablet's own clock, read at the tap.
      await api.post('/api/staff/clock', { time: Date.now() });
    } catch (e) {
      clock.error = (e && e.message) || String(e);
    }
    clock.busy = false;
    await poll();
  }

  async function poll() {
    try {
      const st = await api.get('/api/cluster/status', { timeoutMs: 5000 });
      if (st && Array.isArray(st.nodes)) {
        last = st;
        health = healthOf(st, Date.now());
        setStoreZone(st.timeZone || ''); // the store's time zone: this page's times
      }
    } catch (_) {
      // a dead box is the connection banners' business
    }
    render();
  }

  function render() {
    const lines = health ? bannerLines(T.t, health, Date.now(), T.lang(), tail, certs) : [];
    while (el.firstChild) el.removeChild(el.firstChild);
    for (const line of lines) {
      const p = document.createElement('div');
      p.textContent = line;
      el.append(p);
    }
    el.hidden = lines.length === 0;
    if (clockEl) renderClockPrompt(clockEl, health, T, clockMode ? clockMode() : '', setClock, clock);
  }

  return {
    // start polls; it answers when the first poll is drawn, or after
    // FIRST_DRAW_MS at most (a slow box), so a screen can draw its banners
    // before what is under them: a banner appearing a moment after the
    // tabs pushed them down under a finger already tapping.
    start() {
      clearInterval(timer);
      const first = poll();
      timer = setInterval(() => {
        if (document.visibilityState === 'visible' && api.token()) poll();
      }, POLL_MS);
      return Promise.race([first, new Promise((resolve) => setTimeout(resolve, FIRST_DRAW_MS))]);
    },
    stop() {
      clearInterval(timer);
      timer = null;
      health = null;
      last = null;
      render();
    },
    // status is the newest staff view of GET /api/cluster/status drawn
    // (null before one): a screen starting after start() reads the shop's
    // name from it instead of asking the box again.
    status() {
      return last;
    },
    // show takes a status fetched elsewhere (the cluster page) so the
    // banner never disagrees with the page under it.
    show(st) {
      if (st && Array.isArray(st.nodes)) {
        last = st;
        health = healthOf(st, Date.now());
        setStoreZone(st.timeZone || '');
      }
      render();
    },
    render,
  };
}
