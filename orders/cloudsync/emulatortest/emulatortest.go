// Package emulatortest runs the real Cloud Firestore emulator for tests.
//
// The emulator is the one the Debian package google-cloud-cli-firestore-emulator
// installs (see .ci/firestore-emulator.sh). Its launcher is found under the
// Cloud SDK root that `gcloud info` reports; FIRESTORE_EMULATOR_LAUNCHER
// overrides the path. When the emulator is missing the test is skipped with
// a message saying why, except when CI=true, where it fails instead.
//
// Each emulator listens on 127.0.0.1 only, on a free port, keeps its data in
// memory, and is killed with its whole process group when stopped (the
// launcher is a shell script that starts java); it is also killed if the
// test binary dies without cleaning up.
//
//	e := emulatortest.New(t)            // started; stopped by t.Cleanup
//	cfg.EmulatorHost = e.HostPort()
//	e.Stop()                            // simulate "no internet"
//	if err := e.Restart(); err != nil { // same port, empty data
//		t.Fatal(err)
//	}
//
// With security rules, the emulator judges every request that does not
// carry its owner token as Firestore judges a key: by the rules, with the
// request's bearer token (a service account's self-signed JWT, say) as
// request.auth. The owner token passes every rule.
//
//	e := emulatortest.NewWithRules(t, `rules_version = '2'; service cloud.firestore { … }`)
//
// or, when only the address is needed:
//
//	hostPort, stop := emulatortest.Start(t)
//
// Tests that neither stop nor restart it can share one emulator per test
// binary (it saves a JVM start per test; use a fresh collection per test):
//
//	e := emulatortest.Shared(t)
//	func TestMain(m *testing.M) { code := m.Run(); emulatortest.StopShared(); os.Exit(code) }
package emulatortest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ReadyTimeout is how long Start waits for the emulator to answer "Ok".
const ReadyTimeout = 60 * time.Second

const relLauncher = "platform/cloud-firestore-emulator/cloud_firestore_emulator"

// Emulator is one running (or stopped) emulator process on a fixed port.
type Emulator struct {
	launcher string
	port     int
	rules    string // a rules file passed with --rules, "" for none (everything allowed)

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been waited for
	output  *lockedBuffer
	stopped bool
}

// Start starts an emulator and returns its "127.0.0.1:PORT" address and a
// function that stops it (safe to call more than once; it also runs at the
// end of the test).
func Start(t testing.TB) (hostPort string, stop func()) {
	t.Helper()
	e := New(t)
	return e.HostPort(), e.Stop
}

// ErrNotInstalled is wrapped by the errors of Launch and Launcher when the
// emulator (or java, or gcloud) is missing.
var ErrNotInstalled = errors.New("firestore emulator not installed")

// New starts an emulator on a free loopback port. It is stopped when the
// test ends.
func New(t testing.TB) *Emulator {
	t.Helper()
	e, err := Launch()
	if err != nil {
		skipOrFail(t, err)
	}
	t.Cleanup(e.Stop)
	return e
}

// NewWithRules starts an emulator that enforces the Firestore security
// rules given as source (a restart keeps them). It is stopped when the
// test ends.
func NewWithRules(t testing.TB, rules string) *Emulator {
	t.Helper()
	path := filepath.Join(t.TempDir(), "firestore.rules")
	if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := launch(path)
	if err != nil {
		skipOrFail(t, err)
	}
	t.Cleanup(e.Stop)
	return e
}

// Launch starts an emulator on a free loopback port, for use outside a test
// (TestMain, a benchmark harness). The caller must Stop it.
func Launch() (*Emulator, error) { return launch("") }

func launch(rules string) (*Emulator, error) {
	launcher, err := Launcher()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ { // a free port can be taken between probing and binding
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("emulatortest: finding a free port: %w", err)
		}
		e := &Emulator{launcher: launcher, port: port, rules: rules}
		err = e.start()
		if err == nil {
			return e, nil
		}
		if attempt == 3 {
			return nil, fmt.Errorf("emulatortest: %w", err)
		}
	}
}

var shared struct {
	mu  sync.Mutex
	emu *Emulator
	err error
}

// Shared returns the emulator shared by the tests of this test binary,
// starting it on first use. Do not Stop or Restart it; call StopShared from
// TestMain (if you do not, it dies with the test binary anyway).
func Shared(t testing.TB) *Emulator {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.emu == nil && shared.err == nil {
		shared.emu, shared.err = Launch()
	}
	if shared.err != nil {
		skipOrFail(t, shared.err)
	}
	return shared.emu
}

// StopShared stops the emulator Shared started, if any.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.emu != nil {
		shared.emu.Stop()
		shared.emu = nil
	}
}

func skipOrFail(t testing.TB, err error) {
	t.Helper()
	switch {
	case !errors.Is(err, ErrNotInstalled):
		t.Fatalf("%v", err)
	case os.Getenv("CI") == "true":
		t.Fatalf("the Firestore emulator is required in CI: %v (install it with .ci/firestore-emulator.sh)", err)
	default:
		t.Skipf("skipping: %v (install it with .ci/firestore-emulator.sh)", err)
	}
}

// HostPort is "127.0.0.1:PORT", the value for an emulator_host setting.
func (e *Emulator) HostPort() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(e.port))
}

// Stop kills the emulator and its children and waits for them. Data kept by
// the emulator is lost. Stopping a stopped emulator does nothing.
func (e *Emulator) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopLocked()
}

