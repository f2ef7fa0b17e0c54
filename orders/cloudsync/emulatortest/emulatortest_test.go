package emulatortest

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func get(hostPort string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + hostPort + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}

func TestStartStopRestart(t *testing.T) {
	e := New(t)
	if !strings.HasPrefix(e.HostPort(), "127.0.0.1:") {
		t.Fatalf("HostPort = %q, want a loopback address", e.HostPort())
	}
	if body, err := get(e.HostPort()); err != nil || body != "Ok" {
		t.Fatalf("GET / = %q, %v", body, err)
	}
	e.Stop()
	e.Stop() // twice is fine
	if _, err := get(e.HostPort()); err == nil {
		t.Fatalf("emulator still answers after Stop")
	}
	if err := e.Restart(); err != nil {
		t.Fatal(err)
	}
	if body, err := get(e.HostPort()); err != nil || body != "Ok" {
		t.Fatalf("after Restart: GET / = %q, %v", body, err)
	}
}

func TestStart(t *testing.T) {
	hostPort, stop := Start(t)
	if body, err := get(hostPort); err != nil || body != "Ok" {
		t.Fatalf("GET / = %q, %v", body, err)
	}
	stop()
}

func TestSharedIsShared(t *testing.T) {
	a, b := Shared(t), Shared(t)
	if a != b {
		t.Fatalf("Shared started two emulators")
	}
	if body, err := get(a.HostPort()); err != nil || body != "Ok" {
		t.Fatalf("GET / = %q, %v", body, err)
	}
}

// write sets one field of shops/s1 through the REST API with token as
// the bearer ("" for none) and returns the HTTP status.
func write(t *testing.T, hostPort, token string) int {
	t.Helper()
	req, err := http.NewRequest("PATCH", "http://"+hostPort+"/v1/projects/demo-rules/databases/(default)/documents/shops/s1",
		strings.NewReader(`{"fields":{"x":{"stringValue":"y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// With rules, a request without the owner token is judged by them, and a
// restart keeps them.
func TestRulesJudgeRequests(t *testing.T) {
	e := NewWithRules(t, "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{db}/documents {\n    match /{d=**} { allow read, write: if false; }\n  }\n}\n")
	for round := 0; round < 2; round++ {
		if got := write(t, e.HostPort(), ""); got != http.StatusForbidden {
			t.Fatalf("round %d: a write without a token answered %d, want 403 from the rules", round, got)
		}
		if got := write(t, e.HostPort(), "owner"); got != http.StatusOK {
			t.Fatalf("round %d: the owner's write answered %d, want 200", round, got)
		}
		if err := e.Restart(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}
