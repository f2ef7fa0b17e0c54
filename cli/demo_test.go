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
	"sync"
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
// again on the same --data-dir, it keeps its CA and its data.
func TestDemoServesAStore(t *testing.T) {
	dir, port := t.TempDir(), demoPort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var ca []byte
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithCancel(context.Background())
		out := &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- demo(ctx, []string{"--nodes", "1", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dir}, testEnv(out, io.Discard))
		}()
		waitFor(t, "the demo's ready line", func() bool { return strings.Contains(out.String(), "Ctrl-C stops the store.") })
		var login struct{ Token string }
		if code := jsonCall(t, http.DefaultClient, "POST", base+"/api/staff/login", nil, map[string]string{"password": "demo"}, &login); code != 200 || login.Token == "" {
			t.Errorf("run %d: staff login with the demo password: %d", run, code)
		}
		guest := regexp.MustCompile(`guest: +(\S+)`).FindStringSubmatch(out.String())
		if guest == nil {
			t.Fatalf("run %d: no guest URL in %q", run, out.String())
		}
		waitHTTP(t, nil, guest[1], 200)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run %d: demo ended with %v", run, err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "tls", "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		if run == 2 && !bytes.Equal(raw, ca) {
			t.Error("the second run on the same --data-dir made a new CA")
		}
		ca = raw
	}
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

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
