// Package browsertest drives the web apps of ui/ in a real Chromium against
// an in-process three-node cluster: a guest ordering from a phone, the
// kitchen display following the orders live and failing over when its node
// dies, and the staff console opening a table and checking it out. It also
// saves screenshots of the pages at phone and tablet widths under the
// repository's screenshots/ folder (ignored by git).
//
// The package holds only tests. They need Debian's chromium
// (/usr/bin/chromium, or MO_CHROMIUM=/path): without it they are skipped,
// except in CI (CI=true), where a missing browser is a failure.
package browsertest
