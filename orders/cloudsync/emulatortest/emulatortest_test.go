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

func TestMain(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}
