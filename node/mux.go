package node

import "errors"

// errNoAddr: the peer book knows no address for a member (the Raft
// transport then dials the address in the Raft configuration).
var errNoAddr = errors.New("no address")
