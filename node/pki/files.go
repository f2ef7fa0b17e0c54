package pki

import (
	"fmt"
	"os"
	"path/filepath"
)

// File layout written by `masterorder init`:
//
//	DIR/ca.pem          cluster CA certificate (0644, every node needs it)
//	DIR/ca-key.pem      cluster CA key (0600, only needed to issue certificates)
//	DIR/<id>.pem        node certificate (0644)
//	DIR/<id>-key.pem    node key (0600)

// CAFile is the path of the CA certificate in dir.
func CAFile(dir string) string { return filepath.Join(dir, "ca.pem") }

// CAKeyFile is the path of the CA private key in dir.
func CAKeyFile(dir string) string { return filepath.Join(dir, "ca-key.pem") }

// NodeCertFile is the path of node id's certificate in dir.
func NodeCertFile(dir, id string) string { return filepath.Join(dir, id+".pem") }

// NodeKeyFile is the path of node id's private key in dir.
func NodeKeyFile(dir, id string) string { return filepath.Join(dir, id+"-key.pem") }

// WriteFiles writes DIR/ca.pem (0644) and DIR/ca-key.pem (0600), creating
// dir if needed. Existing files are replaced atomically; whether to
// overwrite at all (init's --force) is the caller's decision.
func (ca *CA) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pki: create %s: %w", dir, err)
	}
	if err := writeFileAtomic(CAFile(dir), ca.certPEM, 0o644); err != nil {
		return err
	}
	return writeFileAtomic(CAKeyFile(dir), ca.keyPEM, 0o600)
}

// WriteNodeFiles writes DIR/<id>.pem (0644) and DIR/<id>-key.pem (0600),
// creating dir if needed.
func WriteNodeFiles(dir, nodeID string, certPEM, keyPEM []byte) error {
	if err := ValidateNodeID(nodeID); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pki: create %s: %w", dir, err)
	}
	if err := writeFileAtomic(NodeCertFile(dir, nodeID), certPEM, 0o644); err != nil {
		return err
	}
	return writeFileAtomic(NodeKeyFile(dir, nodeID), keyPEM, 0o600)
}

// HTTPSCertFile is where a node's HTTPS server certificate lives in dir.
func HTTPSCertFile(dir, id string) string { return filepath.Join(dir, id+"-https.pem") }

// HTTPSKeyFile is where a node's HTTPS server key lives in dir.
func HTTPSKeyFile(dir, id string) string { return filepath.Join(dir, id+"-https-key.pem") }

// WriteHTTPSFiles writes a node's HTTPS server certificate and key.
func WriteHTTPSFiles(dir, nodeID string, certPEM, keyPEM []byte) error {
	if err := ValidateNodeID(nodeID); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pki: create %s: %w", dir, err)
	}
	if err := writeFileAtomic(HTTPSCertFile(dir, nodeID), certPEM, 0o644); err != nil {
		return err
	}
	return writeFileAtomic(HTTPSKeyFile(dir, nodeID), keyPEM, 0o600)
}

// LoadCAFiles loads the CA written by WriteFiles from dir, e.g. to issue a
// certificate for a replacement box.
func LoadCAFiles(dir string) (*CA, error) {
	certPEM, err := readFile(CAFile(dir))
	if err != nil {
		return nil, err
	}
	keyPEM, err := readFile(CAKeyFile(dir))
	if err != nil {
		return nil, err
	}
	ca, err := LoadCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w (files %s, %s)", err, CAFile(dir), CAKeyFile(dir))
	}
	return ca, nil
}

func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pki: read %s: %w", path, err)
	}
	return b, nil
}

// writeFileAtomic writes data to a temporary file in the same directory,
// sets mode, syncs, and renames it over path, so a crash never leaves a
// half-written key and a key file is never briefly world-readable.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	return nil
}
