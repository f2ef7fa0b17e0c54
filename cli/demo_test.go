package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"masterorder/node/nodetest"
)

// `demo --listen 0.0.0.0` serves staff over plain HTTP with password
// "demo" to the whole network: it says so.
func TestDemoOnAllInterfacesWarns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stop right after start-up
	var out, errb bytes.Buffer
	port := nodetest.FreePort(t)
	demo(ctx, []string{"--nodes", "1", "--listen", fmt.Sprintf("0.0.0.0:%d", port), "--data-dir", t.TempDir()}, testEnv(&out, &errb))
	if !strings.Contains(errb.String(), "WARNING") || !strings.Contains(errb.String(), `"demo"`) {
		t.Errorf("no warning: %q", errb.String())
	}
	errb.Reset()
	demo(ctx, []string{"--nodes", "1", "--listen", fmt.Sprintf("127.0.0.1:%d", nodetest.FreePort(t)), "--data-dir", t.TempDir()}, testEnv(&out, &errb))
	if strings.Contains(errb.String(), "WARNING") {
		t.Errorf("warning on loopback: %q", errb.String())
	}
}

// `demo --nodes 1` serves a store made as init makes one: its staff log
// in with the demo password and its demo table's guest page answers. Run
// again on the same --data-dir, it keeps its CA.
func TestDemoServesAStore(t *testing.T) {
	// A --data-dir that does not exist yet is made (it failed with
	// "open …/secrets.json: no such file or directory").
	dir, port := filepath.Join(t.TempDir(), "new"), demoPort(t)
	first := serveDemo(t, dir, port)
	if again := serveDemo(t, dir, port); !bytes.Equal(again, first) {
		t.Error("the second run on the same --data-dir made a new CA")
	}
}

// serveDemo runs `demo --nodes 1` on dir and port until its staff log in
// and its guest page answers, then stops it; it returns the CA it used.
func serveDemo(t *testing.T, dir string, port int) []byte {
	t.Helper()
	// A file: the test reads what the demo is still writing.
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	printed := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- demo(ctx, []string{"--nodes", "1", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dir}, testEnv(out, io.Discard))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo ended with %v", err)
		}
	}()
	waitFor(t, "the demo's ready line", func() bool { return strings.Contains(printed(), "Ctrl-C stops the store.") })
	var login struct{ Token string }
	if code := jsonCall(t, http.DefaultClient, "POST", fmt.Sprintf("http://127.0.0.1:%d/api/staff/login", port), nil, map[string]string{"password": "demo"}, &login); code != 200 || login.Token == "" {
		t.Errorf("staff login with the demo password: %d", code)
	}
	guest := regexp.MustCompile(`guest: +(\S+)`).FindStringSubmatch(printed())
	if guest == nil {
		t.Fatalf("no guest URL in %q", printed())
	}
	waitHTTP(t, nil, guest[1], 200)
	ca, err := os.ReadFile(filepath.Join(dir, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// demoPort is a free port p with p+1000 free too: the one-node demo's
// HTTP and Raft ports.
func demoPort(t *testing.T) int {
	for try := 0; try < 100; try++ {
		p := nodetest.FreePort(t)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1000)); err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port p with p+1000 free")
	return 0
}
