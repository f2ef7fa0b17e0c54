// Package apitest checks HTTP traffic against the project's contract,
// api/openapi.yaml: a RoundTripper that validates every request a test
// sends and every response it gets (kin-openapi's openapi3filter), so a
// handler that answers a field, a status or a reason code the document
// lacks fails the test that made the call.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"masterorder/api"
)

// Contract is the loaded document and its router.
type Contract struct {
	Doc     *openapi3.T
	router  routers.Router
	schemas *schemas
}

var (
	loadOnce sync.Once
	loaded   *Contract
	loadErr  error
)

// Load parses and validates api/openapi.yaml once per test binary.
func Load() (*Contract, error) {
	loadOnce.Do(func() {
		loaded, loadErr = load(api.Document)
	})
	return loaded, loadErr
}

func load(doc []byte) (*Contract, error) {
	t, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load api/openapi.yaml: %w", err)
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	// Match paths on any host and port: the test servers listen on
	// loopback ports picked at run time.
	t.Servers = nil
	r, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("route api/openapi.yaml: %w", err)
	}
	sc, err := newSchemas(doc)
	if err != nil {
		return nil, err
	}
	return &Contract{Doc: t, router: r, schemas: sc}, nil
}

// The media types the document names besides those openapi3filter knows:
// their bodies are opaque to the schema (a picture, a page, a stream).
func init() {
	for _, ct := range []string{"image/jpeg", "image/png", "image/webp", "image/svg+xml", "image/x-icon", "text/html", "text/javascript",
		"text/css", "text/event-stream", "application/manifest+json"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
}

// MustLoad is Load for a test: a document that does not load fails it.
func MustLoad(t testing.TB) *Contract {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Transport validates each exchange against the contract and reports
// every mismatch to Report; the answer itself reaches the caller unchanged.
type Transport struct {
	Base     http.RoundTripper
	Contract *Contract
	// Report gets one line per mismatch.
	Report func(msg string)
}

// Wrap returns base (http.DefaultTransport when nil) validating every
// exchange; a mismatch fails t. Reports after t has ended are dropped
// (a request still in flight from a goroutine the test left behind).
func Wrap(t testing.TB, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	if _, already := base.(*Transport); already {
		return base
	}
	c := MustLoad(t)
	var mu sync.Mutex
	done := false
	t.Cleanup(func() { mu.Lock(); done = true; mu.Unlock() })
	return &Transport{Base: base, Contract: c, Report: func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Errorf("api/openapi.yaml mismatch: %s", msg)
		}
	}}
}

// Checked is Wrap for calls that t makes itself while it runs (a helper
// called with t): it reports straight to t, with no cleanup to register.
func Checked(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if _, already := base.(*Transport); already {
		return base
	}
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return &Transport{Base: base, Contract: c, Report: func(msg string) { t.Errorf("api/openapi.yaml mismatch: %s", msg) }}
}

// Client returns a copy of hc (a new client when nil) whose transport
// validates every exchange against the contract for t.
func Client(t testing.TB, hc *http.Client) *http.Client {
	t.Helper()
	out := &http.Client{}
	if hc != nil {
		*out = *hc
	}
	out.Transport = Wrap(t, out.Transport)
	return out
}

func (tr *Transport) base() http.RoundTripper {
	if tr.Base != nil {
		return tr.Base
	}
	return http.DefaultTransport
}

