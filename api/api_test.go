package api_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"masterorder/api"
	"masterorder/api/apitest"
	"masterorder/httpapi"
	"masterorder/orders"
	"masterorder/orders/orderstest"
	"masterorder/setup"
	"masterorder/setup/join"
	"masterorder/update"
)

// The document loads and is a valid OpenAPI 3.1 document.
func TestDocumentIsValid(t *testing.T) {
	c := apitest.MustLoad(t)
	if c.Doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", c.Doc.OpenAPI)
	}
}

// The reason codes the document names are exactly httpapi's message
// table: neither may gain a code the other lacks.
func TestReasonCodesEqualMessageTable(t *testing.T) {
	c := apitest.MustLoad(t)
	ref := c.Doc.Components.Schemas["ReasonCode"]
	if ref == nil || ref.Value == nil {
		t.Fatal("components.schemas.ReasonCode is missing")
	}
	var doc []string
	for _, v := range ref.Value.Enum {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("ReasonCode enum holds %v (%T)", v, v)
		}
		doc = append(doc, s)
	}
	if d := diff(doc, httpapi.Codes()); d != "" {
		t.Fatalf("ReasonCode enum and httpapi's message table differ:\n%s", d)
	}
}

// diff lists what each side has that the other lacks, and duplicates.
func diff(doc, table []string) string {
	var b strings.Builder
	seen := map[string]int{}
	for _, c := range doc {
		seen[c]++
		if seen[c] == 2 {
			b.WriteString("  named twice in the document: " + c + "\n")
		}
		if !slices.Contains(table, c) {
			b.WriteString("  in api/openapi.yaml, not in httpapi/messages.go: " + c + "\n")
		}
	}
	for _, c := range table {
		if seen[c] == 0 {
			b.WriteString("  in httpapi/messages.go, not in api/openapi.yaml: " + c + "\n")
		}
	}
	return b.String()
}

var echoParam = regexp.MustCompile(`:[A-Za-z0-9_]+|\*`)
var docParam = regexp.MustCompile(`\{[^}]+\}`)

