package orders

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"

	"masterorder/kv"
	"masterorder/orders/admission"
)

// codecOrders are commands with every field set and unset: nil and empty
// lists, options, notes in several scripts, a zero and a negative total.
func codecOrders() []placeOrderCmd {
	zero, neg := int64(0), int64(-7)
	full := placeOrderCmd{SessionID: fzSession, RequestID: fzKey, ClientID: fzClient, Source: "guest", Node: "a",
		Items: []admission.Line{
			{MenuID: "ramen", Quantity: 2, Toppings: []string{"egg", "nori"}, Options: map[string][]string{"size": {"large"}, "spice": {"hot", "x"}}, Note: "ネギ抜き 少なめ"},
			{MenuID: "tea", Quantity: 1 << 40, Toppings: []string{}, Options: map[string][]string{"ice": {}, "milk": nil}, Note: "덜 달게"},
			{MenuID: "gyoza", Quantity: 1},
		},
		Fingerprint: admission.Fingerprint(fzSession, fzLines()), ExpectedTotal: fzPrice(2340), AllowRepeat: true, CandidateID: 1<<31 - 1,
		Windows: Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}, Attempt: "6ba7b8109dad41d180b400c04fd430c8"}
	staff := full
	staff.Source, staff.RequestID, staff.ClientID, staff.ExpectedTotal, staff.AllowRepeat, staff.Attempt = "staff", "", "", &zero, false, ""
	bare := placeOrderCmd{Items: []admission.Line{{}}, ExpectedTotal: &neg, CandidateID: -1, Windows: Windows{CooldownMs: -1 << 63}}
	return []placeOrderCmd{full, staff, bare, {}, {Items: []admission.Line{}}}
}

