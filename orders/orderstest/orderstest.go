// Package orderstest starts in-process clusters with the domain attached,
// and speaks HTTP to them, for the tests of orders, the CLI and the UI.
package orderstest

import (
	"bytes"
	"encoding/json"
	"golang.org/x/crypto/bcrypt"
	"io"
	"net/http"
	"sync"
	"testing"

	"masterorder/api/apitest"
	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/ui"
)

// Store is a running cluster with an orders.Service on every node.
type Store struct {
	*nodetest.Cluster
	// Domain[i] is node i's domain settings (Configs[i] its node's); a
	// restart of node i attaches with them again.
	Domain []orders.Config
	// Svcs[i] is node i's service; a restart of node i replaces it.
	Svcs []*orders.Service

	before func(i int, nd *node.Node) // StartBefore
}

// Domain is the domain settings the test nodes start with: a fixed token
// secret, and the demo's relaxed staff password.
func Domain() orders.Config {
	c := orders.Defaults()
	c.Staff.TokenSecret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	c.Demo = true
	return c
}

// Start starts n nodes with the domain attached (opts on every node) and
// waits for a ready leader; they are stopped when the test ends. mutate
// changes node i's whole config file (node and domain settings alike);
// options nil means orders.NodeOptions(); a test that adds test-only
// commands or clocks starts from orders.NodeOptions() itself.
func Start(t testing.TB, n int, mutate func(i int, c *orders.FileConfig), options func(i int) node.Options, opts orders.Options) *Store {
	t.Helper()
	return StartBefore(t, n, mutate, options, nil, opts)
}

// StartBefore is Start with before, when set, run on node i after New and
// before the domain attaches (what a member adds to its box there, such
// as package update's box).
func StartBefore(t testing.TB, n int, mutate func(i int, c *orders.FileConfig), options func(i int) node.Options, before func(i int, nd *node.Node), opts orders.Options) *Store {
	t.Helper()
	s := &Store{Domain: make([]orders.Config, n), Svcs: make([]*orders.Service, n), before: before}
	// nodetest builds the node part (again on each fresh-ports attempt);
	// the domain part is added here and the file mutated as one.
	split := func(i int, c *node.Config) {
		f := orders.FileConfig{NodeConfig: *c, Config: Domain()}
		if mutate != nil {
			mutate(i, &f)
		}
		*c, s.Domain[i] = f.NodeConfig, f.Config
	}
	s.Cluster = nodetest.Start(t, n, split, withDomain(options), s.attach(t, opts))
	return s
}

// StartConfigs is Start on configs built by the test (a restored box).
func StartConfigs(t testing.TB, cfgs []orders.FileConfig, options func(i int) node.Options, opts orders.Options) *Store {
	t.Helper()
	s := &Store{Domain: make([]orders.Config, len(cfgs)), Svcs: make([]*orders.Service, len(cfgs))}
	nodes := make([]node.Config, len(cfgs))
	for i, f := range cfgs {
		nodes[i], s.Domain[i] = f.NodeConfig, f.Config
	}
	s.Cluster = nodetest.StartConfigs(t, nodes, withDomain(options), s.attach(t, opts))
	return s
}

func withDomain(options func(i int) node.Options) func(i int) node.Options {
	if options != nil {
		return options
	}
	return func(int) node.Options { return orders.NodeOptions() }
}

// attach runs on every (re)start of a node, after New and before Start.
func (s *Store) attach(t testing.TB, opts orders.Options) func(i int, nd *node.Node) {
	if opts.Pages == nil {
		opts.Pages = ui.Routes // a member serves the web apps (startStore)
	}
	return func(i int, nd *node.Node) {
		if s.before != nil {
			s.before(i, nd)
		}
		svc, err := orders.Attach(nd, s.Domain[i], opts)
		if err != nil {
			t.Fatalf("attach node %d: %v", i, err)
		}
		s.Svcs[i] = svc
	}
}

// URL is node i's HTTP base URL.
func (s *Store) URL(i int) string { return "http://" + s.Configs[i].HTTPAddr }

var (
	hashMu sync.Mutex
	hashes = map[string]string{}
)

// PasswordHash is a staff password hash of pw, computed once per test
// binary.
func PasswordHash(t testing.TB, pw string) string {
	t.Helper()
	hashMu.Lock()
	defer hashMu.Unlock()
	if h, ok := hashes[pw]; ok {
		return h
	}
	// bcrypt's lowest cost: the cost travels in the hash and the server
	// checks any cost, and tests log in hundreds of times under -race on a
	// loaded box, where the default cost took seconds per login.
	b, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	hashes[pw] = string(b)
	return string(b)
}

// Resp is one HTTP answer; Status is -1 when the node did not answer.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into v or fails the test.
func (r Resp) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Reason is the body's reasonCode, "" if it has none.
func (r Resp) Reason() string {
	var e struct {
		ReasonCode string `json:"reasonCode"`
	}
	json.Unmarshal(r.Body, &e)
	return e.ReasonCode
}

// Do sends one JSON request, checked against api/openapi.yaml (a
// mismatch fails t): body nil (none), a string or []byte (as is),
// or any other value (marshalled).
func Do(t testing.TB, hc *http.Client, method, url string, hdr map[string]string, body any) Resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// Every exchange is checked against the contract (api/openapi.yaml).
	checked := *hc
	checked.Transport = apitest.Checked(t, hc.Transport)
	res, err := checked.Do(req)
	if err != nil {
		return Resp{Status: -1, Body: []byte(err.Error())}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return Resp{Status: res.StatusCode, Header: res.Header, Body: b}
}