// Every route a box registers is in the document with its method, and
// every operation of the document is a route a box registers; for a member
// (the box's own, the domain's, the web apps, setup's member routes and
// the console's add and replace) and for a box in setup mode (the wizard
// and the claim channel) alike. A path item's x-served-by names the
// servers that serve it (absent: a member only). Path parameters are
// compared by position; an echo wildcard is one parameter.
func TestEveryRouteDocumented(t *testing.T) {
	c := apitest.MustLoad(t)
	st := orderstest.Start(t, 1, nil, nil, orders.Options{StaffPasswordHash: orderstest.PasswordHash(t, "pw-for-tests")})
	// What `masterorder run` adds to a member (cli/member.go).
	member := st.Nodes[0].Echo()
	setup.MemberRoutes(member, t.TempDir(), nil)
	join.NewConsole(st.Nodes[0], orders.FileConfig{}, t.TempDir(), nil).Routes(member.Group("/api/staff"))
	upd, err := update.New(st.Nodes[0], update.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	upd.Routes(member.Group("/api/staff"))
	compareRoutes(t, "a member", servedRoutes(member), documentedRoutes(t, c, "member"), 50)

	dir := t.TempDir()
	box, err := setup.New(setup.Options{Layout: setup.Layout{EtcDir: filepath.Join(dir, "etc"), StateDir: filepath.Join(dir, "state"),
		BootDir: filepath.Join(dir, "boot"), SysRoot: filepath.Join(dir, "sys")}, Listen: "127.0.0.1:0", WindowFromStart: true,
		Start: func(context.Context, string, func(*echo.Echo)) (func(), error) {
			return nil, errors.New("not started in this test")
		}})
	if err != nil {
		t.Fatal(err)
	}
	compareRoutes(t, "a box in setup mode", servedRoutes(box.Routes()), documentedRoutes(t, c, "setup"), 20)
}

// servedRoutes are e's routes as "METHOD /path/{}".
func servedRoutes(e *echo.Echo) map[string]bool {
	served := map[string]bool{}
	for _, r := range e.Routes() {
		if r.Method == "CONNECT" || r.Method == "PROPFIND" || r.Method == "REPORT" { // echo's Any; OpenAPI cannot name them
			continue
		}
		if strings.HasPrefix(r.Method, "echo_route_") || r.Method == "echo_any" { // echo's internal not-found/any entries
			continue
		}
		served[r.Method+" "+echoParam.ReplaceAllString(r.Path, "{}")] = true
	}
	return served
}

// documentedRoutes are the document's operations that server serves, as
// "METHOD /path/{}".
func documentedRoutes(t *testing.T, c *apitest.Contract, server string) map[string]bool {
	documented := map[string]bool{}
	for path, item := range c.Doc.Paths.Map() {
		servedBy := []string{"member"}
		if v, ok := item.Extensions["x-served-by"]; ok {
			servedBy = nil
			list, _ := v.([]any)
			for _, s := range list {
				name, _ := s.(string)
				if name != "member" && name != "setup" {
					t.Errorf("%s: x-served-by names %v; want member and/or setup", path, s)
				}
				servedBy = append(servedBy, name)
			}
		}
		if !slices.Contains(servedBy, server) {
			continue
		}
		// A path an echo wildcard serves besides {file} (an app's own
		// folder) names that route.
		route := docParam.ReplaceAllString(path, "{}")
		if r, ok := item.Extensions["x-echo-route"].(string); ok {
			route = echoParam.ReplaceAllString(r, "{}")
		}
		for method := range item.Operations() {
			documented[method+" "+route] = true
		}
	}
	return documented
}

func compareRoutes(t *testing.T, who string, served, documented map[string]bool, atLeast int) {
	t.Helper()
	var missing, extra []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	for _, r := range missing {
		t.Errorf("%s serves it, api/openapi.yaml does not name it for %s: %s", who, who, r)
	}
	for _, r := range extra {
		t.Errorf("api/openapi.yaml names it for %s, which does not serve it: %s", who, r)
	}
	if len(served) < atLeast {
		t.Fatalf("only %d routes found for %s: %v", len(served), who, served)
	}
}

// Every box serves the document, to anyone, as it is built in; the
// exchange itself is checked against the document.
func TestServed(t *testing.T) {
	st := orderstest.Start(t, 1, nil, nil, orders.Options{StaffPasswordHash: orderstest.PasswordHash(t, "pw-for-tests")})
	hc := apitest.Client(t, nil)
	res, err := hc.Get(st.URL(0) + api.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != api.ContentType || string(b) != string(api.Document) {
		t.Fatalf("GET %s: %d %q, %d bytes (want %d)", api.Path, res.StatusCode, res.Header.Get("Content-Type"), len(b), len(api.Document))
	}
}

// Every reason code the source answers with (a status and a code side by
// side, a Code/Reason field, a reasonCode literal, a Reason constant) is
// in the document: a refusal added in an untested path cannot slip past
// the ReasonCode enum. Audit rows that are not refusals are AuditEvent.
func TestSourceReasonCodesDocumented(t *testing.T) {
	c := apitest.MustLoad(t)
	known := map[string]bool{}
	for _, name := range []string{"ReasonCode", "AuditEvent"} {
		for _, v := range c.Doc.Components.Schemas[name].Value.Enum {
			known[v.(string)] = true
		}
	}
	patterns := []*regexp.Regexp{
		regexp.MustCompile(`http\.Status\w+,\s*"([A-Z][A-Z0-9_]+[A-Z0-9])"`),
		regexp.MustCompile(`\b(?:Code|Reason|ReasonCode):\s*"([A-Z][A-Z0-9_]+[A-Z0-9])"`),
		regexp.MustCompile(`"reasonCode":\s*"([A-Z][A-Z0-9_]+[A-Z0-9])"`),
		regexp.MustCompile(`\bReason\w*\s*=\s*"([A-Z][A-Z0-9_]+[A-Z0-9])"`),
		regexp.MustCompile(`rejections\.add\([^,]+,\s*"([A-Z][A-Z0-9_]+[A-Z0-9])"`),
	}
	found := 0
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "etcd" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasPrefix(p, filepath.Join("..", "bench")) {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, re := range patterns {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				found++
				if !known[m[1]] {
					t.Errorf("%s answers reason code %s, which api/openapi.yaml does not name", p, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 100 {
		t.Fatalf("only %d reason codes found in the source: the patterns no longer match how handlers refuse", found)
	}
	t.Logf("%d reason codes in the source checked", found)
}
