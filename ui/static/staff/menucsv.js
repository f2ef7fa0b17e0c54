// menucsv.js — the menu as a spreadsheet: five columns (name, price,
// category, options, allergens), read from a CSV into what
// POST /api/staff/menu takes, and written back the same way. No DOM
// here: ui/sdk_test/menucsv.test.mjs runs it under Node.
//
// The options column holds an item's choice groups and toppings, groups
// apart by ";", a group's name before ":", its choices apart by ",", a
// price after "+":
//
//   麺のかたさ: やわらかめ, ふつう, かため; 量 (0-1): 大盛り +150; トッピング: 味玉 +120, のり +100
//
// A group asks for one choice unless "(min-max)" says otherwise; the group
// named トッピング (or Toppings) holds the item's toppings. Allergens are
// their names in Japanese or English (or the API's codes), apart by "," or
// "、". A row whose name is an item's already changes that item (its id,
// English name, station, pictures and words stay); another row makes a new
// item, its id made from its name (ids.js).

// Relative imports: Node resolves them as the browser does.
import { menuBody } from '../assets/staff-api.js';
import { ALLERGEN_CODES, ALLERGEN_NAMES } from './allergens.js';
import { newId } from './ids.js';

export const CSV_STRINGS = {
  ja: {
    'staff.csv.title': 'CSVで読み込む・書き出す',
    'staff.csv.help': '列は「名前, 価格, カテゴリ, 選択肢, アレルギー」。選択肢の書き方: 麺のかたさ: やわらかめ, かため; トッピング: 味玉 +120',
    'staff.csv.choose': 'CSVを読み込む',
    'staff.csv.export': 'CSVに書き出す',
    'staff.csv.row': '行',
    'staff.csv.result': '結果',
    'staff.csv.new': '新しい商品',
    'staff.csv.change': '変更',
    'staff.csv.same': '変更なし',
    'staff.csv.summary': '{rows} 行: 新しい商品 {new}、変更 {change}、変更なし {same}。「読み込む」を押すまで何も変わりません。',
    'staff.csv.summaryBad': '{bad} 行に問題があります（赤い行）。直したCSVを読み込み直してください。このままでは何も読み込みません。',
    'staff.csv.nothing': '変わるものはありません。',
    'staff.csv.import': '読み込む',
    'staff.csv.cancel': 'やめる',
    'staff.csv.done': '{n} 件の商品を読み込みました。',
    'staff.csv.empty': 'CSVに商品の行がありません。',
    'staff.csv.tooMany': '一度に読み込めるのは 500 行までです。',
    'staff.csv.bad.name': '名前がありません',
    'staff.csv.bad.nameLong': '名前が長すぎます（100文字まで）',
    'staff.csv.bad.twice': '同じ名前が {row} 行目にもあります',
    'staff.csv.bad.price': '価格は 0〜1,000,000 の整数で書いてください（「{value}」）',
    'staff.csv.bad.category': 'カテゴリが長すぎます（64文字まで）',
    'staff.csv.bad.options': '選択肢「{value}」が読めません（例: 麺のかたさ: やわらかめ, かため）',
    'staff.csv.bad.range': '選択肢「{value}」の (最小-最大) が正しくありません',
    'staff.csv.bad.allergen': 'アレルギー「{value}」がわかりません',
    'staff.csv.bad.toppingPrice': 'トッピング「{name}」は {row} 行目で {price} 円です。同じトッピングは同じ価格にしてください',
    'staff.csv.bad.server': 'お店のサーバーが受け付けませんでした: {message}',
    'staff.csv.col.name': '名前',
    'staff.csv.col.price': '価格',
    'staff.csv.col.category': 'カテゴリ',
    'staff.csv.col.options': '選択肢',
    'staff.csv.col.allergens': 'アレルギー',
  },
  en: {
    'staff.csv.title': 'Import or export a CSV',
    'staff.csv.help': 'Columns: name, price, category, options, allergens. Options are written like: Noodles: soft, firm; Toppings: egg +120',
    'staff.csv.choose': 'Import a CSV',
    'staff.csv.export': 'Export a CSV',
    'staff.csv.row': 'Row',
    'staff.csv.result': 'Result',
    'staff.csv.new': 'New item',
    'staff.csv.change': 'Changed',
    'staff.csv.same': 'Unchanged',
    'staff.csv.summary': '{rows} rows: {new} new items, {change} changed, {same} unchanged. Nothing changes until you tap “Import”.',
    'staff.csv.summaryBad': '{bad} rows have problems (in red). Fix the CSV and choose it again: as it is, nothing is imported.',
    'staff.csv.nothing': 'Nothing would change.',
    'staff.csv.import': 'Import',
    'staff.csv.cancel': 'Cancel',
    'staff.csv.done': '{n} items imported.',
    'staff.csv.empty': 'The CSV has no item rows.',
    'staff.csv.tooMany': 'At most 500 rows can be imported at once.',
    'staff.csv.bad.name': 'no name',
    'staff.csv.bad.nameLong': 'the name is too long (100 characters at most)',
    'staff.csv.bad.twice': 'the same name is on row {row} too',
    'staff.csv.bad.price': 'the price must be a whole number from 0 to 1,000,000 (“{value}”)',
    'staff.csv.bad.category': 'the category is too long (64 characters at most)',
    'staff.csv.bad.options': 'the options “{value}” cannot be read (write them like: Noodles: soft, firm)',
    'staff.csv.bad.range': 'the (min-max) of “{value}” is not right',
    'staff.csv.bad.allergen': 'unknown allergen “{value}”',
    'staff.csv.bad.toppingPrice': 'the topping “{name}” costs {price} on row {row}: one topping has one price',
    'staff.csv.bad.server': 'the store server refused it: {message}',
    'staff.csv.col.name': 'name',
    'staff.csv.col.price': 'price',
    'staff.csv.col.category': 'category',
    'staff.csv.col.options': 'options',
    'staff.csv.col.allergens': 'allergens',
  },
};

