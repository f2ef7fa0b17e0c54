// bcrypt.js — bcrypt password hashes made in the browser, in the "$2a$"
// format Go's golang.org/x/crypto/bcrypt makes and checks, so the setup
// page sends a box its staff password hashes and never the passwords.
// The page is served over plain HTTP on the store Wi-Fi, where a browser
// has no crypto.subtle; crypto.getRandomValues (for the salt) works there.
//
// Written from the algorithm (Provos and Mazières, "A Future-Adaptable
// Password Scheme", 1999):
//   1. Blowfish starts from the digits of pi (blowfish-const.js);
//   2. the salted key schedule mixes in the password (with its trailing
//      NUL byte, as C bcrypt and Go do) and the 16-byte salt;
//   3. 2^cost times, the schedule is re-keyed with the password, then
//      with the salt ("eksblowfish": the expensive part);
//   4. "OrpheanBeholderScryDoubt" is encrypted 64 times; its first 23
//      bytes, after the cost and salt, in bcrypt's base64, are the hash.

import { P, S0, S1, S2, S3 } from './blowfish-const.js';

// bcrypt reads at most 72 bytes; longer passwords are refused (as the
// boxes' staffauth does) rather than cut short without a word.
export const MAX_PASSWORD_BYTES = 72;
export const DEFAULT_COST = 10; // Go's bcrypt.DefaultCost, what init uses
const SALT_BYTES = 16;
const HASH_BYTES = 23; // of the 24 encrypted, as every bcrypt keeps
const MAGIC = 'OrpheanBeholderScryDoubt';

// bcrypt's base64: its own alphabet, no padding.
const ALPHABET = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function encodeBase64(bytes) {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = bytes.length - i; // 1, 2 or 3 bytes left in this group
    const v = (bytes[i] << 16) | ((n > 1 ? bytes[i + 1] : 0) << 8) | (n > 2 ? bytes[i + 2] : 0);
    const chars = n === 1 ? 2 : n === 2 ? 3 : 4;
    for (let c = 0; c < chars; c++) out += ALPHABET[(v >>> (18 - 6 * c)) & 63];
  }
  return out;
}

export function decodeBase64(text, length) {
  const bytes = new Uint8Array(length);
  let bits = 0, nbits = 0, at = 0;
  for (const ch of text) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) throw new Error('bcrypt: bad base64 character ' + JSON.stringify(ch));
    bits = (bits << 6) | v;
    nbits += 6;
    if (nbits >= 8 && at < length) {
      nbits -= 8;
      bytes[at++] = (bits >>> nbits) & 0xff;
    }
  }
  if (at !== length) throw new Error('bcrypt: base64 too short');
  return bytes;
}

// ---- Blowfish, its state in one array: the P-array (18 words), then the
// four S-boxes (256 words each).

const S0_AT = 18, S1_AT = S0_AT + 256, S2_AT = S1_AT + 256, S3_AT = S2_AT + 256;
const STATE_WORDS = S3_AT + 256;

function initialState() {
  const st = new Uint32Array(STATE_WORDS);
  st.set(P, 0);
  st.set(S0, S0_AT);
  st.set(S1, S1_AT);
  st.set(S2, S2_AT);
  st.set(S3, S3_AT);
  return st;
}

// Blowfish's round function F.
function F(st, x) {
  return ((st[S0_AT + (x >>> 24)] + st[S1_AT + ((x >>> 16) & 0xff)]) ^ st[S2_AT + ((x >>> 8) & 0xff)]) + st[S3_AT + (x & 0xff)];
}

// encrypt enciphers the 64-bit block lr[0] (left), lr[1] (right) in place.
function encrypt(st, lr) {
  let l = lr[0], r = lr[1];
  l ^= st[0];
  for (let i = 1; i < 17; i += 2) {
    r ^= F(st, l) ^ st[i];
    l ^= F(st, r) ^ st[i + 1];
  }
  r ^= st[17];
  lr[0] = r; // the halves swap, as in every Feistel cipher's last round
  lr[1] = l;
}