// Restart stops the emulator if it runs and starts it again on the same
// port, with no data.
func (e *Emulator) Restart() error {
	e.Stop()
	var err error
	for range 3 { // the port can linger for a moment after the kill
		if err = e.start(); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("emulatortest: restarting on port %d: %w", e.port, err)
}

// Output is what the emulator printed so far (for failure messages).
func (e *Emulator) Output() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.output == nil {
		return ""
	}
	return e.output.String()
}

func (e *Emulator) start() error {
	out := &lockedBuffer{}
	args := []string{"start", "--host=127.0.0.1", "--port=" + strconv.Itoa(e.port)}
	if e.rules != "" {
		args = append(args, "--rules="+e.rules)
	}
	cmd := exec.Command(e.launcher, args...)
	cmd.Stdout = out
	cmd.Stderr = out
	// The launcher runs "$JAVA ... CloudFirestore start" as a child of a
	// shell. "exec java" makes the shell become java, so the death signal
	// below reaches java itself if the test binary dies without cleanup
	// (for example on a go test -timeout panic).
	java := os.Getenv("JAVA")
	if java == "" {
		java = "java"
	}
	cmd.Env = append(os.Environ(), "JAVA=exec "+java)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", e.launcher, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()

	e.mu.Lock()
	e.cmd, e.done, e.output, e.stopped = cmd, done, out, false
	e.mu.Unlock()

	if err := waitReady(e.HostPort(), done, ReadyTimeout); err != nil {
		e.Stop()
		return fmt.Errorf("%w; emulator output:\n%s", err, tail(out.String(), 2000))
	}
	return nil
}

func (e *Emulator) stopLocked() {
	if e.cmd == nil || e.stopped {
		return
	}
	e.stopped = true
	// Negative pid: the whole process group (the launcher shell and java).
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-e.done:
	case <-time.After(10 * time.Second): // cannot happen short of a kernel problem
	}
}

func waitReady(hostPort string, exited <-chan struct{}, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	url := "http://" + hostPort + "/"
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "Ok" {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("emulator on %s exited before it was ready", hostPort)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("emulator on %s did not answer Ok within %v", hostPort, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var (
	launcherOnce sync.Once
	launcherPath string
	launcherErr  error
)

// Launcher returns the path of cloud_firestore_emulator, or an error that
// says what is missing. The result is computed once per test binary.
func Launcher() (string, error) {
	launcherOnce.Do(func() { launcherPath, launcherErr = findLauncher() })
	return launcherPath, launcherErr
}

func findLauncher() (string, error) {
	if p := os.Getenv("FIRESTORE_EMULATOR_LAUNCHER"); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("%w: FIRESTORE_EMULATOR_LAUNCHER=%s is not an executable file", ErrNotInstalled, p)
		}
		return p, nil
	}
	java := os.Getenv("JAVA")
	if java == "" {
		java = "java"
	}
	if _, err := exec.LookPath(java); err != nil {
		return "", fmt.Errorf("%w: java not found (the emulator needs a JRE): %v", ErrNotInstalled, err)
	}
	gcloud, err := exec.LookPath("gcloud")
	if err != nil {
		return "", fmt.Errorf("%w: gcloud not found on PATH (Debian packages google-cloud-cli and google-cloud-cli-firestore-emulator)", ErrNotInstalled)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, gcloud, "info", "--format=value(installation.sdk_root)").Output()
	if err != nil {
		return "", fmt.Errorf("%w: gcloud info failed: %v", ErrNotInstalled, err)
	}
	root := strings.TrimSpace(string(out))
	if root == "" {
		return "", fmt.Errorf("%w: gcloud info printed no installation.sdk_root", ErrNotInstalled)
	}
	p := filepath.Join(root, relLauncher)
	if !isExecutable(p) {
		return "", fmt.Errorf("%w: %s is missing (Debian package google-cloud-cli-firestore-emulator)", ErrNotInstalled, p)
	}
	return p, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // keep memory bounded on chatty runs
		l.b.Reset()
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ServiceAccountKey is a service account key file as Firebase's "Generate
// new private key" downloads it, with a fresh RSA key: the key a store
// owner picks on the Cloud page. Its tokens name email; the emulator
// (which does not check signatures) judges them by its rules.
func ServiceAccountKey(t testing.TB, project, email string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 20)
	rand.Read(id)
	b, err := json.MarshalIndent(map[string]string{
		"type":                        "service_account",
		"project_id":                  project,
		"private_key_id":              hex.EncodeToString(id),
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                email,
		"client_id":                   "1234567890",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   "https://oauth2.googleapis.com/token",
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// WritersRules are security rules that let only service accounts whose
// email starts with prefix read and write (a key of another account is
// refused PermissionDenied, as Firestore refuses a key without rights).
func WritersRules(prefix string) string {
	return `rules_version = '2';
service cloud.firestore {
  match /databases/{db}/documents {
    match /{document=**} {
      allow read, write: if request.auth != null && request.auth.token.sub.matches('` + regexpQuote(prefix) + `.*');
    }
  }
}
`
}

// regexpQuote escapes what the rules' regular expressions treat specially.
func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteString(`\\`)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// KeyPieces are pieces of a key file's private key that any copy of it
// would contain (each line of its PEM body): a test looks for them where
// the key must never be (a backup, a log, an answer).
func KeyPieces(t testing.TB, keyFile []byte) []string {
	t.Helper()
	var f struct {
		PrivateKey string `json:"private_key"`
	}
	if err := json.Unmarshal(keyFile, &f); err != nil || f.PrivateKey == "" {
		t.Fatalf("not a key file: %v", err)
	}
	var out []string
	for _, line := range strings.Split(f.PrivateKey, "\n") {
		if len(line) >= 32 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	if len(out) < 10 {
		t.Fatalf("the key's PEM body has only %d lines", len(out))
	}
	return out
}
