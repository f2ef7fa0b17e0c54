// Package ui holds the web apps every node serves: the guest ordering app,
// the kitchen display, the staff console (with the cluster page) and the
// shared assets, order-sdk.js among them. The files are plain HTML, ES
// modules and CSS embedded into the binary: no build step, no CDN.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

//go:embed static
var embedded embed.FS

// static is the tree the browser sees: static/guest/index.html is served
// as /guest/index.html.
var static = mustSub(embedded, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// apps are the top-level folders served under their own name; a request
// for the folder itself gets its index.html.
var apps = []string{"guest", "kitchen", "staff", "setup", "assets"}

// Register mounts the web apps on e:
//
//	GET /          redirect to /staff/
//	GET /guest/*   guest ordering app (/guest/?s=SESSION)
//	GET /kitchen/* kitchen display
//	GET /staff/*   staff console, cluster page included
//	GET /setup/*   the setup wizard (a member shows the setup it ran, or that it is set up)
//	GET /assets/*  shared JS and CSS (/assets/order-sdk.js)
//
// HEAD is answered on the same paths. The QR endpoint is separate
// (QRHandler) because it sits behind staff auth; Routes mounts both.
func Register(e *echo.Echo) {
	e.GET("/", func(c echo.Context) error {
		return c.Redirect(http.StatusFound, "/staff/")
	})
	mount(e, apps)
}

// Routes is what a member serves of the web apps: the apps on e
// (Register) and GET /api/staff/qr in staff, the group behind staff auth
// (QRHandler). The member's start passes it to the domain as
// orders.Options.Pages: the domain serves the API and imports no pages.
func Routes(e *echo.Echo, staff *echo.Group) {
	Register(e)
	staff.GET("/qr", QRHandler)
}

// RegisterSetup mounts what a box in setup mode serves: the wizard at
// /setup/ (also at /) and the shared assets.
func RegisterSetup(e *echo.Echo) {
	e.GET("/", func(c echo.Context) error {
		return c.Redirect(http.StatusFound, "/setup/")
	})
	mount(e, []string{"setup", "assets"})
}

func mount(e *echo.Echo, apps []string) {
	for _, app := range apps {
		prefix := "/" + app
		slash := func(c echo.Context) error {
			target := prefix + "/"
			if q := c.QueryString(); q != "" {
				target += "?" + q
			}
			return c.Redirect(http.StatusFound, target)
		}
		serve := func(c echo.Context) error {
			return serveFile(c, app, c.Param("*"))
		}
		e.GET(prefix, slash)
		e.HEAD(prefix, slash)
		e.GET(prefix+"/*", serve)
		e.HEAD(prefix+"/*", serve)
	}
}

// file is one embedded file, read once at start. A text file is also
// gzip-compressed then, once: a guest's phone on a crowded Wi-Fi gets a
// third of the bytes, and no request pays for the compression.
type file struct {
	body        []byte
	contentType string
	etag        string
	gz          []byte // body gzip-compressed; nil when that does not make it smaller
	gzETag      string // the compressed representation's own ETag
}

var files = loadFiles()

func loadFiles() map[string]file {
	out := map[string]file{}
	err := fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		tag := hex.EncodeToString(sum[:12])
		f := file{body: body, contentType: contentType(p), etag: `"` + tag + `"`}
		if compressible(f.contentType) {
			if gz := gzipped(body); len(gz) < len(body) {
				f.gz, f.gzETag = gz, `"`+tag+`-gzip"`
			}
		}
		out[p] = f
		return nil
	})
	if err != nil {
		panic(err)
	}
	return out
}

// compressible: the text types (html, js, css, svg, json, txt).
func compressible(contentType string) bool {
	return strings.HasPrefix(contentType, "text/") || strings.HasPrefix(contentType, "application/json") || strings.HasPrefix(contentType, "image/svg+xml")
}

func gzipped(body []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(body)
	w.Close()
	return buf.Bytes()
}

// acceptsGzip reads Accept-Encoding (RFC 9110 12.5.3): gzip (or x-gzip)
// with a weight above 0, or, gzip not named, "*" with one.
func acceptsGzip(values []string) bool {
	star := false
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					}
				}
			}
			switch coding {
			case "gzip", "x-gzip":
				return q > 0
			case "*":
				star = q > 0
			}
		}
	}
	return star
}

// contentType is fixed here rather than taken from the host's mime tables,
// which differ between systems (a module served as text/plain does not run).
func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	case ".txt", ".md":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// start is the Last-Modified of every file: the files change only with the
// binary.
var start = time.Now().UTC().Truncate(time.Second)

func serveFile(c echo.Context, app, rest string) error {
	name := app + "/" + rest
	if rest == "" || strings.HasSuffix(rest, "/") {
		name += "index.html"
	}
	name = path.Clean(name)
	f, ok := files[name]
	if !ok || !strings.HasPrefix(name, app+"/") {
		return echo.NewHTTPError(http.StatusNotFound)
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Type", f.contentType)
	body, etag := f.body, f.etag
	if f.gz != nil {
		// Two representations of one file: caches keep them apart by
		// Accept-Encoding, browsers revalidate each by its own ETag.
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(c.Request().Header.Values("Accept-Encoding")) {
			body, etag = f.gz, f.gzETag
			h.Set("Content-Encoding", "gzip")
			// ServeContent leaves out Content-Length once there is a
			// Content-Encoding: the length is known, so it is sent, and a
			// Range (which would cut the compressed bytes) is ignored, as
			// a server may.
			h.Set("Content-Length", strconv.Itoa(len(body)))
			c.Request().Header.Del("Range")
		}
	}
	h.Set("ETag", etag)
	// http.ServeContent handles HEAD and If-None-Match (a 304 drops
	// Content-Encoding and Content-Length) and ranges of a plain file.
	http.ServeContent(c.Response(), c.Request(), name, start, bytes.NewReader(body))
	return nil
}
