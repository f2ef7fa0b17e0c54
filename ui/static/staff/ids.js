// ids.js — the ids of menu items, toppings and choices, made from their
// names: the owner never types one. An id once made stays (the stock and
// the orders name it); a new one is the name in Latin letters ("醤油らーめん"
// → "ramen", "Gyoza" → "gyoza"), with -2, -3 … when another thing has it.
// The server's rule for an id: [A-Za-z0-9_-]{1,64}.

export const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

// Kana in Latin letters (Hepburn), for the names most Japanese menus have.
const KANA = (
  'あa いi うu えe おo かka きki くku けke こko さsa しshi すsu せse そso たta ちchi つtsu てte とto ' +
  'なna にni ぬnu ねne のno はha ひhi ふfu へhe ほho まma みmi むmu めme もmo やya ゆyu よyo ' +
  'らra りri るru れre ろro わwa をo んn がga ぎgi ぐgu げge ごgo ざza じji ずzu ぜze ぞzo ' +
  'だda ぢji づzu でde どdo ばba びbi ぶbu べbe ぼbo ぱpa ぴpi ぷpu ぺpe ぽpo ' +
  'ぁa ぃi ぅu ぇe ぉo ゃya ゅyu ょyo ゎwa ゔvu'
)
  .split(' ')
  .reduce((m, p) => m.set(p[0], p.slice(1)), new Map());

// romaji writes kana in Latin letters and leaves the rest as it is:
// katakana as hiragana, きゃ → kya, しゃ → sha, っ doubles what follows, ー
// is dropped.
export function romaji(s) {
  const chars = [...String(s)].map((c) => {
    const cp = c.codePointAt(0);
    return cp >= 0x30a1 && cp <= 0x30f6 ? String.fromCodePoint(cp - 0x60) : c; // katakana → hiragana
  });
  let out = '';
  let double = false;
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c === 'っ') {
      double = true;
      continue;
    }
    if (c === 'ー') continue;
    let r = KANA.get(c);
    if (r === undefined) {
      out += c;
      double = false;
      continue;
    }
    const next = chars[i + 1];
    if ((next === 'ゃ' || next === 'ゅ' || next === 'ょ') && r.endsWith('i') && r.length > 1) {
      const y = KANA.get(next); // ya, yu, yo
      r = /^(sh|ch|j)/.test(r) ? r.slice(0, -1) + y.slice(1) : r.slice(0, -1) + y;
      i++;
    }
    if (double) r = (r.startsWith('ch') ? 't' : r[0]) + r;
    double = false;
    out += r;
  }
  return out;
}

// slugOf is text as an id's stem: Latin letters and digits, lower case,
// words joined by "-"; "" when nothing Latin is left.
export function slugOf(text) {
  return romaji(text)
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // é → e
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
}

// newId is an id for a new thing named names (the first that gives a
// stem; else fallback) that none of taken has: stem, stem-2, stem-3 …
export function newId(names, taken, fallback) {
  let stem = '';
  for (const n of names) {
    stem = slugOf(n || '');
    if (stem) break;
  }
  if (!stem) stem = fallback || 'item';
  const has = taken instanceof Set ? taken : new Set(taken || []);
  if (!has.has(stem)) return stem;
  for (let i = 2; ; i++) {
    const id = stem + '-' + i;
    if (!has.has(id)) return id;
  }
}
