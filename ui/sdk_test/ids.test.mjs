// Tests of ids.js (menu ids made from names) under Node's runner.

import test from 'node:test';
import assert from 'node:assert/strict';

import { romaji, slugOf, newId, ID_RE } from '../static/staff/ids.js';

test('kana in Latin letters', () => {
  assert.equal(romaji('らーめん'), 'ramen');
  assert.equal(romaji('ギョーザ'), 'gyoza');
  assert.equal(romaji('しょうゆ'), 'shouyu');
  assert.equal(romaji('チャーハン'), 'chahan');
  assert.equal(romaji('からあげ'), 'karaage');
  assert.equal(romaji('ビール'), 'biru');
  assert.equal(romaji('ちゃっちゃ'), 'chatcha');
  assert.equal(romaji('きっさ'), 'kissa');
});

test('names to ids', () => {
  assert.equal(slugOf('Tonkotsu Ramen'), 'tonkotsu-ramen');
  assert.equal(slugOf('醤油らーめん'), 'ramen');
  assert.equal(slugOf('Café Crème (L)'), 'cafe-creme-l');
  assert.equal(slugOf('餃子'), '');
  assert.equal(slugOf('  ラーメン 大盛り '), 'ramen-ri');
  for (const name of ['x'.repeat(200), 'らーめん'.repeat(40), 'Ａｂｃ１２３']) assert.match(slugOf(name), /^[a-z0-9-]{1,48}$/);
  assert.equal(slugOf('Ａｂｃ１２３'), 'abc123');
});

test('a new id: the first name that gives a stem, a suffix on a collision', () => {
  assert.equal(newId(['餃子', 'Gyoza'], []), 'gyoza');
  assert.equal(newId(['餃子', ''], []), 'item');
  assert.equal(newId(['餃子'], ['item', 'item-2']), 'item-3');
  assert.equal(newId(['Ramen'], new Set(['ramen'])), 'ramen-2');
  assert.equal(newId(['味玉'], [], 'topping'), 'topping');
  assert.match(newId(['x'.repeat(100)], ['x'.repeat(48)]), ID_RE);
});
