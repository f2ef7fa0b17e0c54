package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"masterorder/orders"
	"masterorder/orders/staffauth"
)

// rotate-secrets: every config gets the same new secrets, a token of the
// old secret no longer verifies, and the configs still run.
func TestRotateSecrets(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, "init", "--shop-id", "s", "--nodes", "a=127.0.0.1:18080:19080,b=127.0.0.1:18081:19081", "--out", dir)
	before, _ := orders.LoadConfig(filepath.Join(dir, "a.toml"))
	oldSecret, _ := staffauth.DecodeSecret(before.Staff.TokenSecret)
	tok, _, _ := (&staffauth.Issuer{Secret: oldSecret}).Issue()
	if code, out, errs := runCLI(t, "rotate-secrets", "--out", dir); code != 0 || !strings.Contains(out, "rotated") {
		t.Fatalf("rotate-secrets: %d %s %s", code, out, errs)
	}
	a, errA := orders.LoadConfig(filepath.Join(dir, "a.toml"))
	b, errB := orders.LoadConfig(filepath.Join(dir, "b.toml"))
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if a.ClusterSecret == before.ClusterSecret || a.Staff.TokenSecret == before.Staff.TokenSecret {
		t.Error("secrets unchanged")
	}
	if a.ClusterSecret != b.ClusterSecret || a.Staff.TokenSecret != b.Staff.TokenSecret {
		t.Error("boxes got different secrets")
	}
	if a.HTTPSAddr != before.HTTPSAddr || a.Staff.PasswordHash != before.Staff.PasswordHash || a.Staff.KitchenPasswordHash != before.Staff.KitchenPasswordHash {
		t.Error("other settings changed")
	}
	newSecret, _ := staffauth.DecodeSecret(a.Staff.TokenSecret)
	if _, err := (&staffauth.Issuer{Secret: newSecret}).Verify(tok); err == nil {
		t.Error("a token of the old secret still verifies")
	}
	if code, _, _ := runCLI(t, "rotate-secrets", "--out", t.TempDir()); code != 2 {
		t.Errorf("rotate-secrets on an empty dir: exit %d", code)
	}
}
