package cli

import (
	"fmt"
	"strings"
	"testing"

	"masterorder/node/nodetest"
)

func TestMembersCLI(t *testing.T) {
	c, _ := cliStore(t, 3)
	url := "http://" + c.Configs[1].HTTPAddr
	d := fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	dHTTP := fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t))
	if code, _, _ := runCLI(t, "members", "add", "--url", url, "--id", "d"); code != 2 {
		t.Errorf("add without addresses: exit %d", code)
	}
	if code, _, _ := runCLI(t, "members", "list", "--url", url); code != 2 {
		t.Errorf("unknown subcommand: exit %d", code)
	}
	if code, _, errs := runCLI(t, "members", "add", "--url", url, "--password", "wrong", "--id", "d", "--raft-addr", d, "--http-addr", dHTTP); code != 1 || !strings.Contains(errs, "INVALID_PASSWORD") {
		t.Errorf("wrong password: exit %d %s", code, errs)
	}
	t.Setenv(passwordEnv, cliPassword)
	code, out, errs := runCLI(t, "members", "add", "--url", url, "--id", "d", "--raft-addr", d, "--http-addr", dHTTP, "--voter=false")
	if code != 0 || !strings.Contains(out, "nonvoter") {
		t.Fatalf("members add: %d %s %s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "members", "promote", "--url", url, "--id", "d"); code != 0 || strings.Contains(out, "nonvoter") {
		t.Fatalf("members promote: %d %s %s", code, out, errs)
	}
	code, out, errs = runCLI(t, "members", "remove", "--url", url, "--id", "d")
	if code != 0 || strings.Contains(out, dHTTP) {
		t.Fatalf("members remove: %d %s %s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "members", "remove", "--url", url, "--id", "d"); code != 1 || !strings.Contains(errs, "MEMBER_NOT_FOUND") {
		t.Fatalf("remove again: %d %s", code, errs)
	}
}