// RoundTrip sends req and validates it and its answer.
func (tr *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	// CORS preflights are answered by the middleware on every path: they
	// are no operation of the contract.
	if req.Method == http.MethodOptions {
		return tr.base().RoundTrip(req)
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	ex := tr.Contract.request(req, body)
	res, err := tr.base().RoundTrip(req)
	if err != nil {
		return res, err
	}
	ptr, mt, ok := tr.Contract.head(ex, res.StatusCode, res.Header, tr.Report)
	switch {
	case !ok:
		return res, nil
	case mt == "text/event-stream":
		if res.StatusCode == http.StatusOK {
			res.Body = &eventChecker{ReadCloser: res.Body, c: tr.Contract, report: tr.Report, what: ex.what}
		}
		return res, nil
	case mt != "application/json":
		return res, nil // a picture, a page, a download, text: no schema to hold it to
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		// Cut off mid-answer (a test that times out or drops it on purpose):
		// the caller sees the same error reading what was read.
		res.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
		return res, nil
	}
	tr.Contract.body(ex, res.StatusCode, ptr, b, tr.Report)
	return res, nil
}

// CheckExchange validates one exchange seen elsewhere (a browser's): the
// request with its body, and the answer's status, headers and body. A
// stream's body is not judged here.
func (c *Contract) CheckExchange(req *http.Request, reqBody []byte, status int, header http.Header, body []byte, report func(string)) {
	if req.Method == http.MethodOptions {
		return
	}
	ex := c.request(req, reqBody)
	if ptr, mt, ok := c.head(ex, status, header, report); ok && mt == "application/json" {
		c.body(ex, status, ptr, body, report)
	}
}

// exchange is a request as the document sees it.
type exchange struct {
	what     string
	in       *openapi3filter.RequestValidationInput
	routeErr error // no operation of the document
	reqErr   error // the document refuses the request
}

func (c *Contract) request(req *http.Request, body []byte) *exchange {
	ex := &exchange{what: req.Method + " " + req.URL.Path}
	check := req.Clone(context.Background())
	check.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := c.router.FindRoute(check)
	if err != nil {
		ex.routeErr = err
		return ex
	}
	// Security is the box's to judge (tests send bad tokens on purpose),
	// and a body on a call that reads none is ignored, not refused.
	// A JSON body is held to its schema compiled once (schemas.go), as
	// answers are: openapi3filter compiles the schema afresh for every
	// body, which costs milliseconds a call, and seconds on a body nested
	// thousands deep (a hostile test's, whose timeout it ate).
	ptr, ownBody := c.requestSchema(route, req.Header.Get("Content-Type"))
	ownBody = ownBody && len(body) > 0 // an absent body: openapi3filter judges "required"
	ex.in = &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true, ExcludeRequestBody: ownBody}}
	ex.reqErr = openapi3filter.ValidateRequest(context.Background(), ex.in)
	if ownBody && ex.reqErr == nil {
		if err := c.schemas.validate(ptr, body); err != nil {
			ex.reqErr = fmt.Errorf("request body: %w", err)
		}
	}
	return ex
}

// requestSchema is the JSON pointer of the schema the document gives
// route's request body in the JSON media type contentType names; false
// when the body is not JSON or has no schema there.
func (c *Contract) requestSchema(route *routers.Route, contentType string) (string, bool) {
	rb := route.Operation.RequestBody
	mt, _, err := mime.ParseMediaType(contentType)
	if rb == nil || rb.Value == nil || err != nil || mt != "application/json" {
		return "", false
	}
	base := pointer("paths", route.Path, strings.ToLower(route.Method), "requestBody")
	if strings.HasPrefix(rb.Ref, "#/") {
		base = strings.TrimPrefix(rb.Ref, "#")
	}
	for k, media := range rb.Value.Content {
		if kt, _, err := mime.ParseMediaType(k); err == nil && kt == mt && media != nil && media.Schema != nil {
			return base + pointer("content", k, "schema"), true
		}
	}
	return "", false
}

// head judges the route against the status, then the status, headers and
// media type of the answer; it returns the JSON pointer of the body's
// schema and the media type, ok when the body is to be judged further.
func (c *Contract) head(ex *exchange, status int, header http.Header, report func(string)) (string, string, bool) {
	switch {
	case ex.routeErr != nil:
		// Probing a path or method the contract does not have is fine as
		// long as the box refuses it as such.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			report(fmt.Sprintf("%s is not in the document (%v) but was answered %d", ex.what, ex.routeErr, status))
		}
		return "", "", false
	case ex.reqErr != nil && status < 300:
		report(fmt.Sprintf("%s: the document refuses this request but the box answered %d: %s", ex.what, status, short(ex.reqErr)))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: ex.in, Status: status, Header: header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: true, MultiError: true}}
	out.SetBodyBytes(nil)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		report(fmt.Sprintf("%s answered %d: %s", ex.what, status, short(err)))
		return "", "", false
	}
	if ex.in.Request.Method == http.MethodHead || status == http.StatusNoContent || status == http.StatusNotModified {
		return "", "", false
	}
	ptr, content := c.responseOf(ex.in.Route, status)
	if len(content) == 0 {
		return "", "", false // the document names no body (a redirect)
	}
	ct := header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	for k := range content {
		if kt, _, err := mime.ParseMediaType(k); err == nil && strings.EqualFold(kt, mt) {
			return ptr + pointer("content", k, "schema"), mt, true
		}
	}
	report(fmt.Sprintf("%s answered %d with Content-Type %q, which the document does not name for it", ex.what, status, ct))
	return "", "", false
}

