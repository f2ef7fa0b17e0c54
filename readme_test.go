package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"masterorder/cli"
)

// The README's two commands stay true: its test command is the one CI
// runs (.ci/run, "README test command"), and `demo` is a command of the
// binary with the flag the README names.
func TestReadmeCommandsAreTheOnesCIRuns(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	cmd := regexp.MustCompile("(?m)^(go test [^#\n]*?)\\s+#").FindSubmatch(readme)
	if cmd == nil {
		t.Fatal("the README shows no `go test` command")
	}
	want := strings.TrimSpace(string(cmd[1]))
	step := strings.Index(string(ci), `echo "== README test command"`)
	if step < 0 || !strings.Contains(string(ci)[step:], "\n"+want+"\n") {
		t.Errorf(".ci/run does not run the README's test command %q after its \"README test command\" step", want)
	}
	if !strings.Contains(string(readme), "go run . demo ") {
		t.Error("the README no longer shows `go run . demo`")
	}
	var help strings.Builder
	if code := cli.Run([]string{"help"}, cli.Build{}, &help, io.Discard); code != 0 || !strings.Contains(help.String(), "masterorder demo [--nodes 1|3]") {
		t.Errorf("help (exit %d) no longer has `demo --nodes`, which the README names", code)
	}
}
