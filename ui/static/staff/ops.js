// ops.js — the staff console's operations pages: audit log, locks, and the
// cluster page.

import { nodeBase, fetchWithTimeout } from '/assets/cluster.js';
import { $, h, clear, show, dateTimeOf, toast, confirmDialog } from '/assets/dom.js';

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

export function createClusterPage({ api, T }) {
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
        const base = nodeBase(n.httpAddr, location.origin);
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
    if (failure) warn.append(h('p', { class: 'error', text: T.t('staff.cluster.unavailable', { message: failure.message }) }));
    $('#cluster-updated').textContent = updatedAt ? T.t('staff.cluster.updated', { time: updatedAt.toLocaleTimeString() }) : '';
    const sum = clear($('#cluster-summary'));
    const cloud = clear($('#cluster-cloud'));
    const nodes = clear($('#cluster-nodes'));
    if (!status) return;
    const st = status;
    if (!st.leader) warn.append(h('p', { class: 'error', text: T.t('staff.cluster.leader') + ': ' + T.t('staff.cluster.noLeader') }));
    if (st.clockSuspect) warn.append(h('p', { class: 'notice', text: T.t('staff.cluster.clockSuspect') }));
    const down = (st.nodes || []).filter((n) => n.reachable === false).map((n) => n.id);
    if (down.length) warn.append(h('p', { class: 'error', text: T.t('staff.cluster.unreachable', { ids: down.join(', ') }) }));

    kv(sum, T.t('staff.cluster.nodeId'), st.nodeId);
    kv(sum, T.t('staff.cluster.state'), st.state, 'state-' + st.state);
    kv(sum, T.t('staff.cluster.leader'), st.leader ? st.leader.id + ' (' + st.leader.httpAddr + ')' : T.t('staff.cluster.noLeader'));
    kv(sum, T.t('staff.cluster.term'), String(st.term));
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
        ),
      );
    }
  }

  return {
    enter: () => {
      clearInterval(timer);
      refresh();
      timer = setInterval(() => {
        if (document.visibilityState === 'visible') refresh();
      }, CLUSTER_REFRESH_MS);
    },
    leave: () => {
      clearInterval(timer);
      timer = null;
    },
    rerender: render,
  };
}
