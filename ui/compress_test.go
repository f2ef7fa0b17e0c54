package ui

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// textFile reports whether an embedded file is text (html, js, css, svg,
// json, txt): what the pages download on a crowded Wi-Fi.
func textFile(name string) bool {
	ct := contentType(name)
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") || strings.Contains(ct, "svg")
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return out
}

// TestTextAssetsGzipped: every text file of the pages goes gzip-compressed
// to a client that accepts it (the bytes made once, at start), with
// Vary: Accept-Encoding and an ETag of its own; a client that does not (or
// refuses gzip with q=0) gets the file as it is, under the plain ETag.
// If-None-Match and HEAD work on either.
func TestTextAssetsGzipped(t *testing.T) {
	e := newServer()
	var plain, packed int
	n := 0
	for name, f := range files {
		if !textFile(name) || !strings.Contains(name, "/") {
			continue
		}
		app, rest, _ := strings.Cut(name, "/")
		target := "/" + app + "/" + rest
		n++
		gz := do(e, http.MethodGet, target, map[string]string{"Accept-Encoding": "gzip, deflate, br"})
		if gz.Code != http.StatusOK {
			t.Errorf("GET %s: %d", target, gz.Code)
			continue
		}
		if f.gz == nil { // too small to gain
			if gz.Header().Get("Content-Encoding") != "" || !bytes.Equal(gz.Body.Bytes(), f.body) {
				t.Errorf("GET %s: a file not worth compressing came %q", target, gz.Header().Get("Content-Encoding"))
			}
			if len(f.body) > 200 {
				t.Errorf("%s (%d bytes) is not compressed", name, len(f.body))
			}
			continue
		}
		if got := gz.Header().Get("Content-Encoding"); got != "gzip" {
			t.Errorf("GET %s with gzip accepted: Content-Encoding %q", target, got)
			continue
		}
		if got := gz.Header().Get("Vary"); got != "Accept-Encoding" {
			t.Errorf("GET %s: Vary %q", target, got)
		}
		if got := gz.Header().Get("Content-Length"); got != strconv.Itoa(gz.Body.Len()) {
			t.Errorf("GET %s: Content-Length %s for %d bytes", target, got, gz.Body.Len())
		}
		if !bytes.Equal(gunzip(t, gz.Body.Bytes()), f.body) {
			t.Errorf("GET %s: the gzip body is not the file", target)
		}
		// The same bytes each time: made once, not per request.
		if again := do(e, http.MethodGet, target, map[string]string{"Accept-Encoding": "gzip"}); !bytes.Equal(again.Body.Bytes(), gz.Body.Bytes()) || &f.gz[0] != &files[name].gz[0] {
			t.Errorf("GET %s: the gzip bytes differ between requests", target)
		}
		id := do(e, http.MethodGet, target, nil)
		if id.Header().Get("Content-Encoding") != "" || !bytes.Equal(id.Body.Bytes(), f.body) || id.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("GET %s without Accept-Encoding: %q, %d bytes, Vary %q", target, id.Header().Get("Content-Encoding"), id.Body.Len(), id.Header().Get("Vary"))
		}
		gzTag, idTag := gz.Header().Get("ETag"), id.Header().Get("ETag")
		if gzTag == "" || idTag == "" || gzTag == idTag {
			t.Errorf("GET %s: ETags %q (gzip) and %q (plain), want two", target, gzTag, idTag)
		}
		for ae, want := range map[string]string{"gzip;q=0, br": "", "identity": "", "*": "gzip", "GZIP;q=0.5": "gzip", "br;q=1, *;q=0": ""} {
			if got := do(e, http.MethodGet, target, map[string]string{"Accept-Encoding": ae}).Header().Get("Content-Encoding"); got != want {
				t.Errorf("GET %s, Accept-Encoding %q: Content-Encoding %q, want %q", target, ae, got, want)
			}
		}
		if r := do(e, http.MethodGet, target, map[string]string{"Accept-Encoding": "gzip", "If-None-Match": gzTag}); r.Code != http.StatusNotModified || r.Header().Get("Vary") != "Accept-Encoding" || r.Header().Get("Content-Encoding") != "" {
			t.Errorf("GET %s, gzip, If-None-Match its ETag: %d Vary %q Content-Encoding %q", target, r.Code, r.Header().Get("Vary"), r.Header().Get("Content-Encoding"))
		}
		if r := do(e, http.MethodGet, target, map[string]string{"If-None-Match": idTag}); r.Code != http.StatusNotModified {
			t.Errorf("GET %s, If-None-Match the plain ETag: %d", target, r.Code)
		}
		if r := do(e, http.MethodGet, target, map[string]string{"If-None-Match": gzTag}); r.Code != http.StatusOK || !bytes.Equal(r.Body.Bytes(), f.body) {
			t.Errorf("GET %s without gzip, If-None-Match the gzip ETag: %d", target, r.Code)
		}
		if r := do(e, http.MethodHead, target, map[string]string{"Accept-Encoding": "gzip"}); r.Code != http.StatusOK || r.Body.Len() != 0 || r.Header().Get("Content-Encoding") != "gzip" || r.Header().Get("Content-Length") != strconv.Itoa(len(f.gz)) {
			t.Errorf("HEAD %s with gzip: %d, %d body bytes, %q, length %s", target, r.Code, r.Body.Len(), r.Header().Get("Content-Encoding"), r.Header().Get("Content-Length"))
		}
		if r := do(e, http.MethodGet, target, map[string]string{"Accept-Encoding": "gzip", "Range": "bytes=0-9"}); r.Code != http.StatusOK || !bytes.Equal(r.Body.Bytes(), f.gz) {
			t.Errorf("GET %s, gzip and a Range: %d with %d bytes, want the whole compressed file", target, r.Code, r.Body.Len())
		}
		plain += len(f.body)
		packed += gz.Body.Len()
	}
	if n < 20 || packed == 0 {
		t.Fatalf("only %d text files checked", n)
	}
	t.Logf("%d text files: %d bytes as they are, %d gzip-compressed (%.0f%%)", n, plain, packed, 100*float64(packed)/float64(plain))
}
