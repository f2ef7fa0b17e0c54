package tlsnet_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"masterorder/node/tlsnet"
)

// A member found at a new address must be that member: after a renumber
// another box may hold the address b had. Dial with "id@HOST:PORT"
// refuses a node whose certificate names another id; a plain address
// (the Raft configuration's fallback) takes any member.
func TestDialChecksTheNodeID(t *testing.T) {
	a, b, _ := peersAndRogue(t)
	lb, err := tlsnet.NewStreamLayer("127.0.0.1:0", nil, b.server, b.client)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	go func() {
		for {
			c, err := lb.Accept()
			if err != nil {
				return
			}
			go func() { time.Sleep(time.Second); c.Close() }()
		}
	}()
	la, err := tlsnet.NewStreamLayer("127.0.0.1:0", nil, a.server, a.client)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	addr := lb.Addr().String()
	if c, err := la.Dial(raft.ServerAddress("b@"+addr), 5*time.Second); err != nil {
		t.Fatalf("dial b where b is: %v", err)
	} else {
		c.Close()
	}
	if c, err := la.Dial(raft.ServerAddress(addr), 5*time.Second); err != nil {
		t.Fatalf("dial a plain address: %v", err)
	} else {
		c.Close()
	}
	c, err := la.Dial(raft.ServerAddress("c@"+addr), 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatal("dialled c and took b for it")
	}
	if !strings.Contains(err.Error(), "not c") {
		t.Fatalf("error %v does not say who answered is not c", err)
	}
}
