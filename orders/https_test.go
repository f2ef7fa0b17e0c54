package orders_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"masterorder/api/apitest"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders"
)

// A phone on the guest Wi-Fi sniffing plain HTTP: with https_addr set and
// allow_plain_staff off, nothing staff-related is served in clear — the
// login (with its password) is refused before it is evaluated, staff and
// kitchen pages redirect to HTTPS, the kitchen stream with ?token= is
// refused — while guests order as before. Over HTTPS the same calls work,
// cookies are Secure and HSTS is sent.
func TestPlainHTTPServesGuestsOnly(t *testing.T) {
	httpsPorts := map[string]int{}
	s := startStore(t, 3, func(i int, c *orders.FileConfig) {
		httpsPorts[c.NodeID] = nodetest.FreePort(t)
	})
	// startStore logged in over plain HTTP; restart the nodes with the
	// restriction on (files and the token survive).
	s.seedMenu()
	sess := s.openSession("S1")
	sessions := []session{s.openSession("S2"), s.openSession("S3"), s.openSession("S4")}
	s.c.StopAll()
	for i := range s.c.Configs {
		c := &s.c.Configs[i]
		c.HTTP.AllowPlainStaff = false
		c.HTTPSAddr = fmt.Sprintf("127.0.0.1:%d", httpsPorts[c.NodeID])
	}
	for i := range s.c.Configs {
		peers := append([]node.Peer(nil), s.c.Configs[i].Peers...)
		for j := range peers {
			peers[j].HTTPSAddr = fmt.Sprintf("127.0.0.1:%d", httpsPorts[peers[j].ID])
		}
		s.c.Configs[i].Peers = peers
	}
	for i := range s.c.Nodes {
		s.c.StartNode(i)
	}
	s.c.WaitLeader(20 * time.Second)

	plain := apitest.Client(t, &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})
	get := func(c *http.Client, url string, hdr map[string]string, method string, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		return res
	}
	bearer := map[string]string{"Authorization": "Bearer " + s.token}
	for i := range s.c.Configs {
		base := s.url(i)
		for _, p := range []string{"/staff/", "/kitchen/", "/staff", "/kitchen/index.html"} {
			res := get(plain, base+p, nil, "GET", "")
			res.Body.Close()
			loc := res.Header.Get("Location")
			if res.StatusCode != http.StatusFound || !strings.HasPrefix(loc, "https://127.0.0.1:"+fmt.Sprint(httpsPorts[s.c.Configs[i].NodeID])) {
				t.Errorf("plain %s on node %d: %d Location %q", p, i, res.StatusCode, loc)
			}
		}
		for _, call := range []struct{ method, path, body string }{
			{"POST", "/api/staff/login", `{"password":"` + staffPassword + `"}`},
			{"GET", "/api/staff/menu", ""},
			{"GET", "/api/staff/sessions", ""},
			{"GET", "/api/kitchen/orders", ""},
			{"GET", "/api/kitchen/stream?token=" + s.token, ""},
			{"PUT", "/api/staff/stock/gyoza", `{"quantity":1}`},
			{"GET", "/api/staff/backup", ""},
		} {
			res := get(plain, base+call.path, bearer, call.method, call.body)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"HTTPS_REQUIRED"`) {
				t.Errorf("plain %s %s on node %d: %d %s", call.method, call.path, i, res.StatusCode, b)
			}
			if strings.Contains(string(b), sess.PIN) || res.Header.Get("Set-Cookie") != "" {
				t.Errorf("plain %s %s leaked: %s %v", call.method, call.path, b, res.Header)
			}
		}
		// Guests carry on over plain HTTP.
		if r := s.guest(sessions[i]).order(i, newKey(), cart(line("tea", 1))); r.Status != 200 {
			t.Errorf("guest order over plain HTTP on node %d: %d %s", i, r.Status, r.Body)
		}
		res := get(plain, base+"/guest/", nil, "GET", "")
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("guest app over plain HTTP: %d", res.StatusCode)
		}
	}
	// HTTPS with the cluster CA installed, as a staff tablet has it.
	caPEM, err := os.ReadFile(s.c.Configs[0].TLS.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	secure := apitest.Client(t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})
	for i, c := range s.c.Configs {
		base := "https://" + c.HTTPSAddr
		res := get(secure, base+"/api/staff/login", nil, "POST", `{"password":"`+staffPassword+`"}`)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("HTTPS login on node %d: %d", i, res.StatusCode)
		}
		cookies := res.Header.Values("Set-Cookie")
		if len(cookies) < 2 {
			t.Errorf("HTTPS login cookies: %q", cookies)
		}
		for _, ck := range cookies {
			if !strings.Contains(ck, "Secure") || !strings.Contains(ck, "SameSite=Strict") {
				t.Errorf("cookie without Secure over HTTPS: %q", ck)
			}
		}
		if res.Header.Get("Strict-Transport-Security") == "" {
			t.Errorf("no HSTS over HTTPS on node %d", i)
		}
		for _, p := range []string{"/api/staff/menu", "/api/kitchen/orders", "/staff/", "/kitchen/"} {
			res := get(secure, base+p, bearer, "GET", "")
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Errorf("HTTPS %s on node %d: %d", p, i, res.StatusCode)
			}
		}
	}
	res := get(secure, "https://"+s.c.Configs[0].HTTPSAddr+"/api/staff/stock", bearer, "GET", "")
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), `{"sku":"gyoza","quantity":10}`) {
		t.Errorf("a plain-HTTP stock write got through: %s", b)
	}
	// The status tells an HTTPS page where the other boxes' HTTPS is.
	var st node.Status
	s.do(0, "GET", "/api/cluster/status", nil, nil).json(t, &st)
	for _, m := range st.Nodes {
		if m.HTTPSAddr != fmt.Sprintf("127.0.0.1:%d", httpsPorts[m.ID]) {
			t.Errorf("status httpsAddr of %s: %q", m.ID, m.HTTPSAddr)
		}
	}
}