// body validates a JSON body against the schema at ptr (compiled once,
// schemas.go).
func (c *Contract) body(ex *exchange, status int, ptr string, b []byte, report func(string)) {
	if err := c.schemas.validate(ptr, b); err != nil {
		report(fmt.Sprintf("%s answered %d %s: %s", ex.what, status, clip(b), short(err)))
	}
}

// responseOf is the JSON pointer of the response the document gives route
// for status (its component's, when it refers to one) and its content.
func (c *Contract) responseOf(route *routers.Route, status int) (string, openapi3.Content) {
	code := strconv.Itoa(status)
	ref := route.Operation.Responses.Value(code)
	if ref == nil {
		code = "default"
		ref = route.Operation.Responses.Default()
	}
	if ref == nil || ref.Value == nil {
		return "", nil
	}
	if strings.HasPrefix(ref.Ref, "#/") {
		return strings.TrimPrefix(ref.Ref, "#"), ref.Value.Content
	}
	return pointer("paths", route.Path, strings.ToLower(route.Method), "responses", code), ref.Value.Content
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// short is an error without the schema and value dumps openapi3filter
// appends (they run to thousands of lines for a menu).
func short(err error) string {
	msg := err.Error()
	for _, cut := range []string{"\nSchema:", "\nValue:"} {
		if i := strings.Index(msg, cut); i >= 0 {
			msg = msg[:i]
		}
	}
	if len(msg) > 1500 {
		msg = msg[:1500] + "…"
	}
	return msg
}

func clip(b []byte) string {
	const n = 300
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// eventChecker validates the kitchen stream's events (KitchenEvent) as
// the caller reads them.
type eventChecker struct {
	io.ReadCloser
	c       *Contract
	report  func(string)
	what    string
	pending []byte
	event   string
	data    []string
}

func (e *eventChecker) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	e.pending = append(e.pending, p[:n]...)
	for {
		i := bytes.IndexByte(e.pending, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSuffix(string(e.pending[:i]), "\r")
		e.pending = e.pending[i+1:]
		e.line(line)
	}
	return n, err
}

var eventTypes = map[string]bool{"snapshot": true, "order.created": true, "order.updated": true, "session.closed": true,
	"call.created": true, "call.done": true, "ping": true}

func (e *eventChecker) line(line string) {
	if line == "" { // end of an event
		if e.event != "" || len(e.data) > 0 {
			e.dispatch()
		}
		e.event, e.data = "", nil
		return
	}
	field, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "event":
		e.event = value
	case "data":
		e.data = append(e.data, value)
	case "id", "retry", "":
	default:
		e.report(fmt.Sprintf("%s: unknown stream field %q", e.what, field))
	}
}

func (e *eventChecker) dispatch() {
	if !eventTypes[e.event] {
		e.report(fmt.Sprintf("%s: event type %q is not in the document", e.what, e.event))
		return
	}
	data := strings.Join(e.data, "\n")
	if e.event == "ping" {
		if data != "" {
			e.report(fmt.Sprintf("%s: a ping carries data %q", e.what, data))
		}
		return
	}
	if err := e.c.ValidateEvent(e.event, []byte(data)); err != nil {
		e.report(fmt.Sprintf("%s: event %s %s: %s", e.what, e.event, clip([]byte(data)), short(err)))
	}
}

// ValidateEvent checks one kitchen stream event's data against
// KitchenEvent, and that its type field names the event.
func (c *Contract) ValidateEvent(event string, data []byte) error {
	if err := c.schemas.validate(pointer("components", "schemas", "KitchenEvent"), data); err != nil {
		return err
	}
	var v struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &v); err != nil || v.Type != event {
		return fmt.Errorf("data type %q under event %s", v.Type, event)
	}
	return nil
}
