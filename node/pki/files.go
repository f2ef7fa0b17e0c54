package pki

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"masterorder/node/atomicfile"
)

// File layout written by `masterorder init` and the setup wizard's push:
//
//	DIR/ca.pem               cluster CA certificate (0644, every node needs it)
//	DIR/ca-key.pem           cluster CA key (0600, only needed to issue certificates)
//	DIR/<id>.pem             node certificate (0644)
//	DIR/<id>-key.pem         node key (0600)
//	DIR/<id>-https.pem       node HTTPS certificate (0644)
//	DIR/<id>-https-key.pem   node HTTPS key (0600)
//
// Each name function takes the TLS directory; given "" it is the file's
// name alone, as a setup bundle's files are named.

// DirMode is the TLS directory's mode: the files' names stay within the
// service's group (the Debian package makes /etc/masterorder/tls 0750).
const DirMode os.FileMode = 0o750

// CAFile is the path of the CA certificate in dir.
func CAFile(dir string) string { return filepath.Join(dir, "ca.pem") }

// CAKeyFile is the path of the CA private key in dir.
func CAKeyFile(dir string) string { return filepath.Join(dir, "ca-key.pem") }

// NodeCertFile is the path of node id's certificate in dir.
func NodeCertFile(dir, id string) string { return filepath.Join(dir, id+".pem") }

// NodeKeyFile is the path of node id's private key in dir.
func NodeKeyFile(dir, id string) string { return filepath.Join(dir, id+"-key.pem") }

// HTTPSCertFile is where a node's HTTPS server certificate lives in dir.
func HTTPSCertFile(dir, id string) string { return filepath.Join(dir, id+"-https.pem") }

// HTTPSKeyFile is where a node's HTTPS server key lives in dir.
func HTTPSKeyFile(dir, id string) string { return filepath.Join(dir, id+"-https-key.pem") }

// WriteFile writes the TLS file name (a base name, as the functions above
// give it with dir "") into dir, making dir (DirMode) if needed: keys
// 0600, certificates 0644, replaced atomically and durably (node/atomicfile).
// Whether to overwrite at all (init's --force) is the caller's decision.
func WriteFile(dir, name string, data []byte) error {
	if name != filepath.Base(name) || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".pem") {
		return fmt.Errorf("pki: bad TLS file name %q", name)
	}
	if err := atomicfile.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("pki: create %s: %w", dir, err)
	}
	mode := os.FileMode(0o644)
	if strings.HasSuffix(name, "-key.pem") {
		mode = 0o600
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, name), data, mode); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// writePair writes a certificate and its key into dir.
func writePair(dir, certName, keyName string, certPEM, keyPEM []byte) error {
	if err := WriteFile(dir, certName, certPEM); err != nil {
		return err
	}
	return WriteFile(dir, keyName, keyPEM)
}

// WriteFiles writes DIR/ca.pem and DIR/ca-key.pem.
func (ca *CA) WriteFiles(dir string) error {
	return writePair(dir, CAFile(""), CAKeyFile(""), ca.certPEM, ca.keyPEM)
}

// WriteNodeFiles writes DIR/<id>.pem and DIR/<id>-key.pem.
func WriteNodeFiles(dir, nodeID string, certPEM, keyPEM []byte) error {
	if err := ValidateNodeID(nodeID); err != nil {
		return err
	}
	return writePair(dir, NodeCertFile("", nodeID), NodeKeyFile("", nodeID), certPEM, keyPEM)
}

// WriteHTTPSFiles writes a node's HTTPS server certificate and key.
func WriteHTTPSFiles(dir, nodeID string, certPEM, keyPEM []byte) error {
	if err := ValidateNodeID(nodeID); err != nil {
		return err
	}
	return writePair(dir, HTTPSCertFile("", nodeID), HTTPSKeyFile("", nodeID), certPEM, keyPEM)
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
