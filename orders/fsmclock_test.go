package orders

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"

	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// openClockedFSM opens an empty replica and returns a commit that applies
// one command as the next entry, exactly as stamped (FSM time and wall
// clock are the caller's), and decodes its Result. For tests of what Apply
// does with time.
func openClockedFSM(t *testing.T) (*raftfsm.FSM, func(cmd raftfsm.Command) Result) {
	t.Helper()
	f, err := raftfsm.Open(raftfsm.Options{Dir: t.TempDir(), Registry: fzRegistry(), Migrate: store.Migrate, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	index := uint64(0)
	return f, func(cmd raftfsm.Command) Result {
		t.Helper()
		index++
		res, _ := f.ApplyBatch([]*raft.Log{{Index: index, Term: 1, Type: raft.LogCommand, Data: cmd.Encode()}})[0].(raftfsm.Response)
		if res.Err != nil {
			t.Fatalf("entry %d: %v", index, res.Err)
		}
		var out Result
		json.Unmarshal(res.Data, &out)
		return out
	}
}

// eachFzSetupCommand hands each command of the fzSetup history to apply as
// a Go value, to be stamped again by the caller (a place-order as its
// decoded struct, since it is binary from version 4).
func eachFzSetupCommand(t *testing.T, apply func(typ raftfsm.CommandType, payload any)) {
	t.Helper()
	for _, e := range fzSetup() {
		c, err := raftfsm.Decode(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		json.Unmarshal(c.Payload, &v)
		if c.Type == CmdPlaceOrder {
			v, _ = decodeCommand[placeOrderCmd](c.Version, c.Payload)
		}
		apply(c.Type, v)
	}
}
