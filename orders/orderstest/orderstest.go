// Package orderstest starts in-process clusters with the domain attached,
// and speaks HTTP to them, for the tests of orders, the CLI and the UI.
package orderstest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"masterorder/node"
	"masterorder/node/nodetest"
	"masterorder/orders"
	"masterorder/orders/staffauth"
)

// Store is a running cluster with an orders.Service on every node.
type Store struct {
	*nodetest.Cluster
	// Svcs[i] is node i's service; a restart of node i replaces it.
	Svcs []*orders.Service
}

// Start starts n nodes with the domain attached (opts on every node) and
// waits for a ready leader; they are stopped when the test ends. options
// nil means orders.NodeOptions(); a test that adds test-only commands or
// clocks starts from orders.NodeOptions() itself.
func Start(t testing.TB, n int, mutate func(i int, c *node.Config), options func(i int) node.Options, opts orders.Options) *Store {
	t.Helper()
	s := &Store{Svcs: make([]*orders.Service, n)}
	s.Cluster = nodetest.Start(t, n, mutate, withDomain(options), s.attach(t, opts))
	return s
}

// StartConfigs is Start on configs built by the test (a restored box).
func StartConfigs(t testing.TB, cfgs []node.Config, options func(i int) node.Options, opts orders.Options) *Store {
	t.Helper()
	s := &Store{Svcs: make([]*orders.Service, len(cfgs))}
	s.Cluster = nodetest.StartConfigs(t, cfgs, withDomain(options), s.attach(t, opts))
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
	return func(i int, nd *node.Node) {
		svc, err := orders.Attach(nd, opts)
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

// PasswordHash is the staff password hash of pw, computed once per test
// binary (hashing is slow on purpose).
func PasswordHash(t testing.TB, pw string) string {
	t.Helper()
	hashMu.Lock()
	defer hashMu.Unlock()
	if h, ok := hashes[pw]; ok {
		return h
	}
	h, err := staffauth.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	hashes[pw] = h
	return h
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

// Do sends one JSON request: body nil (none), a string or []byte (as is),
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
	res, err := hc.Do(req)
	if err != nil {
		return Resp{Status: -1, Body: []byte(err.Error())}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return Resp{Status: res.StatusCode, Header: res.Header, Body: b}
}
