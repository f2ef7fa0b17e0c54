package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// MutualTLSConfig builds the two sides of node-to-node mutual TLS from the
// cluster CA certificate and this node's certificate and key (all PEM).
//
// The server side requires a client certificate signed by the cluster CA
// (and by nothing else: the system roots are not consulted) with the
// clientAuth usage. The client side verifies that the server's chain leads
// to the cluster CA and that its certificate has the serverAuth usage; it
// deliberately does not match the dialed host name, because boxes are
// addressed by IPs that change with DHCP. Both sides speak TLS 1.3 only and
// judge validity on CertClock. Session resumption is disabled so every
// connection proves its certificate afresh.
//
// Callers may Clone the configs and set NextProtos; the verification does
// not depend on anything else in them.
func MutualTLSConfig(caPEM, certPEM, keyPEM []byte) (server *tls.Config, client *tls.Config, err error) {
	return buildMutualTLS(caPEM, certPEM, keyPEM, "CA certificate", "node certificate", "node key")
}

// LoadMutualTLS reads the CA certificate, node certificate and node key
// from files and calls MutualTLSConfig; every error names the file at
// fault.
func LoadMutualTLS(caFile, certFile, keyFile string) (server *tls.Config, client *tls.Config, err error) {
	caPEM, err := readFile(caFile)
	if err != nil {
		return nil, nil, err
	}
	certPEM, err := readFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := readFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	return buildMutualTLS(caPEM, certPEM, keyPEM, caFile, certFile, keyFile)
}

// PeerNodeID returns the node id (certificate common name) of the verified
// peer of a mutual-TLS connection, or "" if there is none.
func PeerNodeID(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return ""
	}
	return cs.PeerCertificates[0].Subject.CommonName
}

func buildMutualTLS(caPEM, certPEM, keyPEM []byte, caName, certName, keyName string) (*tls.Config, *tls.Config, error) {
	caCerts, err := parseCertsPEM(caPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", caName, err)
	}
	pool := x509.NewCertPool()
	for _, c := range caCerts {
		if !c.IsCA {
			return nil, nil, fmt.Errorf("pki: %s: certificate %q is not a CA", caName, c.Subject.CommonName)
		}
		pool.AddCert(c)
	}
	if _, err := parseCertPEM(certPEM); err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", certName, err)
	}
	if _, err := parseKeyPEM(keyPEM); err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", keyName, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s does not match %s: %w", keyName, certName, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, nil, fmt.Errorf("pki: %s: %w", certName, err)
		}
		pair.Leaf = leaf
	}
	// Catch a certificate from another cluster (or a swapped file) at
	// startup rather than as a stream of handshake failures.
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{
			Roots:       pool,
			CurrentTime: CertClock(),
			KeyUsages:   []x509.ExtKeyUsage{usage},
		}); err != nil {
			return nil, nil, fmt.Errorf("pki: %s is not valid under %s: %w", certName, caName, err)
		}
	}

	server := &tls.Config{
		MinVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{pair},
		ClientAuth:             tls.RequireAndVerifyClientCert,
		ClientCAs:              pool,
		Time:                   CertClock,
		SessionTicketsDisabled: true,
	}
	client := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		Time:         CertClock,
		// The standard verification would also demand that the dialed
		// host name appear in the certificate; VerifyConnection below
		// does the chain and usage checks without that.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyPeer(cs, pool, x509.ExtKeyUsageServerAuth)
		},
	}
	return server, client, nil
}

var errNoPeerCert = errors.New("pki: peer presented no certificate")

func verifyPeer(cs tls.ConnectionState, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(cs.PeerCertificates) == 0 {
		return errNoPeerCert
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		CurrentTime:   CertClock(),
		KeyUsages:     []x509.ExtKeyUsage{usage},
	})
	if err != nil {
		return fmt.Errorf("pki: peer certificate not issued by the cluster CA: %w", err)
	}
	return nil
}
