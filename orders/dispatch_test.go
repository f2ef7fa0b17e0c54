package orders

import (
	"bytes"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"masterorder/kv"
	"masterorder/orders/admission"
	"masterorder/raftfsm"
)

// Every domain command goes through register: a payload that does not
// decode as its type, or fails the type's valid(), is answered 400
// MALFORMED_COMMAND and writes nothing, whatever the command. The types
// are read from the registry, so a command added later is covered too.
func TestEveryCommandRejectsMalformedPayloadWithoutWriting(t *testing.T) {
	reg := raftfsm.NewRegistry()
	Register(reg)
	var types []raftfsm.CommandType
	for ct := raftfsm.CommandType(32); ct < 255; ct++ {
		if reg.Has(ct) {
			types = append(types, ct)
		}
	}
	if len(types) < 25 {
		t.Fatalf("only %d domain commands registered", len(types))
	}
	r := newRV(t)
	payloads := []string{``, `not json`, `[1,2]`, `{} {}`, `42`}
	refused := func(ct raftfsm.CommandType, v uint8, p []byte) {
		t.Helper()
		before := r.dumpState()
		if res := r.applyV(ct, v, p); res.Status != 400 || res.Reason != "MALFORMED_COMMAND" {
			t.Errorf("%s v%d with payload %q: %d %s, want 400 MALFORMED_COMMAND", reg.Name(ct), v, p, res.Status, res.Reason)
		}
		if after := r.dumpState(); !bytes.Equal(before, after) {
			t.Errorf("%s v%d with payload %q changed the replica", reg.Name(ct), v, p)
		}
	}
	for _, ct := range types {
		for _, p := range payloads {
			refused(ct, versionOf(ct), []byte(p))
		}
	}
	// placeOrder: the older JSON versions, and damaged binary ones.
	for v := uint8(1); v < versionOf(CmdPlaceOrder); v++ {
		for _, p := range payloads {
			refused(CmdPlaceOrder, v, []byte(p))
		}
	}
	lines := admission.Normalize([]admission.Line{{MenuID: "ramen", Quantity: 1, Toppings: []string{"egg"}, Options: map[string][]string{"size": {"l"}, "spice": {"hot"}}}})
	order := freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd43401", "guest-malformed01", lines)
	// Some prefixes and every other damage (each prefix is tried in
	// TestCorruptPlaceOrderV4IsMalformedWithoutWriting).
	for i, p := range placeV4Corruptions(order) {
		if i%16 == 0 || i >= len(order.appendBinary(nil)) {
			refused(CmdPlaceOrder, 4, p)
		}
	}
}

// A payload that decodes but fails its type's valid() never reaches the
// handler: a negative stock level is refused, the stock stays as it was.
func TestInvalidCommandNeverReachesItsHandler(t *testing.T) {
	r := newRV(t)
	was := r.stock("egg")
	before := r.dumpState()
	res := r.apply(CmdSetStock, setStockCmd{SKU: "egg", Quantity: fzPrice(-5)})
	if res.Status != 400 || res.Reason != "MALFORMED_COMMAND" {
		t.Fatalf("negative stock: %d %s, want 400 MALFORMED_COMMAND", res.Status, res.Reason)
	}
	if !bytes.Equal(before, r.dumpState()) || r.stock("egg") != was {
		t.Fatalf("a refused setStock changed the replica (egg %d, was %d)", r.stock("egg"), was)
	}
	// The same command with a valid quantity does reach it.
	if res := r.apply(CmdSetStock, setStockCmd{SKU: "egg", Quantity: fzPrice(3)}); res.Status != 200 || r.stock("egg") != 3 {
		t.Fatalf("valid setStock: %d %s, egg %d", res.Status, res.Reason, r.stock("egg"))
	}
}

// dumpState is the replica's domain state: every KV entry (at FSM time
// 0, so none is hidden as expired) and every row of the domain tables; not
// the FSM's own bookkeeping (applied index, time), which every entry moves.
func (r *rv) dumpState() []byte {
	r.t.Helper()
	var b bytes.Buffer
	if err := r.f.View(func(tx *bolt.Tx) error {
		kv.NewTx(tx, 0, 0).Scan("", func(e kv.Entry) bool { fmt.Fprintf(&b, "kv %+v\n", e); return true })
		return nil
	}); err != nil {
		r.t.Fatal(err)
	}
	fmt.Fprintf(&b, "%v\n", FSMTables(r.t, r.f)) // fmt prints a map in key order
	return b.Bytes()
}
