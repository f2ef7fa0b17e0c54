package node

// ForwardRequests is how many forward requests this box has sent to a
// leader (one per batch, or per command sent alone).
func (n *Node) ForwardRequests() uint64 {
	n.fwd.mu.Lock()
	defer n.fwd.mu.Unlock()
	return n.fwd.requests
}

// RefuseForwardBatches makes this box answer POST /internal/apply-batch
// as a leader of an older build does (404), or again as it should.
func (n *Node) RefuseForwardBatches(refuse bool) { n.fwd.refuseBatches.Store(refuse) }
