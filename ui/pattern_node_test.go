package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

var patternAttr = regexp.MustCompile(`\bpattern="([^"]*)"`)

// TestInputPatternsCompileInVMode: every pattern="…" of the pages is a
// regular expression the browser takes. Browsers compile a pattern with
// the v flag, where "[A-Za-z0-9_-]" is a syntax error: Chrome then logs an
// error and drops the check. Node compiles them the same way.
func TestInputPatternsCompileInVMode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not on PATH; CI must check the pages' input patterns")
		}
		t.Skip("node is not on PATH: skipping the pattern check")
	}
	var patterns []string
	where := map[string]string{}
	for name, src := range staticFiles(t, ".html") {
		for _, m := range patternAttr.FindAllStringSubmatch(src, -1) {
			p := html.UnescapeString(m[1])
			patterns = append(patterns, p)
			where[p] = name
		}
	}
	if len(patterns) == 0 {
		t.Fatal("no pattern attributes found")
	}
	in, _ := json.Marshal(patterns)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := `const ps = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const bad = {};
for (const p of ps) { try { new RegExp('^(?:' + p + ')$', 'v'); } catch (e) { bad[p] = e.message; } }
process.stdout.write(JSON.stringify(bad));`
	cmd := exec.CommandContext(ctx, node, "-e", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var bad map[string]string
	if err := json.Unmarshal(out, &bad); err != nil {
		t.Fatalf("node's answer %q: %v", out, err)
	}
	for p, why := range bad {
		t.Errorf("%s: pattern %q is refused by the browser: %s", where[p], p, why)
	}
	t.Logf("%d patterns checked", len(patterns))
}
