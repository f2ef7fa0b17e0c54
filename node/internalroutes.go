package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// AddInternalRoute serves h on the internal channel (the Raft port:
// mutual TLS and the cluster secret) at pattern, a net/http pattern such
// as "GET /internal/update/state". Call it before Start.
func (n *Node) AddInternalRoute(pattern string, h http.Handler) {
	n.extrasMu.Lock()
	defer n.extrasMu.Unlock()
	if n.internalRoutes == nil {
		n.internalRoutes = map[string]http.Handler{}
	}
	n.internalRoutes[pattern] = h
}

// PeerRequest sends one request to member id's internal channel (path
// starts with /internal/) through the cluster's mutual TLS, with the
// cluster secret. The caller closes the answer's body.
func (n *Node) PeerRequest(ctx context.Context, id, method, path string, body io.Reader) (*http.Response, error) {
	if !strings.HasPrefix(path, "/internal/") {
		return nil, fmt.Errorf("peer request %s: not an internal path", path)
	}
	addr := ""
	for _, m := range n.Members() {
		if m.ID == id {
			addr = m.RaftAddr
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("peer request to %s: not a member", id)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.internalURL(addr, path), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(secretHeader, n.cfg.ClusterSecret)
	return n.diskHTTP.Load().Do(req)
}
