package setup

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"
	qrcode "github.com/skip2/go-qrcode"

	"masterorder/httpapi"
	"masterorder/node/pki"
)

// caRoutes serve the cluster CA from tlsDir ("" in setup mode: none yet).
func caRoutes(e *echo.Echo, tlsDir string) {
	read := func(c echo.Context) ([]byte, bool) {
		if tlsDir == "" {
			return nil, false
		}
		b, err := os.ReadFile(pki.CAFile(tlsDir))
		if err != nil {
			return nil, false
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, false
		}
		return blk.Bytes, true
	}
	notYet := func(c echo.Context) error { return httpapi.Fail(c, http.StatusNotFound, "NOT_FOUND") }
	e.GET("/ca", func(c echo.Context) error {
		// One QR code for every tablet: iPhones and iPads get the profile,
		// the rest the certificate.
		ua := c.Request().UserAgent()
		if strings.Contains(ua, "iPhone") || strings.Contains(ua, "iPad") || strings.Contains(ua, "Macintosh") {
			return c.Redirect(http.StatusFound, "/ca.mobileconfig")
		}
		return c.Redirect(http.StatusFound, "/ca.crt")
	})
	e.GET("/ca.crt", func(c echo.Context) error {
		der, ok := read(c)
		if !ok {
			return notYet(c)
		}
		c.Response().Header().Set("Content-Disposition", `attachment; filename="masterorder-ca.crt"`)
		return c.Blob(http.StatusOK, "application/x-x509-ca-cert", der)
	})
	e.GET("/ca.mobileconfig", func(c echo.Context) error {
		der, ok := read(c)
		if !ok {
			return notYet(c)
		}
		c.Response().Header().Set("Content-Disposition", `attachment; filename="masterorder-ca.mobileconfig"`)
		return c.Blob(http.StatusOK, "application/x-apple-aspen-config", MobileConfig(der))
	})
	e.GET("/ca/qr.png", func(c echo.Context) error {
		if _, ok := read(c); !ok {
			return notYet(c)
		}
		// The address the owner's phone used reaches this box.
		png, err := qrcode.Encode("http://"+c.Request().Host+"/ca", qrcode.Medium, 512)
		if err != nil {
			return err
		}
		c.Response().Header().Set("Cache-Control", "no-store")
		return c.Blob(http.StatusOK, "image/png", png)
	})
}

// MobileConfig is an iOS configuration profile that installs the cluster
// CA (der) as a trusted root (the owner still turns on full trust in
// Settings → General → About → Certificate Trust Settings).
func MobileConfig(der []byte) []byte {
	sum := sha256.Sum256(der)
	uuid := func(b []byte) string {
		h := fmt.Sprintf("%X", b[:16])
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	}
	inner := sha256.Sum256(append([]byte("payload"), sum[:]...))
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>PayloadContent</key>
	<array>
		<dict>
			<key>PayloadCertificateFileName</key>
			<string>masterorder-ca.cer</string>
			<key>PayloadContent</key>
			<data>%s</data>
			<key>PayloadDescription</key>
			<string>MasterOrder store certificate</string>
			<key>PayloadDisplayName</key>
			<string>MasterOrder CA</string>
			<key>PayloadIdentifier</key>
			<string>local.masterorder.ca.%X</string>
			<key>PayloadType</key>
			<string>com.apple.security.root</string>
			<key>PayloadUUID</key>
			<string>%s</string>
			<key>PayloadVersion</key>
			<integer>1</integer>
		</dict>
	</array>
	<key>PayloadDisplayName</key>
	<string>MasterOrder store</string>
	<key>PayloadIdentifier</key>
	<string>local.masterorder.profile.%X</string>
	<key>PayloadRemovalDisallowed</key>
	<false/>
	<key>PayloadType</key>
	<string>Configuration</string>
	<key>PayloadUUID</key>
	<string>%s</string>
	<key>PayloadVersion</key>
	<integer>1</integer>
</dict>
</plist>
`, base64.StdEncoding.EncodeToString(der), sum[:4], uuid(inner[:]), sum[:4], uuid(sum[:]))
	return buf.Bytes()
}
