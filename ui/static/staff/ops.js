// ops.js — the staff console's operations pages: audit log, locks, and the
// cluster page.

import { nodeBase, fetchWithTimeout } from '/assets/cluster.js';
import { healthOf, downWords, diskWords, sinceWords, restartWords, restartDetails, certWords, certStep, certDetails, clockWords } from '/assets/health.js';
import { $, h, clear, show, dateTimeOf, toast, confirmDialog, storeZoneName } from '/assets/dom.js';

function yesNo(T, v) {
  return v ? T.t('common.yesMark') : T.t('common.noMark');
}

// ---------------------------------------------------------------- audit

export function createAuditPage({ api, T }) {
  let entries = [];

  async function load() {
    try {
      const d = await api.get('/api/staff/audit?limit=100');
      entries = (d && d.entries) || [];
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  // A placed order is logged with reasonCode ADMITTED; anything else is a
  // refusal.
  function auditResult(e) {
    const ok = !e.reasonCode || e.reasonCode === 'ADMITTED';
    return h('span', { class: 'status ' + (ok ? 'status-READY' : 'status-REJECTED'), text: ok ? T.t('staff.audit.ok') : e.reasonCode });
  }

  function render() {
    const tb = clear($('#audit-list'));
    for (const e of entries) {
      tb.append(
        h(
          'tr',
          { dataset: { requestId: e.requestId || '', reasonCode: e.reasonCode || '' } },
          h('td', { class: 'small-text', text: dateTimeOf(e.at) }),
          h('td', null, auditResult(e)),
          h('td', { text: e.idempotentReplay ? T.t('common.yesMark') : '' }),
          h('td', { text: e.orderId != null ? '#' + e.orderId : '' }),
          h('td', { class: 'mono', text: e.sessionId || '' }),
          h('td', { class: 'mono', text: e.requestId || '' }),
          h('td', { class: 'mono', text: e.clientId || '' }),
          h('td', { text: e.node || '' }),
        ),
      );
    }
  }

  function bind() {
    $('#audit-reload').addEventListener('click', load);
  }

  return { bind, enter: load, rerender: render };
}

// ---------------------------------------------------------------- locks

export function createLocksPage({ api, T }) {
  let locks = [];

  async function load() {
    const prefix = $('#locks-prefix').value;
    try {
      const d = await api.get('/api/staff/locks?prefix=' + encodeURIComponent(prefix));
      locks = (d && d.locks) || [];
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    render();
  }

  function render() {
    const tb = clear($('#locks-list'));
    show('#locks-empty', locks.length === 0);
    for (const l of locks) {
      tb.append(
        h(
          'tr',
          { dataset: { lockKey: l.key } },
          h('td', { class: 'mono', text: l.key }),
          h('td', { class: 'mono', text: l.value == null ? '' : typeof l.value === 'string' ? l.value : JSON.stringify(l.value) }),
          h('td', { class: 'small-text', text: l.expiresAt ? dateTimeOf(l.expiresAt) : '' }),
          h('td', null, h('button', { type: 'button', class: 'small danger', dataset: { action: 'release' }, text: T.t('staff.locks.release'), onclick: () => release(l.key) })),
        ),
      );
    }
  }

  async function release(key) {
    const ok = await confirmDialog(T.t('staff.locks.confirm', { key }), { ok: T.t('staff.locks.release'), cancel: T.t('common.cancel'), danger: true, kind: 'release-lock' });
    if (!ok) return;
    try {
      await api.del('/api/staff/locks/' + encodeURIComponent(key));
      toast(T.t('staff.locks.released', { key }), 'ok');
    } catch (e) {
      if (e.status !== 401) toast(e.message, 'error');
    }
    await load();
  }

  function bind() {
    $('#locks-reload').addEventListener('click', load);
    $('#locks-prefix').addEventListener('change', load);
  }

  return { bind, enter: load, rerender: render };
}

// ---------------------------------------------------------------- cluster

const CLUSTER_REFRESH_MS = 2000;
const FOUND_REFRESH_TICKS = 5; // boxes in setup mode: looked for every 10 s

export function createClusterPage({ api, T, onStatus }) {
  let timer = null;
  let status = null;
  let failure = null;
  let views = new Map(); // node id → that node's own status (or null)
  let updatedAt = null;

  let busy = false;

  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      await refreshOnce();
    } finally {
      busy = false;
    }
  }

  async function refreshOnce() {
    try {
      status = await api.get('/api/cluster/status', { timeoutMs: 3000 });
      failure = null;
      updatedAt = new Date();
      if (onStatus) onStatus(status);
    } catch (e) {
      if (e.status === 401) return;
      failure = e;
    }
    render();
    if (status) await askNodes(status);
    render();
  }

  // askNodes asks every node for its own view: state, term and applied
  // index as that node sees them. A node this browser cannot reach (down,
  // or another origin the server does not allow) shows blanks.
  async function askNodes(st) {
    const next = new Map();
    await Promise.all(
      (st.nodes || []).map(async (n) => {
        if (n.id === st.nodeId) {
          next.set(n.id, st);
          return;
        }
        // A page served over HTTPS asks the others over HTTPS (their
        // httpsAddr); mixing schemes is blocked by the browser.
        const base = nodeBase(location.protocol === 'https:' ? n.httpsAddr : n.httpAddr, location.origin);
        if (!base) return next.set(n.id, null);
        try {
          const res = await fetchWithTimeout(globalThis.fetch.bind(globalThis), base + '/api/cluster/status', { cache: 'no-store', credentials: 'omit' }, 1500);
          next.set(n.id, res.ok ? await res.json() : null);
        } catch (_) {
          next.set(n.id, null);
        }
      }),
    );
    views = next;
  }

  function kv(dl, label, value, cls) {
    dl.append(h('dt', { text: label }), h('dd', { class: cls || null }, value));
  }

  function render() {
    const warn = clear($('#cluster-warnings'));
    clear($('#health-problems'));
    if (failure) warn.append(h('p', { class: 'error', text: T.t('staff.cluster.unavailable', { message: failure.message }) }));
    $('#cluster-updated').textContent = updatedAt ? T.t('staff.cluster.updated', { time: updatedAt.toLocaleTimeString(T.lang() === 'en' ? 'en-GB' : 'ja-JP', { timeZone: storeZoneName() || undefined }) }) : '';
    const sum = clear($('#cluster-summary'));
    const cloud = clear($('#cluster-cloud'));
    const nodes = clear($('#cluster-nodes'));
    if (!status) return;
    const st = status;
    renderHealth(st);
    // The clock: a clock nobody set is the banner's prompt (health.js);
    // here, for a technician, this box's clock and where it came from.

    kv(sum, T.t('staff.cluster.nodeId'), st.nodeId);
    kv(sum, T.t('staff.cluster.state'), st.state, 'state-' + st.state);
    kv(sum, T.t('staff.cluster.leader'), st.leader ? st.leader.id + ' (' + st.leader.httpAddr + ')' : T.t('staff.cluster.noLeader'));
    kv(sum, T.t('staff.cluster.term'), String(st.term));
    if (st.clock && Number.isFinite(st.clock.wall)) {
      const source = ['ntp', 'manager', 'cluster'].includes(st.clock.source) ? st.clock.source : 'unknown';
      kv(sum, T.t('staff.cluster.clock'), T.t('staff.cluster.clock.' + source, { time: clockWords(st.clock.wall, T.lang()) }));
    }
    kv(sum, T.t('staff.cluster.commit'), String(st.commitIndex));
    kv(sum, T.t('staff.cluster.applied'), String(st.appliedIndex));
    kv(sum, T.t('staff.cluster.fsmTime'), st.fsmTime != null ? String(st.fsmTime) : '');

    const cs = st.cloudSync || {};
    kv(cloud, T.t('staff.cloud.enabled'), yesNo(T, cs.enabled));
    kv(cloud, T.t('staff.cloud.online'), h('span', null, h('span', { class: ['dot', cs.online ? 'ok' : cs.enabled ? 'bad' : ''] }), yesNo(T, cs.online)));
    kv(cloud, T.t('staff.cloud.pending'), String(cs.pending != null ? cs.pending : ''));
    kv(cloud, T.t('staff.cloud.lastSyncAt'), cs.lastSyncAt ? dateTimeOf(cs.lastSyncAt) : T.t('staff.cloud.never'));
    kv(cloud, T.t('staff.cloud.lastError'), cs.lastError || '—');

    for (const n of st.nodes || []) {
      const v = views.get(n.id);
      const isLeader = st.leader && st.leader.id === n.id;
      nodes.append(
        h(
          'tr',
          { dataset: { nodeId: n.id, reachable: String(n.reachable) } },
          h('td', null, h('strong', { text: n.id }), n.id === st.nodeId ? h('span', { class: 'muted small-text', text: ' *' }) : null, isLeader ? h('span', { class: 'state-Leader', text: ' ★' }) : null),
          h('td', null, h('span', { class: ['dot', n.reachable ? 'ok' : 'bad'] }), yesNo(T, n.reachable)),
          h('td', { text: n.suffrage || '' }),
          h('td', { class: 'mono', text: n.httpAddr || '' }),
          h('td', { class: 'mono', text: n.raftAddr || '' }),
          h('td', { class: v ? 'state-' + v.state : '', text: v ? v.state : '' }),
          h('td', { class: 'num', text: v ? String(v.term) : '' }),
          h('td', { class: 'num', text: v ? String(v.appliedIndex) : '' }),
          h('td', { class: 'small-text', text: n.lastRestart ? dateTimeOf(n.lastRestart.at) + ' — ' + restartDetails(n.lastRestart) : '' }),
        ),
      );
    }
  }

  // renderHealth: the owner's part — how many boxes work, which box is
  // silent since when and what to do, which memory card is in trouble.
  let downKey = '';
  function renderHealth(st) {
    const now = Date.now();
    const lang = T.lang();
    const hl = healthOf(st, now);
    // The found boxes offer "Replace c" for each silent box: redraw them
    // when that set changes (not on every refresh: a typed setup code
    // would be lost).
    const silent = hl.boxes.filter((b) => !b.reachable).map((b) => b.id).join(',');
    if (silent !== downKey) {
      downKey = silent;
      queueMicrotask(renderFound);
    }
    $('#health-summary').textContent = T.t('health.summary', { n: hl.working, total: hl.total });
    const words = $('#health-words');
    let key = 'health.allGood';
    if (!hl.quorum || hl.working < hl.need) key = 'health.noQuorum';
    else if (hl.working < hl.total) key = 'health.degraded';
    else if (hl.total === 1) key = 'health.single';
    // Every box works, but a card or a certificate needs the owner: the
    // summary must not say all is well above the problem it lists.
    else if (hl.boxes.some((b) => b.disk || b.cert)) key = 'health.attention';
    words.textContent = T.t(key, { need: hl.need });
    words.className = key === 'health.noQuorum' ? 'health-bad' : key === 'health.allGood' ? 'health-ok' : 'health-warn';
    $('#health-summary').dataset.working = String(hl.working);
    // The address tablets keep: the store's name, not a box's address.
    const su = $('#health-staff-url');
    su.hidden = !st.staffUrl;
    su.textContent = st.staffUrl ? T.t('health.staffUrl', { url: st.staffUrl }) : '';

    const list = clear($('#health-boxes'));
    for (const b of hl.boxes) {
      let state = T.t('health.working');
      if (!b.reachable) state = b.downForMs != null ? T.t('health.state.down', { time: sinceWords(b.downSince, now, lang) }) : T.t('health.state.downNow');
      else if (!b.working) state = T.t('health.paused');
      list.append(
        h(
          'li',
          { dataset: { boxId: b.id, working: String(b.working) } },
          h('span', { class: ['dot', b.working ? 'ok' : 'bad'] }),
          h('strong', { text: T.t('health.box', { id: b.id }) }),
          ' — ' + state,
          b.self ? h('span', { class: 'muted small-text', text: ' (' + T.t('health.this') + ')' }) : null,
          b.restart
            ? h('div', { class: ['small-text', b.restart.warn ? 'health-warn' : 'muted'], dataset: { restart: b.restart.reason } }, restartWords(T.t, b, now, lang))
            : null,
        ),
      );
    }

    const problems = clear($('#health-problems'));
    for (const b of hl.boxes) {
      if (!b.reachable) {
        problems.append(
          h(
            'div',
            { class: 'card health-problem', dataset: { problem: 'down', boxId: b.id } },
            h('p', { class: 'health-bad', text: downWords(T.t, b, now, lang) }),
            h(
              'details',
              { class: 'what-to-do' },
              h('summary', { text: T.t('health.whatToDo') }),
              h('ol', null, ['downStep1', 'downStep2', 'downStep3'].map((k) => h('li', { text: T.t('health.' + k, { id: b.id }) }))),
            ),
            h('button', { type: 'button', class: 'primary', dataset: { replace: b.id }, onclick: () => replaceClicked(b.id), text: T.t('health.replace', { id: b.id }) }),
          ),
        );
      } else if (b.disk) {
        problems.append(
          h(
            'div',
            { class: 'card health-problem', dataset: { problem: 'disk-' + b.disk.state, boxId: b.id } },
            h('p', { class: b.disk.state === 'low' ? 'health-warn' : 'health-bad', text: diskWords(T.t, b) }),
            h(
              'details',
              { class: 'what-to-do' },
              h('summary', { text: T.t('health.disk.how') }),
              h('ol', null, ['step1', 'step2', 'step3'].map((k) => h('li', { text: T.t('health.disk.' + k, { id: b.id }) }))),
            ),
          ),
        );
      }
      // A certificate that lapses within a month and that the box could
      // not renew: what happens, what to do, the reason for a technician.
      if (b.cert) {
        problems.append(
          h(
            'div',
            { class: 'card health-problem', dataset: { problem: 'cert', certProblem: b.cert.problem, boxId: b.id } },
            h('p', { class: 'health-warn', text: certWords(T.t, b, lang) }),
            h('details', { class: 'what-to-do', open: true }, h('summary', { text: T.t('health.cert.what') }), h('p', { text: certStep(T.t, b, lang) })),
            h('details', { class: 'cert-details' }, h('summary', { text: T.t('health.details') }), h('p', { class: 'mono small-text', text: certDetails(b.cert.raw) })),
          ),
        );
      }
    }
  }

  // replaceClicked: replacing needs the new box; the list of boxes found
  // in setup mode below offers "Replace c with this box".
  function replaceClicked(id) {
    const found = $('#found-boxes');
    if (found) found.scrollIntoView({ block: 'start' });
    lookForBoxes();
  }

  // ---- boxes in setup mode on the LAN: add one, or replace a dead box

  let found = null; // [{id, shortCode, hostname, model, windowOpen, codeRequired}]
  let looking = false;
  let join = null; // the join in progress or last done (JoinProgress)
  let joinTimer = null;

  async function lookForBoxes() {
    if (looking) return;
    looking = true;
    renderFound();
    try {
      const d = await api.get('/api/staff/cluster/setup-boxes', { timeoutMs: 10000 });
      found = (d && d.boxes) || [];
    } catch (e) {
      if (e.status === 401) return;
      found = [];
    } finally {
      looking = false;
    }
    renderFound();
  }

  async function followJoin() {
    clearTimeout(joinTimer);
    try {
      join = await api.get('/api/staff/cluster/join', { timeoutMs: 5000 });
    } catch (_) {
      // the next poll tells
    }
    renderFound();
    if (join && join.state === 'working') joinTimer = setTimeout(followJoin, 1000);
    else if (join && join.state === 'done') {
      found = null;
      lookForBoxes();
      refresh();
    }
  }

  async function joinBox(b, replace) {
    const code = b.shortCode;
    const ok = await confirmDialog(replace ? T.t('health.found.confirmReplace', { id: replace, code }) : T.t('health.found.confirmAdd', { code }), {
      ok: replace ? T.t('health.found.replace', { id: replace }) : T.t('health.found.add'),
      cancel: T.t('common.cancel'),
    });
    if (!ok) return;
    const input = $('#found-code-' + b.id);
    try {
      join = await api.post('/api/staff/cluster/setup-boxes/' + encodeURIComponent(b.id) + '/join', {
        replace: replace || undefined,
        setupCode: input && input.value ? input.value.trim() : undefined,
      });
    } catch (e) {
      join = { state: 'failed', shortCode: code, error: e.reasonCode, message: e.message };
    }
    renderFound();
    followJoin();
  }

  function joinWords(j) {
    const v = { code: j.shortCode || '', id: j.nodeId || '', old: j.replaces || '' };
    if (j.state === 'failed') return T.t('health.join.failed', { message: j.message || j.detail || j.error || '' });
    if (j.state === 'done') return T.t('health.join.ready', v);
    if (j.step) return T.t('health.join.' + j.step, v);
    return T.t('health.join.working', v);
  }

  function renderFound() {
    const prog = $('#join-progress');
    if (join && join.state !== 'idle') {
      prog.className = join.state === 'failed' ? 'health-bad' : join.state === 'done' ? 'health-ok' : 'health-warn';
      prog.dataset.state = join.state;
      prog.dataset.step = join.step || '';
      prog.textContent = joinWords(join);
      prog.hidden = false;
    } else prog.hidden = true;
    $('#found-reload').textContent = T.t(looking ? 'health.found.looking' : 'health.found.look');
    $('#found-reload').disabled = looking;
    // Setup codes typed so far survive the redraw.
    const typed = new Map(Array.from(document.querySelectorAll('#found-list input[id^="found-code-"]')).map((i) => [i.id, i.value]));
    const list = clear($('#found-list'));
    if (found && found.length === 0 && !looking) list.append(h('li', { class: 'muted', text: T.t('health.found.none') }));
    const down = status ? healthOf(status, Date.now()).boxes.filter((b) => !b.reachable) : [];
    const busy = join && join.state === 'working';
    for (const b of found || []) {
      const what = [b.hostname, b.model].filter(Boolean).join(' · ');
      list.append(
        h(
          'li',
          { dataset: { setupBoxId: b.id } },
          h('strong', { text: T.t('health.found.box', { code: b.shortCode }) }),
          what ? h('span', { class: 'muted', text: ' ' + what }) : null,
          !b.windowOpen ? h('p', { class: 'health-warn', text: T.t('health.found.closed') }) : null,
          b.codeRequired
            ? h('label', { class: 'found-code' }, T.t('health.found.code') + ' ', h('input', { id: 'found-code-' + b.id, type: 'text', autocomplete: 'off', value: typed.get('found-code-' + b.id) || null }))
            : null,
          h(
            'div',
            { class: 'row found-actions' },
            down.map((d) =>
              h('button', { type: 'button', class: 'primary', disabled: busy || !b.windowOpen, dataset: { joinReplace: d.id }, onclick: () => joinBox(b, d.id), text: T.t('health.found.replace', { id: d.id }) }),
            ),
            h('button', { type: 'button', class: down.length ? null : 'primary', disabled: busy || !b.windowOpen, dataset: { joinAdd: b.id }, onclick: () => joinBox(b, null), text: T.t('health.found.add') }),
          ),
        ),
      );
    }
  }

  return {
    bind: () => $('#found-reload').addEventListener('click', lookForBoxes),
    enter: () => {
      clearInterval(timer);
      refresh();
      lookForBoxes();
      followJoin();
      let ticks = 0;
      timer = setInterval(() => {
        if (document.visibilityState !== 'visible') return;
        refresh();
        // A box switched on while the page is open shows up by itself
        // (a browse every 10 s, only while this page is open).
        if (++ticks % FOUND_REFRESH_TICKS === 0 && !(join && join.state === 'working')) lookForBoxes();
      }, CLUSTER_REFRESH_MS);
    },
    leave: () => {
      clearInterval(timer);
      timer = null;
    },
    rerender: () => {
      render();
      renderFound();
    },
  };
}
