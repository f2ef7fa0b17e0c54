package setup

import "masterorder/setup/cluster"

func fakeBundle() cluster.Bundle {
	return cluster.Bundle{Config: cluster.Config{NodeID: "a", HTTPAddr: "127.0.0.1:1"}, Files: map[string][]byte{}}
}
