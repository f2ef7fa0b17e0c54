package update_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Real RAUC bundles for the tests: a test CA made here with openssl (the
// keyring), a signing certificate from it, and `rauc bundle`.

// needRAUC fails the test when rauc, mksquashfs or openssl is missing
// (.ci/run installs them); it skips, loudly, only when not root, where
// they cannot be installed.
func needRAUC(t testing.TB) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"rauc", "mksquashfs", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPED, NOT ROOT: %s missing (apt-get install rauc squashfs-tools openssl as root; .ci/run does)", strings.Join(missing, ", "))
	}
	t.Fatalf("%s missing: apt-get install rauc squashfs-tools openssl (.ci/run does)", strings.Join(missing, ", "))
}

// signer is a CA (its certificate is a box's keyring) and a release
// certificate signed by it.
type signer struct {
	Keyring string // the CA certificate
	Cert    string // the release signing certificate
	Key     string
}

func run(t testing.TB, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// newSigner makes a test CA and a release certificate in a directory of
// its own.
func newSigner(t testing.TB, name string) signer {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
		"-subj", "/CN="+name+" test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	run(t, dir, "openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "release.key", "-out", "release.csr", "-subj", "/CN="+name+" release")
	if err := os.WriteFile(filepath.Join(dir, "ext.cnf"), []byte("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "openssl", "x509", "-req", "-in", "release.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
		"-out", "release.pem", "-days", "30", "-extfile", "ext.cnf")
	return signer{Keyring: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "release.pem"), Key: filepath.Join(dir, "release.key")}
}

// makeBundle makes a signed bundle of payload (the file the image names
// "masterorder") for compatible and version, in dir.
func (s signer) makeBundle(t testing.TB, dir, compatible, version, payload string) string {
	t.Helper()
	content := t.TempDir()
	manifest := "[update]\ncompatible=" + compatible + "\nversion=" + version + "\n\n[bundle]\nformat=verity\n\n[image.rootfs]\nfilename=masterorder\n"
	if err := os.WriteFile(filepath.Join(content, "manifest.raucm"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(content, "masterorder"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "masterorder-"+version+"-"+strings.TrimPrefix(compatible, "masterorder-")+".raucb")
	os.Remove(out)
	run(t, dir, "rauc", "bundle", "--cert="+s.Cert, "--key="+s.Key, content, out)
	return out
}

// unsignedBundle is the same content as a squashfs image with no
// signature.
func unsignedBundle(t testing.TB, dir, compatible, version, payload string) string {
	t.Helper()
	content := t.TempDir()
	manifest := "[update]\ncompatible=" + compatible + "\nversion=" + version + "\n\n[image.rootfs]\nfilename=masterorder\n"
	os.WriteFile(filepath.Join(content, "manifest.raucm"), []byte(manifest), 0o644)
	b, _ := os.ReadFile(payload)
	os.WriteFile(filepath.Join(content, "masterorder"), b, 0o755)
	out := filepath.Join(dir, "unsigned.raucb")
	run(t, dir, "mksquashfs", content, out, "-quiet", "-noappend")
	return out
}
