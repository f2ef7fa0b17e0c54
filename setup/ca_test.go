package setup

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"masterorder/node/pki"
)

// Every member serves the cluster CA for tablets: the certificate for
// Android, a profile for iOS, and /ca choosing by the device.
func TestMemberServesTheCA(t *testing.T) {
	ca, err := pki.NewCA("MasterOrder test", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ca.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "ca-key.pem"))
	e := echo.New()
	MemberRoutes(e, dir, nil)
	get := func(path, ua string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("User-Agent", ua)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	der := ca.Certificate().Raw
	if r := get("/ca.crt", ""); r.Code != 200 || !bytes.Equal(r.Body.Bytes(), der) {
		t.Errorf("/ca.crt: %d", r.Code)
	}
	r := get("/ca.mobileconfig", "")
	if r.Code != 200 || r.Header().Get("Content-Type") != "application/x-apple-aspen-config" {
		t.Fatalf("/ca.mobileconfig: %d %s", r.Code, r.Header().Get("Content-Type"))
	}
	// A well-formed plist whose data is the CA.
	dec := xml.NewDecoder(bytes.NewReader(r.Body.Bytes()))
	var datas []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("profile is not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "data" {
			var s string
			dec.DecodeElement(&s, &se)
			datas = append(datas, strings.TrimSpace(s))
		}
	}
	if len(datas) != 1 || datas[0] != base64.StdEncoding.EncodeToString(der) {
		t.Errorf("profile data: %v", datas)
	}
	if r := get("/ca", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)"); r.Code != http.StatusFound || r.Header().Get("Location") != "/ca.mobileconfig" {
		t.Errorf("/ca from an iPhone: %d %s", r.Code, r.Header().Get("Location"))
	}
	if r := get("/ca", "Mozilla/5.0 (Linux; Android 14)"); r.Header().Get("Location") != "/ca.crt" {
		t.Errorf("/ca from Android: %s", r.Header().Get("Location"))
	}
	if r := get("/ca/qr.png", ""); r.Code != 200 || r.Header().Get("Content-Type") != "image/png" {
		t.Errorf("/ca/qr.png: %d", r.Code)
	}
	// A member never drops back to setup mode: the claim channel and the
	// wizard's calls are refused.
	for _, p := range []string{"/setup/v1/info", "/setup/api/boxes"} {
		if r := get(p, ""); r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), "NOT_IN_SETUP") {
			t.Errorf("%s on a member: %d %s", p, r.Code, r.Body)
		}
	}
}
