// Package setuptest holds what tests of a store made by setup share.
package setuptest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"testing"
	"time"

	"masterorder/api/apitest"
)

// TabletClient is an HTTPS client that trusts the cluster CA the box at
// base (http://host:port) serves at /ca.crt: what the done page's QR code
// installs on a tablet. Every exchange is held to api/openapi.yaml.
func TabletClient(t testing.TB, base string) *http.Client {
	t.Helper()
	res, err := apitest.Client(t, nil).Get(base + "/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	der, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s/ca.crt: %d", base, res.StatusCode)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return apitest.Client(t, &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}})
}
