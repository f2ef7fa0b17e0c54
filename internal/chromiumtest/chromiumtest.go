// Package chromiumtest is what the browser tests' harnesses (ui/browsertest,
// the setup wizard's in cli) share about the Chromium they start.
package chromiumtest

import (
	"os"
	"os/exec"
	"testing"
)

// Path finds the browser: MO_CHROMIUM, then chromium on PATH, then
// Debian's /usr/bin/chromium. Without one the test is skipped, except in CI.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; CI must run the browser tests (.ci/run installs it with apt-get install chromium)")
	}
	t.Skip("chromium is not installed: skipping the browser tests (apt-get install chromium, or set MO_CHROMIUM=/path/to/chromium)")
	return ""
}

// TempDir is a folder for the browser's temporary files (its profile's
// lock socket), to pass as its TMPDIR; it is removed when the test ends. A
// browser killed at a test's end leaves those files behind, in /tmp
// without it. Short, in /tmp: a socket's path is at most 107 bytes, and
// t.TempDir() is named after the test. Call it before registering the
// cleanup that stops the browser, so that the browser is stopped first.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mo-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
