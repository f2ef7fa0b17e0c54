// Tests of health.js (the owner's view of the boxes) under Node's runner.

import test from 'node:test';
import assert from 'node:assert/strict';

import { healthOf, bannerLines, restartWords, restartDetails, BANNER_AFTER_MS, HEALTH_STRINGS } from '../static/assets/health.js';

const t = (k, v) => HEALTH_STRINGS.en[k].replace(/\{(\w+)\}/g, (_, n) => String(v[n]));
const now = Date.parse('2026-12-03T10:50:00Z');

function status(nodes, extra) {
  return Object.assign({ nodeId: 'a', leader: { id: 'a', httpAddr: 'x' }, stale: false, clockSuspect: false, nodes }, extra);
}

test('three boxes answering: 3 of 3 working, no banner', () => {
  const h = healthOf(status([{ id: 'a', reachable: true }, { id: 'b', reachable: true }, { id: 'c', reachable: true }]), now);
  assert.equal(h.working, 3);
  assert.equal(h.total, 3);
  assert.equal(h.need, 2);
  assert.equal(h.banner.length, 0);
});

test('a box silent for two minutes is down but not yet a banner; after five it is', () => {
  const two = new Date(now - 2 * 60 * 1000).toISOString();
  let h = healthOf(status([{ id: 'a', reachable: true }, { id: 'b', reachable: true }, { id: 'c', reachable: false, downSince: two }]), now);
  assert.equal(h.working, 2);
  assert.equal(h.boxes[2].downForMs, 2 * 60 * 1000);
  assert.equal(h.banner.length, 0);
  const six = new Date(now - BANNER_AFTER_MS - 60 * 1000).toISOString();
  h = healthOf(status([{ id: 'a', reachable: true }, { id: 'b', reachable: true }, { id: 'c', reachable: false, downSince: six }]), now);
  assert.deepEqual(h.banner.map((b) => b.id), ['c']);
  const lines = bannerLines(t, h, now, 'en', 'health.banner.kitchen');
  assert.match(lines[0], /^Box c has not answered since \d\d:\d\d\. Orders continue on the other boxes\.$/);
  assert.equal(lines[1], 'Please tell the manager.');
});

test('a suspect clock gives no time and no banner for a silent box', () => {
  const h = healthOf(status([{ id: 'a' }, { id: 'c', reachable: false, downSince: '1970-01-01T00:01:00Z' }], { clockSuspect: true }), now);
  assert.equal(h.boxes[1].downForMs, null);
  assert.equal(h.banner.length, 0);
});

test('no source gave the time: the prompt is asked with the time the boxes go by; a suspect clock close to the browser still dates a silent box', () => {
  const wall = now - 3 * 60 * 60 * 1000;
  let h = healthOf(status([{ id: 'a' }], { clockSuspect: true, clock: { source: 'unknown', trusted: false, wall, clusterTrusted: false, clusterWall: wall } }), now);
  assert.equal(h.clockAsk, true);
  assert.equal(h.clockWall, wall);
  // Another box trusts its clock: nothing to ask.
  h = healthOf(status([{ id: 'a' }], { clockSuspect: true, clock: { source: 'unknown', trusted: false, wall, clusterTrusted: true, clusterWall: wall } }), now);
  assert.equal(h.clockAsk, false);
  // An older box's status has no clock: nothing to ask.
  assert.equal(healthOf(status([{ id: 'a' }]), now).clockAsk, false);
  const six = new Date(now - BANNER_AFTER_MS - 60 * 1000).toISOString();
  h = healthOf(
    status([{ id: 'a' }, { id: 'c', reachable: false, downSince: six }], {
      clockSuspect: true,
      clock: { source: 'unknown', trusted: false, wall: now + 1000, clusterTrusted: false, clusterWall: now + 1000 },
    }),
    now,
  );
  assert.deepEqual(h.banner.map((b) => b.id), ['c']);
});

test('memory cards: full and read-only pause a box, low and slow warn; the answering box uses the top-level disk', () => {
  const h = healthOf(
    status(
      [
        { id: 'a', reachable: true },
        { id: 'b', reachable: true, disk: { state: 'full', freeBytes: 0, totalBytes: 32e9 } },
        { id: 'c', reachable: true, disk: { state: 'ok', freeBytes: 20e9, totalBytes: 32e9 } },
      ],
      { disk: { state: 'slow', freeBytes: 10e9, totalBytes: 32e9 } },
    ),
    now,
  );
  assert.equal(h.working, 2);
  assert.deepEqual(h.banner.map((b) => b.id + ':' + b.disk.state), ['a:slow', 'b:full']);
  const lines = bannerLines(t, h, now, 'en', null);
  assert.equal(lines[1], 'Box b’s memory card is full. Orders continue on the other boxes; replace the card.');
});

test('no leader: no quorum', () => {
  const h = healthOf(status([{ id: 'a' }, { id: 'b', reachable: false }, { id: 'c', reachable: false }], { leader: null, stale: true }), now);
  assert.equal(h.quorum, false);
  assert.equal(h.working, 1);
});

test('last restarts: words per reason in both languages, a warning for a day unless it was a clean stop, systemd under details', () => {
  const at = new Date(now - 60 * 60 * 1000).toISOString();
  const old = new Date(now - 3 * 24 * 60 * 60 * 1000).toISOString();
  const h = healthOf(
    status([
      { id: 'a', reachable: true },
      { id: 'b', reachable: true, lastRestart: { reason: 'watchdog', at, rebooted: false, serviceResult: 'watchdog', exitCode: 'killed', exitStatus: 'KILL' } },
      { id: 'c', reachable: true, lastRestart: { reason: 'stop', at, rebooted: false } },
      { id: 'd', reachable: true, lastRestart: { reason: 'power', at: old, rebooted: true } },
      { id: 'e', reachable: true, lastRestart: { reason: 'something-new', at, rebooted: false } },
    ]),
    now,
  );
  assert.equal(h.boxes[0].restart, null);
  assert.deepEqual(h.boxes.slice(1).map((b) => b.restart.reason + ':' + b.restart.warn), ['watchdog:true', 'stop:false', 'power:false', 'unknown:true']);
  assert.match(restartWords(t, h.boxes[1], now, 'en'), /^Restarted itself at \d\d:\d\d after it stopped answering$/);
  assert.match(restartWords(t, h.boxes[3], now, 'en'), /^Started at \d+\/\d+ \d\d:\d\d after the power was cut or the box froze$/);
  const ja = (k, v) => HEALTH_STRINGS.ja[k].replace(/\{(\w+)\}/g, (_, n) => String(v[n]));
  assert.match(restartWords(ja, h.boxes[1], now, 'ja'), /^\d\d:\d\d に自動で再起動しました（応答しなくなったため）$/);
  assert.equal(restartDetails(h.boxes[1].restart.raw), 'watchdog; watchdog killed KILL');
  assert.equal(restartDetails(h.boxes[3].restart.raw), 'power; rebooted');
  for (const lang of ['ja', 'en']) {
    for (const r of ['stop', 'watchdog', 'crash', 'error', 'killed', 'oom', 'timeout', 'power', 'unknown']) {
      assert.ok(HEALTH_STRINGS[lang]['health.restart.' + r].includes('{time}'), lang + ' ' + r);
    }
  }
});