// jsonRoundTrip is c as a version-3 node receives it.
func jsonRoundTrip(t testing.TB, c placeOrderCmd) placeOrderCmd {
	var out placeOrderCmd
	if err := json.Unmarshal(mustJSON(c), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Version 4 is the same command as version 3: what the binary form
// decodes to is what the JSON form decodes to, field by field (nil and
// empty lists included), so Apply judges both the same.
func TestPlaceOrderBinaryDecodesAsItsJSON(t *testing.T) {
	for i, c := range codecOrders() {
		var got placeOrderCmd
		if !got.decodeBinary(c.appendBinary(nil)) {
			t.Fatalf("order %d does not decode", i)
		}
		if want := jsonRoundTrip(t, c); !reflect.DeepEqual(got, want) {
			t.Errorf("order %d:\nbinary %#v\njson   %#v", i, got, want)
		}
	}
	// The layout is fixed: the same command is the same bytes every time
	// (option groups in key order, whatever the map's).
	c := codecOrders()[0]
	a := c.appendBinary(nil)
	for range 20 {
		if !bytes.Equal(a, c.appendBinary(nil)) {
			t.Fatal("one command, two encodings")
		}
	}
	if j := mustJSON(c); len(a)*2 > len(j) {
		t.Errorf("binary %d bytes, JSON %d: not compact", len(a), len(j))
	}
}

// Every prefix of a good payload, extra bytes, a string that is not UTF-8,
// an unknown flag and a repeated option group are refused.
func TestCorruptPlaceOrderBinaryIsRefused(t *testing.T) {
	for _, p := range placeV4Corruptions(codecOrders()[0]) {
		var c placeOrderCmd
		if c.decodeBinary(p) {
			t.Errorf("corrupt payload %q decoded", p)
		}
	}
}

// placeV4Corruptions are damaged forms of c's binary payload.
func placeV4Corruptions(c placeOrderCmd) [][]byte {
	good := c.appendBinary(nil)
	var out [][]byte
	for n := 0; n < len(good); n++ {
		out = append(out, good[:n])
	}
	out = append(out, append(bytes.Clone(good), 0))
	bad := c
	bad.Node = "a\xff"
	out = append(out, bad.appendBinary(nil))
	// The flags byte sits right after the fingerprint.
	fp := bytes.Index(good, []byte(c.Fingerprint)) + len(c.Fingerprint)
	flagged := bytes.Clone(good)
	flagged[fp] |= 0x80
	out = append(out, flagged)
	// Option groups (of the first line): "size" twice, then out of order.
	if bytes.Contains(good, []byte("\x05spice")) {
		out = append(out, bytes.Replace(good, []byte("\x05spice"), []byte("\x04size"), 1))
		out = append(out, bytes.Replace(good, []byte("\x04size"), []byte("\x04zzzz"), 1))
	}
	return out
}

// A corrupt version-4 entry is answered 400 MALFORMED_COMMAND on every
// node and changes nothing; the same payload intact is admitted.
func TestCorruptPlaceOrderV4IsMalformedWithoutWriting(t *testing.T) {
	r := newRV(t)
	lines := admission.Normalize([]admission.Line{{MenuID: "ramen", Quantity: 1, Toppings: []string{"egg"}, Note: "ネギ抜き"}})
	good := freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd43101", "guest-codecclient1", lines)
	good.Attempt = "codec1"
	before := r.dumpState()
	for _, p := range placeV4Corruptions(good) {
		if res := r.applyV(CmdPlaceOrder, 4, p); res.Status != 400 || res.Reason != "MALFORMED_COMMAND" {
			t.Fatalf("payload %q: %d %s, want 400 MALFORMED_COMMAND", p, res.Status, res.Reason)
		}
	}
	// Decodes, but fails valid(): never reaches the handler.
	invalid := good
	invalid.Items[0].Quantity = -1
	if res := r.applyV(CmdPlaceOrder, 4, invalid); res.Status != 400 || res.Reason != "MALFORMED_COMMAND" {
		t.Fatalf("invalid v4 order: %d %s", res.Status, res.Reason)
	}
	if !bytes.Equal(before, r.dumpState()) {
		t.Fatal("a refused v4 payload changed the replica")
	}
	good.Items[0].Quantity = 1
	if res := r.applyV(CmdPlaceOrder, 4, good); res.Status != 200 || res.Replay {
		t.Fatalf("intact v4 order: %d %s", res.Status, res.Reason)
	}
}

// Results cached as JSON (by a version-3 command, or an older build) are
// still read by a version-4 command: the key replays, the same cart
// within the window replays, and the key the payload replay remembers (in
// binary now) replays too. No second order.
func TestJSONCachedResultsStillReplay(t *testing.T) {
	r := newRV(t)
	lines := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 2}})
	first := freshOrder("6ba7b810-9dad-41d1-80b4-00c04fd43201", "guest-codecclient2", lines)
	first.Windows = Windows{PayloadMs: 30000, IdempotencyMs: 3_600_000}
	first.Attempt = "attempt-v3"
	placed := r.applyV(CmdPlaceOrder, 3, first)
	if placed.Status != 200 || placed.Replay {
		t.Fatalf("v3 order: %d %s", placed.Status, placed.Reason)
	}
	if v := r.kvValue(keyIdem(first.SessionID, first.RequestID)); len(v) == 0 || v[0] != '{' {
		t.Fatalf("a v3 command cached %q, want the JSON it always wrote", v)
	}
	var want successBody
	json.Unmarshal(placed.Body, &want)

	again := first
	again.Attempt = "attempt-v4"
	replayOf := func(what string, res Result) {
		t.Helper()
		var b successBody
		json.Unmarshal(res.Body, &b)
		if res.Status != 200 || !res.Replay || !b.IdempotentReplay || b.OrderID != want.OrderID || b.TotalPrice != want.TotalPrice {
			t.Fatalf("%s: %d %s %s, want a replay of order %d", what, res.Status, res.Reason, res.Body, want.OrderID)
		}
	}
	replayOf("v4 resend of the v3 key", r.applyV(CmdPlaceOrder, 4, again))
	// The forwarding layer committing the v3 attempt again: its first answer.
	if res := r.applyV(CmdPlaceOrder, 4, first); res.Status != 200 || res.Replay {
		t.Fatalf("same attempt again: %d %s replay=%v", res.Status, res.Reason, res.Replay)
	}
	other := first
	other.RequestID, other.Attempt = "6ba7b810-9dad-41d1-80b4-00c04fd43202", "attempt-v4b"
	replayOf("v4 same cart, new key", r.applyV(CmdPlaceOrder, 4, other))
	if v := r.kvValue(keyIdem(other.SessionID, other.RequestID)); len(v) == 0 || v[0] != cachedBinaryTag {
		t.Fatalf("a v4 command cached %q, want the binary form", v)
	}
	other.Attempt = "attempt-v4c"
	replayOf("v4 resend of the remembered key", r.applyV(CmdPlaceOrder, 4, other))
	// A reused key with another cart is still refused.
	reused := again
	reused.Fingerprint = admission.Fingerprint(first.SessionID, fzLines())
	if res := r.applyV(CmdPlaceOrder, 4, reused); res.Status != 422 || res.Reason != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("reused key: %d %s", res.Status, res.Reason)
	}
	var n int
	r.query(func(db *sql.DB) error {
		return db.QueryRow(`SELECT COUNT(*) FROM orders WHERE session_id = ?`, first.SessionID).Scan(&n)
	})
	if n != 1 {
		t.Fatalf("%d orders for one cart, want 1", n)
	}
}

