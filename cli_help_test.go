package main

import (
	"regexp"
	"strings"
	"testing"
)

// `masterorder help` names every flag each command defines (init's
// --kitchen-password, --public-url, --plain-http and --renew-https were
// once missing). The flags are what each command's own -h prints, so a
// flag added later without a word in the help fails here. bench and
// members point to their own help, which is checked the same way.
func TestHelpNamesEveryFlag(t *testing.T) {
	code, help, _ := runCLI(t, "help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, cmd := range [][]string{{"demo"}, {"run"}, {"init"}, {"status"}, {"backup"}, {"restore"}, {"rotate-secrets"}, {"stopped"}} {
		checkFlagsNamed(t, cmd, commandLines(help, cmd[0]))
	}
	// members: its own usage, printed by `masterorder members -h`.
	if !strings.Contains(help, "masterorder members -h") {
		t.Error("help does not point to `masterorder members -h`")
	}
	// One flag set serves add, promote and remove; each flag is for one
	// of them, so the whole usage is what must name it.
	_, _, membersHelp := runCLI(t, "members", "-h")
	checkFlagsNamed(t, []string{"members", "add"}, commandLines(membersHelp, "members"))
	// bench: its -h is generated from its flags.
	if !strings.Contains(help, "masterorder bench -h") {
		t.Error("help does not point to `masterorder bench -h`")
	}
}

// defaultsFlag is a flag's line in what a FlagSet prints for -h.
var defaultsFlag = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)

// checkFlagsNamed fails for each flag of cmd (as its -h lists them) that
// text does not name as --flag.
func checkFlagsNamed(t *testing.T, cmd []string, text string) {
	t.Helper()
	_, _, defaults := runCLI(t, append(append([]string{}, cmd...), "-h")...)
	flags := defaultsFlag.FindAllStringSubmatch(defaults, -1)
	if len(flags) == 0 {
		t.Fatalf("%s -h lists no flags: %q", strings.Join(cmd, " "), defaults)
	}
	for _, f := range flags {
		if !regexp.MustCompile(`--` + regexp.QuoteMeta(f[1]) + `([^a-z0-9-]|$)`).MatchString(text) {
			t.Errorf("help for %q does not name --%s:\n%s", strings.Join(cmd, " "), f[1], text)
		}
	}
}

// commandLines is the part of a usage text about one command: its lines
// starting "masterorder CMD " and the lines continuing them.
func commandLines(usage, cmd string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(usage, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "masterorder "+cmd+" "):
			in = true
		case strings.HasPrefix(trimmed, "masterorder ") || !strings.HasPrefix(line, "   "):
			in = false
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
