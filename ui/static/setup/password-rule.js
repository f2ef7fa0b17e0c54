// password-rule.js — init's password strength rule, checked in the setup
// page: the page sends the boxes only bcrypt hashes, so this is the one
// place the wizard's passwords can be checked. It is Go's
// orders/staffauth.CheckStrength line for line (lengths counted the same
// way: characters, UTF-8 bytes); ui/setup_page_node_test.go holds the two
// to the same verdicts and the same word list.

import { MAX_PASSWORD_BYTES } from './bcrypt.js';

export const MIN_PASSWORD_CHARS = 10;

// staffauth's commonWords.
export const COMMON_WORDS = [
  'password', 'passwort', 'letmein', 'welcome', 'qwerty', 'qwertyuiop',
  'admin', 'administrator', 'manager', 'kitchen', 'staff', 'master',
  'masterorder', 'order', 'ramen', 'sushi', 'restaurant', 'shop',
  'store', 'tenchou', 'changeme', 'secret', 'iloveyou', 'sunshine',
  'dragon', 'monkey', 'football', 'baseball', 'princess', 'default',
  'abcdefgh', 'abcdefghij', 'demo', 'test', 'guest', 'wifi',
  'passw0rd', 'trustno', 'superman', 'asdfghjkl', 'zxcvbnm',
];

// staffauth's leet: the usual letter-for-symbol swaps ("p@ssw0rd").
const LEET = { '@': 'a', '4': 'a', '0': 'o', '1': 'i', '!': 'i', '3': 'e', '$': 's', '5': 's', '7': 't' };

const utf8 = (s) => new TextEncoder().encode(s);

// lettersOf is pw lower-cased with everything but letters dropped, after
// undoing leet swaps when asked.
function lettersOf(pw, undoLeet) {
  let out = '';
  for (let ch of pw.toLowerCase()) {
    if (undoLeet && LEET[ch]) ch = LEET[ch];
    if (/\p{L}/u.test(ch)) out += ch;
  }
  return out;
}

// passwordProblem names what makes pw guessable ('short', 'long',
// 'repeats', 'run', 'digits', 'common'), or is '' for a good password.
export function passwordProblem(pw) {
  const bytes = utf8(pw);
  const chars = [...pw];
  if (chars.length < MIN_PASSWORD_CHARS) return 'short';
  if (bytes.length > MAX_PASSWORD_BYTES) return 'long';
  if (new Set(chars).size < 4) return 'repeats';
  let run = true;
  for (let i = 1; i < bytes.length; i++) {
    const d = bytes[i] - bytes[i - 1];
    if (d !== 1 && d !== -1) { run = false; break; }
  }
  if (run) return 'run';
  // Go compares the count of digit characters with the byte length.
  const digits = chars.filter((c) => /\p{Nd}/u.test(c)).length;
  if (digits === bytes.length && bytes.length < 16) return 'digits';
  for (const v of [lettersOf(pw, false), lettersOf(pw, true)]) {
    const vBytes = utf8(v).length;
    for (const w of COMMON_WORDS) {
      // The word itself, or the word with a few letters stuck on.
      if (v === w || (w.length >= 4 && vBytes - w.length <= 3 && (v.startsWith(w) || v.endsWith(w)))) return 'common';
    }
  }
  return '';
}