// The same log, its orders proposed as version 3 on one replica and as
// version 4 on another, decides the same: the same answers, the same
// orders, stock, audit and outbox; the KV differs only in how the cached
// results are written, and they decode to the same.
func TestPlaceOrderV3AndV4DecideTheSame(t *testing.T) {
	v3, v4 := newRV(t), newRV(t)
	w := Windows{CooldownMs: 3000, BurstMs: 1000, PayloadMs: 30000, IdempotencyMs: 3_600_000}
	egg := admission.Normalize([]admission.Line{{MenuID: "ramen", Quantity: 3, Toppings: []string{"egg"}}})
	tea := admission.Normalize([]admission.Line{{MenuID: "tea", Quantity: 1, Note: "氷なし"}})
	order := func(key, client string, lines []admission.Line) placeOrderCmd {
		c := freshOrder(key, client, lines)
		c.Windows, c.Attempt = w, "a-"+key[len(key)-4:]
		return c
	}
	cmds := []placeOrderCmd{
		order("6ba7b810-9dad-41d1-80b4-00c04fd43301", "guest-codecclient3", egg),
		order("6ba7b810-9dad-41d1-80b4-00c04fd43301", "guest-codecclient3", egg), // resend
		order("6ba7b810-9dad-41d1-80b4-00c04fd43302", "guest-codecclient3", tea), // cooldown
		order("6ba7b810-9dad-41d1-80b4-00c04fd43303", "guest-codecclient4", egg), // burst
	}
	priced := order("6ba7b810-9dad-41d1-80b4-00c04fd43304", "guest-codecclient5", tea)
	priced.ExpectedTotal = fzPrice(1)
	cmds = append(cmds, priced)
	for i, c := range cmds {
		a, b := v3.applyV(CmdPlaceOrder, 3, c), v4.applyV(CmdPlaceOrder, 4, c)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("command %d: v3 %+v, v4 %+v", i, a, b)
		}
	}
	// Past the windows (10 ms of FSM time per index): more orders.
	for i := 0; i < 120; i++ {
		v3.applyV(CmdSetStock, 2, setStockCmd{SKU: "tea"})
		v4.applyV(CmdSetStock, 2, setStockCmd{SKU: "tea"})
	}
	late := order("6ba7b810-9dad-41d1-80b4-00c04fd43305", "guest-codecclient6", egg)
	late.AllowRepeat = true
	if a, b := v3.applyV(CmdPlaceOrder, 3, late), v4.applyV(CmdPlaceOrder, 4, late); !reflect.DeepEqual(a, b) || a.Status != 200 {
		t.Fatalf("late order: v3 %+v, v4 %+v", a, b)
	}
	if a, b := FSMTables(t, v3.f), FSMTables(t, v4.f); !reflect.DeepEqual(a, b) {
		t.Fatalf("tables differ:\nv3 %v\nv4 %v", a, b)
	}
	if a, b := v3.kvDecoded(), v4.kvDecoded(); !reflect.DeepEqual(a, b) {
		t.Fatalf("KV differs:\nv3 %v\nv4 %v", a, b)
	}
}

// The cached result decodes to what was stored, in both forms.
func TestCachedResultBothForms(t *testing.T) {
	id := fzKey
	for _, r := range []cachedResult{
		{Fingerprint: admission.Fingerprint(fzSession, fzLines()), Attempt: "a1",
			Body: successBody{RequestID: &id, Allowed: true, OrderID: 1<<31 - 1, Status: "accepted", TotalPrice: 2340, TicketNo: 17}},
		{Body: successBody{OrderID: -1, TotalPrice: -5, IdempotentReplay: true}},
		{},
	} {
		for _, v := range []uint8{3, 4} {
			b := encodeCached(r, v)
			if (v == 4) != (b[0] == cachedBinaryTag) {
				t.Fatalf("v%d wrote %q", v, b)
			}
			got, good := decodeCached(b)
			if !good || !reflect.DeepEqual(got, r) {
				t.Fatalf("v%d: %#v (%v), want %#v", v, got, good, r)
			}
			if v == 4 && len(b) >= len(encodeCached(r, 3)) && r.Fingerprint != "" {
				t.Errorf("binary %d bytes, not smaller than JSON", len(b))
			}
			// Staff listing the keys see the JSON either way.
			if got, want := shownValue(keyIdem(fzSession, fzKey), b), string(encodeCached(r, 3)); got != want {
				t.Errorf("v%d shown as %q, want %q", v, got, want)
			}
		}
	}
	if v := "\x01raw"; shownValue(keyBurst(fzSession), []byte(v)) != v {
		t.Error("a value outside the cached results is shown changed")
	}
	for _, bad := range []string{"", "{", "\x01", "\x01\x00\x00\x08", "\x01\x00\x00\x02\x00\x00\x00\x00\x00"} {
		if _, good := decodeCached([]byte(bad)); good {
			t.Errorf("%q decoded", bad)
		}
	}
}

