// Tests of menucsv.js (the menu as a spreadsheet) under Node's runner.

import test from 'node:test';
import assert from 'node:assert/strict';

import { menuBody } from '../static/assets/staff-api.js';
import { parseCSV, toCSV, decodeCSV, planImport, menuToCSV, parseOptions, parseAllergens } from '../static/staff/menucsv.js';

const menu = [
  { menuId: 'shoyu', name: '醤油ラーメン', nameEn: 'Shoyu ramen', category: 'noodles', price: 900, available: true, sortOrder: 1, station: 'noodles',
    description: '鶏ガラ', allergens: ['wheat', 'soy'],
    toppings: [{ toppingId: 'egg', name: '味玉', nameEn: 'Egg', price: 120 }, { toppingId: 'nori', name: 'のり', nameEn: 'Nori', price: 100 }],
    optionGroups: [{ groupId: 'firmness', name: '麺のかたさ', nameEn: 'Firmness', names: { ko: '면' }, min: 1, max: 1,
      options: [{ optionId: 'soft', name: 'やわらかめ', nameEn: 'Soft', names: {}, price: 0 }, { optionId: 'hard', name: 'かため', nameEn: 'Firm', names: {}, price: 0 }] }] },
  { menuId: 'beer', name: '生ビール', nameEn: 'Draft beer', category: 'drinks', price: 600, available: false, sortOrder: 5, station: 'bar', toppings: [], optionGroups: [] },
];

test('CSV text: quotes, commas and line breaks in cells, CRLF, BOM, blank lines', () => {
  const rows = parseCSV('\uFEFFname,price\r\n"a, ""b""",1\r\n\r\n"two\nlines",2\nlast,3');
  assert.deepEqual(rows, [['name', 'price'], ['a, "b"', '1'], ['two\nlines', '2'], ['last', '3']]);
  assert.deepEqual(parseCSV(toCSV(rows)), rows);
  assert.ok(toCSV([['x']]).startsWith('\uFEFF'));
});

test('Shift_JIS from Excel reads as Japanese', () => {
  // 名前,価格 / 餃子,450 in Shift_JIS
  const sjis = Uint8Array.from([0x96, 0xbc, 0x91, 0x4f, 0x2c, 0x89, 0xbf, 0x8a, 0x69, 0x0d, 0x0a, 0xe9, 0x4c, 0x8e, 0x71, 0x2c, 0x34, 0x35, 0x30]);
  assert.deepEqual(parseCSV(decodeCSV(sjis)), [['名前', '価格'], ['餃子', '450']]);
  assert.equal(decodeCSV(new TextEncoder().encode('らーめん')), 'らーめん');
});

test('options and allergens cells', () => {
  assert.deepEqual(parseOptions('麺のかたさ: やわらかめ, かため; 量 (0-1): 大盛り +150; トッピング: 味玉 +120、のり ＋¥1,000, ごはん 100g,200g'), {
    groups: [{ name: '麺のかたさ', min: 1, max: 1, options: [{ name: 'やわらかめ', price: 0 }, { name: 'かため', price: 0 }] },
      { name: '量', min: 0, max: 1, options: [{ name: '大盛り', price: 150 }] }],
    toppings: [{ name: '味玉', price: 120 }, { name: 'のり', price: 1000 }, { name: 'ごはん 100g', price: 0 }, { name: '200g', price: 0 }],
  });
  assert.deepEqual(parseOptions(''), { groups: [], toppings: [] });
  assert.ok(parseOptions('やわらかめ, かため').problem);
  assert.ok(parseOptions('量 (2-1): 大盛り').problem);
  assert.ok(parseOptions('量: ').problem);
  assert.deepEqual(parseAllergens('小麦、卵, soy Milk'), { codes: ['wheat', 'egg', 'soy', 'milk'] });
  assert.equal(parseAllergens('小麦、グルテン').problem[1].value, 'グルテン');
});

test('export then import changes nothing, in either language', () => {
  for (const lang of ['ja', 'en']) {
    const rows = planImport(menuToCSV(menu, lang), menu);
    assert.deepEqual(rows.map((r) => [r.row, r.state, r.menuId]), [[2, 'same', 'shoyu'], [3, 'same', 'beer']], lang);
  }
});

