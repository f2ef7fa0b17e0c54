// The setup page's secret handling, run under Node for
// ui/setup_page_node_test.go: reads a JSON job on stdin, answers JSON on
// stdout. The Go test judges the answers with Go's own bcrypt and
// staffauth, so this file only runs the page's code.
//
//   in:  {"hash": [{"password", "cost"?, "salt"?}], "rule": ["password", ...]}
//   out: {"hashes": [...], "problems": [...], "commonWords": [...],
//         "strings": {"ja": {"weak", "same"}, "en": {...}}, "hashMs": [...]}

import { bcryptHash } from '../static/setup/bcrypt.js';
import { passwordProblem, COMMON_WORDS } from '../static/setup/password-rule.js';
import { STRINGS } from '../static/setup/strings.js';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const job = JSON.parse(input);

const hashes = [];
const hashMs = [];
for (const { password, cost, salt } of job.hash || []) {
  const start = performance.now();
  hashes.push(await bcryptHash(password, { cost, salt }));
  hashMs.push(Math.round(performance.now() - start));
}
const strings = {};
for (const lang of ['ja', 'en']) strings[lang] = { weak: STRINGS[lang]['setup.shop.weak'], same: STRINGS[lang]['setup.shop.same'] };

process.stdout.write(JSON.stringify({
  hashes,
  hashMs,
  problems: (job.rule || []).map(passwordProblem),
  commonWords: COMMON_WORDS,
  strings,
}));