// FuzzPlaceOrderCodec: any bytes decode without a panic; what decodes
// encodes to a payload that decodes to the same command, which is what
// its JSON form decodes to.
func FuzzPlaceOrderCodec(f *testing.F) {
	for _, c := range codecOrders() {
		f.Add(c.appendBinary(nil))
		for _, p := range placeV4Corruptions(c) {
			f.Add(p)
		}
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		var c placeOrderCmd
		if !c.decodeBinary(p) {
			return
		}
		var again placeOrderCmd
		if !again.decodeBinary(c.appendBinary(nil)) || !reflect.DeepEqual(again, c) {
			t.Fatalf("%q decodes to %#v, which does not round-trip", p, c)
		}
		if j := jsonRoundTrip(t, c); !reflect.DeepEqual(j, c) {
			t.Fatalf("%q: binary %#v, its JSON %#v", p, c, j)
		}
	})
}

// FuzzCachedResultCodec: any KV value decodes without a panic; a binary
// one that decodes re-encodes to the same result.
func FuzzCachedResultCodec(f *testing.F) {
	id := fzKey
	r := cachedResult{Fingerprint: "ab", Attempt: "x", Body: successBody{RequestID: &id, Allowed: true, OrderID: 9, Status: "accepted", TotalPrice: 5, TicketNo: 2}}
	f.Add(encodeCached(r, 4))
	f.Add(encodeCached(r, 3))
	f.Add([]byte{cachedBinaryTag})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, good := decodeCached(b)
		if !good || len(b) == 0 || b[0] != cachedBinaryTag {
			return
		}
		if again, good := decodeCached(encodeCached(c, 4)); !good || !reflect.DeepEqual(again, c) {
			t.Fatalf("%q decodes to %#v, which does not round-trip", b, c)
		}
	})
}

// kvValue is the live value under key.
func (r *rv) kvValue(key string) []byte {
	r.t.Helper()
	var v []byte
	if err := r.f.View(func(tx *bolt.Tx) error {
		if e, live := kv.NewTx(tx, 0, 0).Get(key); live {
			v = bytes.Clone(e.Value)
		}
		return nil
	}); err != nil {
		r.t.Fatal(err)
	}
	return v
}

// kvDecoded is every KV entry, cached results decoded.
func (r *rv) kvDecoded() map[string]any {
	r.t.Helper()
	out := map[string]any{}
	if err := r.f.View(func(tx *bolt.Tx) error {
		kv.NewTx(tx, 0, 0).Scan("", func(e kv.Entry) bool {
			v := any(string(e.Value))
			if c, good := decodeCached(e.Value); good && len(e.Value) > 0 {
				v = c
			}
			out[e.Key] = []any{v, e.ExpiresAt}
			return true
		})
		return nil
	}); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// appendGuestAnswer writes what json.Marshal writes for the same Result,
// byte for byte, and decodeResult reads it back.
func TestGuestAnswerIsWhatEncodingJSONWrites(t *testing.T) {
	key, odd := "6ba7b810-9dad-41d1-80b4-00c04fd430c8", `a"<b>&\`+"\x01é"
	for _, body := range []successBody{
		{RequestID: &key, Allowed: true, OrderID: 123456, Status: "accepted", TotalPrice: 1980, TicketNo: 17},
		{RequestID: nil, Allowed: true, OrderID: 1, Status: "accepted", TotalPrice: 0},
		{RequestID: &key, Allowed: false, OrderID: -5, Status: "served", TotalPrice: -20, IdempotentReplay: true},
		{RequestID: &odd, Allowed: true, OrderID: 9, Status: "accepted", TotalPrice: 5, TicketNo: 1},
		{RequestID: &key, Allowed: true, OrderID: 9, Status: "<odd>", TotalPrice: 5},
	} {
		for _, replay := range []bool{false, true} {
			inner, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(Result{Status: 200, Replay: replay, Body: inner})
			if err != nil {
				t.Fatal(err)
			}
			got := appendGuestAnswer([]byte("x"), body, replay)
			if string(got) != "x"+string(want) {
				t.Errorf("%+v replay %v:\n got %s\nwant %s", body, replay, got[1:], want)
			}
			r, err := decodeResult(got[1:])
			if err != nil || r.Status != 200 || r.Replay != replay || string(r.Body) != string(inner) {
				t.Errorf("decoded %+v %v", r, err)
			}
		}
	}
}