// nextWord reads 4 bytes of data, big-endian, going round the data
// cyclically from cursor.at.
function nextWord(data, cursor) {
  let w = 0;
  for (let i = 0; i < 4; i++) {
    w = (w << 8) | data[cursor.at];
    cursor.at = (cursor.at + 1) % data.length;
  }
  return w >>> 0;
}

// expandKey is Blowfish's key schedule: key is XORed into the P-array,
// then the whole state is replaced, two words at a time, by encrypting a
// running block, into which the salt (when there is one) is XORed first.
function expandKey(st, key, salt) {
  const k = { at: 0 };
  for (let i = 0; i < 18; i++) st[i] ^= nextWord(key, k);
  const s = { at: 0 };
  const lr = new Uint32Array(2);
  for (let i = 0; i < STATE_WORDS; i += 2) {
    if (salt) {
      lr[0] ^= nextWord(salt, s);
      lr[1] ^= nextWord(salt, s);
    }
    encrypt(st, lr);
    st[i] = lr[0];
    st[i + 1] = lr[1];
  }
}

// The browser must paint ("working…") and stay responsive while the ~1000
// rounds run: the work gives the event loop a turn every so many rounds.
// A message to itself, not setTimeout(0): browsers hold nested timers
// back 4 ms each, which added ~70 ms to a hash.
const ROUNDS_PER_TURN = 64;
function nextTurn() {
  if (typeof MessageChannel !== 'function') return new Promise((resolve) => setTimeout(resolve, 0));
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => { ch.port1.close(); resolve(); };
    ch.port2.postMessage(null);
  });
}

async function eksblowfish(cost, salt, key) {
  const st = initialState();
  expandKey(st, key, salt);
  const rounds = 2 ** cost;
  for (let i = 0; i < rounds; i++) {
    expandKey(st, key, null);
    expandKey(st, salt, null);
    if ((i + 1) % ROUNDS_PER_TURN === 0) await nextTurn();
  }
  return st;
}

function utf8(password) {
  return new TextEncoder().encode(password);
}

// passwordBytes is the password's UTF-8 length, the one bcrypt's 72-byte
// limit counts.
export function passwordBytes(password) {
  return utf8(password).length;
}

// bcryptHash resolves to the bcrypt hash of password ("$2a$10$" and 53
// characters). cost is log2 of the rounds (4-31); salt is 22 characters
// of bcrypt base64 (for known test vectors), else 16 random bytes.
export async function bcryptHash(password, { cost = DEFAULT_COST, salt } = {}) {
  const pw = utf8(password);
  if (pw.length === 0) throw new Error('bcrypt: empty password');
  if (pw.length > MAX_PASSWORD_BYTES) throw new Error('bcrypt: password longer than 72 bytes');
  if (!Number.isInteger(cost) || cost < 4 || cost > 31) throw new Error('bcrypt: cost must be 4 to 31');
  let saltBytes;
  if (salt === undefined) {
    saltBytes = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  } else {
    if (typeof salt !== 'string' || salt.length !== 22) throw new Error('bcrypt: salt must be 22 base64 characters');
    saltBytes = decodeBase64(salt, SALT_BYTES);
  }
  const key = new Uint8Array(pw.length + 1); // with its trailing NUL
  key.set(pw);
  const st = await eksblowfish(cost, saltBytes, key);

  const magic = utf8(MAGIC);
  const block = new Uint32Array(magic.length / 4);
  for (let i = 0; i < block.length; i++) block[i] = nextWord(magic, { at: 4 * i });
  for (let i = 0; i < block.length; i += 2) {
    const lr = block.subarray(i, i + 2);
    for (let n = 0; n < 64; n++) encrypt(st, lr);
  }
  const out = new Uint8Array(4 * block.length);
  block.forEach((w, i) => {
    out[4 * i] = w >>> 24;
    out[4 * i + 1] = w >>> 16;
    out[4 * i + 2] = w >>> 8;
    out[4 * i + 3] = w;
  });
  return '$2a$' + String(cost).padStart(2, '0') + '$' + encodeBase64(saltBytes) + encodeBase64(out.subarray(0, HASH_BYTES));
}
