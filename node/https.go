package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/node/certrenew"
)

// Staff and kitchen traffic (passwords, tokens, table PINs) must not cross
// the guest Wi-Fi in clear: each box serves HTTPS on https_addr with a
// certificate from the cluster CA, and its plain-HTTP port carries only
// the guest app and the guest API unless [http] allow_plain_staff is set.

// staffOnlyPath reports the pages and APIs that plain HTTP does not serve.
func staffOnlyPath(p string) (page bool, api bool) {
	for _, pre := range []string{"/api/staff/", "/api/kitchen/"} {
		if strings.HasPrefix(p, pre) || p+"/" == pre {
			return false, true
		}
	}
	for _, pre := range []string{"/staff/", "/kitchen/"} {
		if strings.HasPrefix(p, pre) || p+"/" == pre {
			return true, false
		}
	}
	return false, false
}

// plainHTTPGuard redirects staff pages to HTTPS and answers their APIs
// 403 HTTPS_REQUIRED on plain HTTP; on HTTPS it adds HSTS.
func (n *Node) plainHTTPGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.TLS != nil {
			// Browsers ignore HSTS for IP-address hosts; for a name
			// (public_url's host) it keeps a tablet from ever being
			// talked down to plain HTTP.
			c.Response().Header().Set("Strict-Transport-Security", "max-age=31536000")
			return next(c)
		}
		if n.cfg.HTTP.AllowPlainStaff {
			return next(c)
		}
		page, api := staffOnlyPath(r.URL.Path)
		switch {
		case page && (r.Method == http.MethodGet || r.Method == http.MethodHead) && n.cfg.HTTPSAddr != "":
			c.Response().Header().Set("Cache-Control", "no-store")
			return c.Redirect(http.StatusFound, n.httpsURL(r))
		case page || api:
			return httpapi.Fail(c, http.StatusForbidden, "HTTPS_REQUIRED")
		}
		return next(c)
	}
}

// httpsURL is the request's URL on this box's HTTPS port, under the host
// name the browser used.
func (n *Node) httpsURL(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	_, port, _ := net.SplitHostPort(n.cfg.HTTPSAddr)
	u := url.URL{Scheme: "https", Host: net.JoinHostPort(strings.Trim(host, "[]"), port), Path: r.URL.Path, RawQuery: r.URL.RawQuery}
	return u.String()
}

// httpsConfig is the HTTPS listener's TLS: this box's server certificate
// as its renewer holds it (certs.go: a renewed pair is served from the
// next handshake), no client certificates (tablets have none).
func (n *Node) httpsConfig(r *certrenew.Renewer) *tls.Config {
	// No Certificates: with them, a handshake without SNI (a tablet
	// dialling an IP address) would never reach GetCertificate.
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate, NextProtos: []string{"http/1.1"}}
}

// startHTTPS serves the same routes on https_addr.
func (n *Node) startHTTPS() error {
	if n.cfg.HTTPSAddr == "" {
		return nil
	}
	renewer, err := n.newCertRenewer()
	if err != nil {
		return &ConfigError{Setting: "tls.https_cert_file", Problem: err.Error()}
	}
	tc := n.httpsConfig(renewer)
	ln, err := net.Listen("tcp", bindAddr(n.cfg.HTTPSAddr))
	if err != nil {
		return fmt.Errorf("listen https_addr %s: %w", n.cfg.HTTPSAddr, err)
	}
	n.https = &http.Server{Handler: n.echo, TLSConfig: tc, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		// Failed handshakes (scanners on the guest Wi-Fi) are not news.
		ErrorLog: log.New(io.Discard, "", 0)}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.https.Serve(tls.NewListener(limitConns(ln, MaxConnsPerAddr), tc)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("https server stopped", "error", err)
		}
	}()
	n.runCertRenewer(renewer)
	return nil
}

// Guests may learn the node list (order-sdk.js fails over with it) but
// not the cluster's inner state or /metrics: those go to staff (a valid
// token) and to the box itself (loopback: an operator or a local scraper).

// SetStaffCheck installs how the node recognizes a staff request (the
// domain owns tokens).
func (n *Node) SetStaffCheck(fn func(r *http.Request) bool) {
	n.extrasMu.Lock()
	n.staffCheck = fn
	n.extrasMu.Unlock()
}

// privileged reports a staff request or one from this box itself.
func (n *Node) privileged(r *http.Request) bool {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return true
		}
	}
	n.extrasMu.Lock()
	fn := n.staffCheck
	n.extrasMu.Unlock()
	return fn != nil && fn(r)
}

// GuestStatus is what /api/cluster/status tells a guest: the nodes to
// fail over to.
type GuestStatus struct {
	NodeID string        `json:"nodeId"`
	Nodes  []GuestMember `json:"nodes"`
}

// GuestMember is one node in GuestStatus.
type GuestMember struct {
	ID        string `json:"id"`
	HTTPAddr  string `json:"httpAddr"`
	HTTPSAddr string `json:"httpsAddr,omitempty"`
}

func (n *Node) guestStatus() GuestStatus {
	g := GuestStatus{NodeID: n.cfg.NodeID, Nodes: []GuestMember{}}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			id := string(srv.ID)
			g.Nodes = append(g.Nodes, GuestMember{ID: id, HTTPAddr: n.MemberHTTP(id), HTTPSAddr: n.memberHTTPS(id)})
		}
	}
	return g
}

// staffOnly guards a handler for privileged callers (401 otherwise).
func (n *Node) staffOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !n.privileged(c.Request()) {
			return httpapi.Fail(c, http.StatusUnauthorized, "UNAUTHORIZED")
		}
		return next(c)
	}
}
