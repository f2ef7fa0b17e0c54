package pki

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"masterorder/bench/powercut"
)

// The TLS files init and setup write survive a power cut right after
// the write: their directory (made by the write) and their names are
// synced, not only their contents.
func TestWrittenFilesSurviveAPowerCut(t *testing.T) {
	p := powercut.MountT(t)
	dir := filepath.Join(p.Mountpoint(), "etc", "tls")
	ca := mustCA(t, "power cut")
	c, k := mustNode(t, ca, "a", "127.0.0.1")
	if err := ca.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteNodeFiles(dir, "a", c, k); err != nil {
		t.Fatal(err)
	}
	if err := p.Crash(powercut.CrashOptions{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]byte{CAFile(dir): ca.CertPEM(), CAKeyFile(dir): ca.KeyPEM(), NodeCertFile(dir, "a"): c, NodeKeyFile(dir, "a"): k} {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after the power cut: %d bytes, %v", filepath.Base(path), len(got), err)
		}
	}
}
