package node

import (
	"errors"

	"github.com/hashicorp/raft"
)

var errNoAddr = errors.New("no address")

// addressProvider lets a node dial peers through addresses of its own
// (fault-injection proxies in tests) while the cluster configuration keeps
// the canonical raft addresses.
// It knows the configured peers; a member added later falls back to the
// address in the Raft configuration.
type addressProvider struct {
	dial map[string]string
}

func (a *addressProvider) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	if addr, ok := a.dial[string(id)]; ok {
		return raft.ServerAddress(addr), nil
	}
	return "", errNoAddr
}
