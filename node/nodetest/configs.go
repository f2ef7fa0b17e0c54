package nodetest

import (
	"testing"
	"time"

	"masterorder/node"
)

// StartConfigs starts nodes from the given configs (a restored box, a
// cluster built by hand) and waits for a ready leader; they are stopped
// when the test ends.
func StartConfigs(t testing.TB, cfgs []node.Config, options func(i int) node.Options, setup func(i int, n *node.Node)) *Cluster {
	t.Helper()
	c := &Cluster{T: t, Configs: cfgs, Options: options, Setup: setup, Nodes: make([]*node.Node, len(cfgs))}
	t.Cleanup(c.StopAll)
	for i := range c.Configs {
		c.StartNode(i)
	}
	c.WaitLeader(10 * time.Second)
	return c
}