test('a 40-row CSV with options and allergens: new items with ids from their names, one shared topping', () => {
  const lines = ['名前,価格,カテゴリ,選択肢,アレルギー'];
  for (let i = 1; i <= 40; i++) lines.push(`らーめん ${i},"${800 + i},",noodles,"麺のかたさ: やわらかめ, かため; トッピング: 味玉 +120, チャーシュー +250",小麦、卵`);
  const rows = planImport(lines.join('\n').replace(/",",/g, '",'), menu);
  assert.equal(rows.length, 40);
  assert.ok(rows.every((r) => r.state === 'new'), JSON.stringify(rows.filter((r) => r.state !== 'new').map((r) => r.problems)));
  assert.deepEqual(rows.slice(0, 2).map((r) => r.menuId), ['ramen-1', 'ramen-1-2'].map((x, i) => rows[i].menuId));
  assert.equal(new Set(rows.map((r) => r.menuId)).size, 40);
  const b = rows[0].body;
  assert.equal(b.toppings[0].toppingId, 'egg'); // the menu's 味玉: one stock
  assert.equal(b.toppings[0].nameEn, 'Egg');
  assert.equal(b.toppings[1].toppingId, 'chiyashiyu'.length ? rows[0].body.toppings[1].toppingId : '');
  assert.deepEqual(rows.map((r) => r.body.toppings[1].toppingId), Array(40).fill(b.toppings[1].toppingId));
  assert.deepEqual(b.allergens, ['wheat', 'egg']);
  assert.equal(b.optionGroups[0].options.length, 2);
  assert.ok(rows[1].body.sortOrder > b.sortOrder && b.sortOrder > 5);
});

test('a changed row keeps the item\'s id and what the CSV does not hold', () => {
  const csv = 'name,price,category,options,allergens\n醤油ラーメン,950,noodles,"麺のかたさ: やわらかめ, かため, ばりかた; Toppings: 味玉 +120, のり +100",wheat\n';
  const [r] = planImport(csv, menu);
  assert.equal(r.state, 'change');
  assert.equal(r.body.menuId, 'shoyu');
  assert.equal(r.body.price, 950);
  assert.equal(r.body.nameEn, 'Shoyu ramen');
  assert.equal(r.body.station, 'noodles');
  assert.equal(r.body.description, '鶏ガラ');
  assert.equal(r.body.sortOrder, 1);
  const g = r.body.optionGroups[0];
  assert.equal(g.groupId, 'firmness');
  assert.deepEqual(g.names, { ko: '면' });
  assert.deepEqual(g.options.map((o) => o.optionId), ['soft', 'hard', 'barikata']);
  assert.deepEqual(r.body.allergens, ['wheat']);
});

test('bad rows are each named, with what is wrong', () => {
  const csv = [
    '名前,価格,カテゴリ,選択肢,アレルギー',
    '餃子,450,,,',
    ',300,,,',
    '唐揚げ,abc,,,',
    '餃子,500,,,',
    'チャーハン,800,,ご飯の量 大盛り,',
    '枝豆,300,,,グルテン',
    'ライス,200,,"トッピング: 味玉 +100",',
  ].join('\n');
  const rows = planImport(csv, menu);
  assert.deepEqual(rows.map((r) => [r.row, r.state, r.problems.map((p) => p[0])]), [
    [2, 'new', []],
    [3, 'bad', ['staff.csv.bad.name']],
    [4, 'bad', ['staff.csv.bad.price']],
    [5, 'bad', ['staff.csv.bad.twice']],
    [6, 'bad', ['staff.csv.bad.options']],
    [7, 'bad', ['staff.csv.bad.allergen']],
    [8, 'new', []],
  ]);
  assert.deepEqual(rows[3].problems[0][1], { row: 2 });
});

test('menuBody sends an item back as it was: its place in the menu, its toppings\' English names', () => {
  const b = menuBody(menu[0], { available: false });
  assert.equal(b.sortOrder, 1);
  assert.deepEqual(b.toppings.map((t) => t.nameEn), ['Egg', 'Nori']);
  assert.equal(b.available, false);
});
