package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/orders/orderstest"
)

const cliPassword = "cli-test-password"

// testBuild names the binary the tests run.
var testBuild = Build{Version: "test", Commit: "test", Date: "test"}

// testEnv is a command's env writing to stdout and stderr.
func testEnv(stdout, stderr io.Writer) env {
	return env{stdout: stdout, stderr: stderr, build: testBuild}
}

// runCLI runs a command line as the binary does; it returns the exit
// status and what was written.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, testBuild, &out, &errb)
	return code, out.String(), errb.String()
}

// mustRun runs a command line that must succeed; it returns what the
// command wrote to stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("masterorder %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// cliStore starts n nodes with the domain and a known staff password.
func cliStore(t *testing.T, n int) (*nodetest.Cluster, []*orders.Service) {
	t.Helper()
	hash := orderstest.PasswordHash(t, cliPassword)
	st := orderstest.Start(t, n, func(_ int, c *orders.FileConfig) { c.Staff.PasswordHash = hash }, nil, orders.Options{})
	return st.Cluster, st.Svcs
}

// waitHTTP waits until a GET of url through c (nil: the default client)
// answers status want.
func waitHTTP(t *testing.T, c *http.Client, url string, want int) {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	waitFor(t, fmt.Sprintf("%s to answer %d", url, want), func() bool {
		res, err := c.Get(url)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == want
	})
}

func jsonCall(t *testing.T, c *http.Client, method, url string, hdr map[string]string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := apitest.Client(t, c).Do(req) // every exchange held to api/openapi.yaml
	if err != nil {
		t.Logf("%s %s: %v", method, url, err)
		return 0
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil {
		json.Unmarshal(raw, out)
	}
	if res.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, url, res.StatusCode, raw)
	}
	return res.StatusCode
}

// waitFor waits until cond holds; a minute without is a failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