export const MAX_ROWS = 500;
const COLUMNS = ['name', 'price', 'category', 'options', 'allergens'];
const TOPPINGS = ['トッピング', 'toppings', 'topping'];

// ---------------------------------------------------------------- CSV text

// parseCSV reads RFC 4180 CSV (quotes, "" inside quotes, commas and line
// breaks inside quotes, CRLF or LF, a leading BOM) into rows of cells;
// blank lines are dropped.
export function parseCSV(text) {
  const s = String(text).replace(/^\uFEFF/, '');
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '"' && s[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell === '') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && s[i + 1] === '\n') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows.filter((r) => r.some((v) => v.trim() !== ''));
}

// toCSV writes rows as CSV for a spreadsheet: CRLF, a cell quoted when it
// needs it, a BOM first so that Excel reads the Japanese as UTF-8.
export function toCSV(rows) {
  const cell = (v) => {
    const s = v == null ? '' : String(v);
    return /[",\r\n]/.test(s) || /^\s|\s$/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  return '\uFEFF' + rows.map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
}

// decodeCSV turns a file's bytes into text: UTF-8, else Shift_JIS (what
// Excel saves a Japanese "CSV" as).
export function decodeCSV(bytes) {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (_) {
    return new TextDecoder('shift_jis').decode(bytes);
  }
}

// ---------------------------------------------------------------- the columns

function headerNames(lang) {
  return COLUMNS.map((c) => CSV_STRINGS[lang === 'en' ? 'en' : 'ja']['staff.csv.col.' + c]);
}

// columnsOf maps a header row to column positions, or null when the row
// is no header (then the columns are in the usual order).
function columnsOf(row) {
  const known = {
    name: ['name', '名前', '商品名', 'なまえ'],
    price: ['price', '価格', '値段', '金額'],
    category: ['category', 'カテゴリ', 'カテゴリー', '分類'],
    options: ['options', 'option', '選択肢', 'オプション'],
    allergens: ['allergens', 'allergen', 'アレルギー', 'アレルゲン', 'アレルギー物質'],
  };
  const at = {};
  row.forEach((v, i) => {
    const k = v.trim().toLowerCase();
    for (const [col, names] of Object.entries(known)) if (names.includes(k) && !(col in at)) at[col] = i;
  });
  return 'name' in at && 'price' in at ? at : null;
}

function yenText(n) {
  return n > 0 ? ' +' + n : '';
}

// optionsText is an item's options cell.
export function optionsText(item, lang) {
  const parts = [];
  for (const g of item.optionGroups || []) {
    const range = g.min === 1 && g.max === 1 ? '' : ' (' + g.min + '-' + g.max + ')';
    parts.push(g.name + range + ': ' + (g.options || []).map((o) => o.name + yenText(o.price)).join(', '));
  }
  if ((item.toppings || []).length) {
    parts.push((lang === 'en' ? 'Toppings' : 'トッピング') + ': ' + item.toppings.map((t) => t.name + yenText(t.price)).join(', '));
  }
  return parts.join('; ');
}

function allergenText(item, lang) {
  const names = ALLERGEN_NAMES[lang === 'en' ? 'en' : 'ja'];
  return (item.allergens || []).map((c) => names[ALLERGEN_CODES.indexOf(c)] || c).join(lang === 'en' ? ', ' : '、');
}

// menuToCSV is the menu as a CSV, with a header in lang.
export function menuToCSV(items, lang) {
  const rows = [headerNames(lang)];
  for (const it of items) rows.push([it.name, String(it.price), it.category || '', optionsText(it, lang), allergenText(it, lang)]);
  return toCSV(rows);
}

// parsePrice reads "1200", "1,200", "¥1,200" or "1200円".
function parsePrice(v) {
  const s = String(v).normalize('NFKC').replace(/[¥,\s円]/g, '');
  if (!/^\d{1,7}$/.test(s)) return NaN;
  const n = Number(s);
  return n <= 1_000_000 ? n : NaN;
}

// parseOptions reads an options cell: {groups: [{name, min, max,
// options: [{name, price}]}], toppings: [{name, price}]} or {problem}.
export function parseOptions(cell) {
  const groups = [];
  const toppings = [];
  for (const raw of String(cell).split(/[;；]/)) {
    const part = raw.trim();
    if (!part) continue;
    const m = /^(.+?)\s*(?:[(（]\s*([^)）]*)[)）])?\s*[:：]\s*(.*)$/s.exec(part);
    if (!m || !m[1].trim()) return { problem: ['staff.csv.bad.options', { value: part }] };
    const name = m[1].trim();
    let min = 1;
    let max = 1;
    if (m[2] !== undefined) {
      const r = /^(\d+)\s*[-–〜~]\s*(\d+)$/.exec(m[2].normalize('NFKC').trim());
      if (!r || Number(r[1]) > Number(r[2]) || Number(r[2]) < 1) return { problem: ['staff.csv.bad.range', { value: part }] };
      min = Number(r[1]);
      max = Number(r[2]);
    }
    const choices = [];
    // "," parts the choices, except inside a price's thousands ("+1,200").
    for (const c of m[3].split(/[、，]|(?<!\d),|,(?!\d{3}(?!\d))/)) {
      const t = c.trim();
      if (!t) continue;
      const p = /^(.*?)\s*[+＋]\s*([¥￥]?\s*[\d,０-９]+\s*円?)$/.exec(t);
      const choice = { name: (p ? p[1] : t).trim(), price: p ? parsePrice(p[2]) : 0 };
      if (!choice.name || !Number.isFinite(choice.price)) return { problem: ['staff.csv.bad.options', { value: part }] };
      choices.push(choice);
    }
    if (!choices.length) return { problem: ['staff.csv.bad.options', { value: part }] };
    if (TOPPINGS.includes(name.toLowerCase())) toppings.push(...choices);
    else groups.push({ name, min, max, options: choices });
  }
  return { groups, toppings };
}

// parseAllergens reads an allergens cell into codes, or {problem}.
export function parseAllergens(cell) {
  const codes = [];
  for (const raw of String(cell).split(/[,、，/／;；\s]+/)) {
    const t = raw.trim().toLowerCase();
    if (!t) continue;
    let i = ALLERGEN_CODES.indexOf(t);
    if (i < 0) i = ALLERGEN_NAMES.ja.indexOf(raw.trim());
    if (i < 0) i = ALLERGEN_NAMES.en.findIndex((n) => n.toLowerCase() === t);
    if (i < 0) return { problem: ['staff.csv.bad.allergen', { value: raw.trim() }] };
    if (!codes.includes(ALLERGEN_CODES[i])) codes.push(ALLERGEN_CODES[i]);
  }
  return { codes };
}

// ---------------------------------------------------------------- the plan

// planImport reads CSV text against the menu as it is (items: the staff
// menu's items). Each row comes back with its number (as a spreadsheet
// counts, the header being 1), its name, price, category, state ("new",
// "change", "same" or "bad"), problems ([key, params] each) and, unless
// bad, the body the import sends for it (with its menuId).
export function planImport(text, items) {
  const cells = parseCSV(text);
  const header = cells.length ? columnsOf(cells[0]) : null;
  const at = header || { name: 0, price: 1, category: 2, options: 3, allergens: 4 };
  const first = header ? 2 : 1;
  const data = header ? cells.slice(1) : cells;
  const byName = new Map(items.map((it) => [it.name, it]));
  const taken = new Set();
  // A topping's name → the topping in the menu: one topping (its stock,
  // its English name) however many items offer it.
  const toppingsByName = new Map();
  for (const it of items) {
    taken.add(it.menuId);
    for (const t of it.toppings || []) {
      taken.add(t.toppingId);
      if (!toppingsByName.has(t.name)) toppingsByName.set(t.name, t);
    }
  }
  let nextSort = Math.max(0, ...items.map((it) => Number(it.sortOrder) || 0));
  const seen = new Map(); // name → row number
  const toppingPrices = new Map(); // a topping's name → [price, row] in this CSV
  const rows = data.map((r, i) => {
    const cell = (col) => (at[col] === undefined ? '' : String(r[at[col]] || '').trim());
    const row = { row: first + i, name: cell('name'), price: cell('price'), category: cell('category'), problems: [] };
    const bad = (key, params) => row.problems.push([key, params]);
    if (!row.name) bad('staff.csv.bad.name');
    else if ([...row.name].length > 100) bad('staff.csv.bad.nameLong');
    else if (seen.has(row.name)) bad('staff.csv.bad.twice', { row: seen.get(row.name) });
    else seen.set(row.name, row.row);
    const price = parsePrice(row.price);
    if (!Number.isFinite(price)) bad('staff.csv.bad.price', { value: row.price });
    if ([...row.category].length > 64) bad('staff.csv.bad.category');
    const opts = parseOptions(cell('options'));
    if (opts.problem) bad(...opts.problem);
    const allergens = parseAllergens(cell('allergens'));
    if (allergens.problem) bad(...allergens.problem);
    // A topping is one thing with one price, whichever item offers it.
    for (const t of opts.toppings || []) {
      const first = toppingPrices.get(t.name);
      if (!first) toppingPrices.set(t.name, [t.price, row.row]);
      else if (first[0] !== t.price) bad('staff.csv.bad.toppingPrice', { name: t.name, price: first[0], row: first[1] });
    }
    if (row.problems.length) {
      row.state = 'bad';
      return row;
    }
    const old = byName.get(row.name);
    const menuId = old ? old.menuId : newId([row.name], taken, 'item');
    taken.add(menuId);
    const toppings = opts.toppings.map((t) => {
      let known = toppingsByName.get(t.name);
      if (!known) {
        known = { toppingId: newId([t.name], taken, 'topping'), name: t.name, nameEn: '' };
        taken.add(known.toppingId);
        toppingsByName.set(t.name, known);
      }
      return { toppingId: known.toppingId, name: t.name, nameEn: known.nameEn || '', price: t.price };
    });
    const groupIds = new Set();
    const optionGroups = opts.groups.map((g) => {
      const before = old && (old.optionGroups || []).find((x) => x.name === g.name);
      const groupId = before ? before.groupId : newId([g.name], new Set([...groupIds, ...((old && old.optionGroups) || []).map((x) => x.groupId)]), 'choice');
      groupIds.add(groupId);
      const optionIds = new Set(((before && before.options) || []).map((o) => o.optionId));
      const options = g.options.map((o) => {
        const was = before && before.options.find((x) => x.name === o.name);
        const optionId = was ? was.optionId : newId([o.name], optionIds, 'option');
        optionIds.add(optionId);
        return { optionId, name: o.name, nameEn: (was && was.nameEn) || '', names: (was && was.names) || {}, price: o.price };
      });
      return { groupId, name: g.name, nameEn: (before && before.nameEn) || '', names: (before && before.names) || {}, min: g.min, max: g.max, options };
    });
    const changes = { name: row.name, price, category: row.category, toppings, optionGroups, allergens: allergens.codes };
    const base = old || { available: true, station: 'kitchen', sortOrder: ++nextSort };
    row.body = Object.assign({ menuId }, menuBody(base, changes));
    row.menuId = menuId;
    row.state = !old ? 'new' : same(row.body, old) ? 'same' : 'change';
    return row;
  });
  return rows;
}

// same reports that body would write old as it is.
function same(body, old) {
  const was = Object.assign({ menuId: old.menuId }, menuBody(old));
  return canon(was) === canon(body);
}

function canon(v) {
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  if (v && typeof v === 'object') {
    return '{' + Object.keys(v).filter((k) => v[k] !== undefined && !(k === 'allergens' && !v[k].length) && !(k === 'names' && !Object.keys(v[k]).length)).sort().map((k) => JSON.stringify(k) + ':' + canon(v[k])).join(',') + '}';
  }
  return JSON.stringify(v);
}
