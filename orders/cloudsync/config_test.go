package cloudsync

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"masterorder/orders/cloudsync/emulatortest"
)

// These tests never reach Firestore: New does no network I/O.

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func serviceAccountJSON(t *testing.T, project string, mutate func(map[string]any)) string {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal(emulatortest.ServiceAccountKey(t, project, "sync@"+project+".iam.gserviceaccount.com"), &m); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(m)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestNewCredentialsErrors(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "")
	base := Config{Enabled: true, ShopID: "shop1"}
	cases := []struct {
		name string
		file func(t *testing.T) string
		want string
	}{
		{"not configured", func(t *testing.T) string { return "" }, "credentials_file is required"},
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope.json") }, "no such file"},
		{"not json", func(t *testing.T) string { return writeFile(t, "k.json", "not json {") }, "is not a JSON key file"},
		{"user credentials", func(t *testing.T) string {
			return writeFile(t, "k.json", `{"type":"authorized_user","client_id":"x","client_secret":"y","refresh_token":"z"}`)
		}, `has type "authorized_user"`},
		{"no key", func(t *testing.T) string {
			return writeFile(t, "k.json", serviceAccountJSON(t, "p", func(m map[string]any) { delete(m, "private_key") }))
		}, "lacks private_key"},
		{"broken key", func(t *testing.T) string {
			return writeFile(t, "k.json", serviceAccountJSON(t, "p", func(m map[string]any) {
				m["private_key"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
			}))
		}, "not a PKCS#8 or PKCS#1 private key"},
		{"no project", func(t *testing.T) string { return writeFile(t, "k.json", serviceAccountJSON(t, "", nil)) }, "project_id is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			cfg.CredentialsFile = c.file(t)
			_, err := New(cfg, newMemOutbox(), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New error = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestNewServiceAccountOK(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "")
	path := writeFile(t, "k.json", serviceAccountJSON(t, "from-file", nil))
	s, err := New(Config{Enabled: true, ShopID: "shop1", CredentialsFile: path}, newMemOutbox(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ProjectID() != "from-file" {
		t.Errorf("project = %q, want the key file's", s.ProjectID())
	}
	s2, err := New(Config{Enabled: true, ShopID: "shop1", CredentialsFile: path, ProjectID: "explicit"}, newMemOutbox(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.ProjectID() != "explicit" {
		t.Errorf("project = %q, want project_id from the config", s2.ProjectID())
	}
	if st := s.Status(); !st.Enabled || st.Online || st.LastSyncAt != nil || st.LastError != nil || st.Active {
		t.Errorf("fresh status = %+v", st)
	}
}

func TestNewRefusesStrayEmulatorVariable(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:8080")
	path := writeFile(t, "k.json", serviceAccountJSON(t, "p", nil))
	_, err := New(Config{Enabled: true, ShopID: "shop1", CredentialsFile: path}, newMemOutbox(), nil)
	if err == nil || !strings.Contains(err.Error(), "FIRESTORE_EMULATOR_HOST") {
		t.Fatalf("New error = %v, want one about FIRESTORE_EMULATOR_HOST", err)
	}
}

func TestNewConfigErrors(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Enabled: true, EmulatorHost: "127.0.0.1:1"}, "shop_id"},
		{Config{Enabled: true, ShopID: "a/b", EmulatorHost: "127.0.0.1:1"}, "shop_id"},
		{Config{Enabled: true, ShopID: "s", EmulatorHost: "localhost"}, "emulator_host"},
		{Config{Enabled: true, ShopID: "s", EmulatorHost: "127.0.0.1:1", BatchSize: 501}, "batch size"},
		{Config{Enabled: true, ShopID: "s", EmulatorHost: "127.0.0.1:1", MinBackoff: 10, MaxBackoff: 5}, "backoff"},
	}
	for _, c := range cases {
		if _, err := New(c.cfg, newMemOutbox(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) error = %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}

func TestDisabled(t *testing.T) {
	s, err := New(Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err != nil {
		t.Errorf("Run of a disabled Syncer = %v, want nil at once", err)
	}
	s.Notify()
	if st := s.Status(); st.Enabled || st.Online || st.Active {
		t.Errorf("status = %+v, want disabled", st)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

func TestBackoffIsCappedFullJitter(t *testing.T) {
	s := &Syncer{cfg: Config{MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff}}
	for failures := 1; failures < 100; failures++ {
		ceil := DefaultMaxBackoff
		if failures < 20 {
			ceil = min(DefaultMaxBackoff, DefaultMinBackoff<<(failures-1))
		}
		for range 50 {
			d := s.backoff(failures)
			if d <= 0 || d > ceil {
				t.Fatalf("backoff(%d) = %v, want in (0, %v]", failures, d, ceil)
			}
		}
	}
}
