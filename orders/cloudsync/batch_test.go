package cloudsync

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPlanFoldsBySeq(t *testing.T) {
	doc := func(status string) map[string]any { return map[string]any{"status": status} }
	writes, skips, seqs, err := plan([]Change{
		{Seq: 1, OrderID: 10, Op: OpUpsert, Doc: doc("ACCEPTED")},
		{Seq: 2, OrderID: 11, Op: OpUpsert, Doc: doc("ACCEPTED")},
		{Seq: 3, OrderID: 10, Op: OpUpsert, Doc: doc("COOKING")},
		{Seq: 5, OrderID: 11, Op: OpDelete},
		{Seq: 6, OrderID: 12, Op: OpUpsert, Doc: map[string]any{"bad": make(chan int)}},
		{Seq: 7, OrderID: 13, Op: OpUpsert},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seqs, []uint64{1, 2, 3, 5, 6, 7}) {
		t.Errorf("seqs = %v: every change of the batch is marked", seqs)
	}
	if len(writes) != 2 || writes[0].orderID != 10 || writes[0].doc["status"] != "COOKING" || writes[0].seq != 3 ||
		writes[1].orderID != 11 || !writes[1].delete {
		t.Errorf("writes = %+v", writes)
	}
	if len(skips) != 2 || skips[0].seq != 6 || skips[1].seq != 7 {
		t.Errorf("skips = %+v, want seqs 6 and 7", skips)
	}
}

func TestPlanRejects(t *testing.T) {
	if _, _, _, err := plan([]Change{{Seq: 1, OrderID: 1, Op: "patch"}}); err == nil || !strings.Contains(err.Error(), `unknown op "patch"`) {
		t.Errorf("unknown op: %v", err)
	}
	if _, _, _, err := plan([]Change{{Seq: 2, OrderID: 1, Op: OpDelete}, {Seq: 1, OrderID: 2, Op: OpDelete}}); err == nil {
		t.Errorf("out-of-order seqs accepted")
	}
}

type typedItem struct {
	MenuID   string `json:"menuId"`
	Quantity int    `json:"quantity"`
}

func TestNormalizeDoc(t *testing.T) {
	var fromJSON map[string]any
	if err := json.Unmarshal([]byte(`{"orderId":99,"totalPrice":1800,"ratio":0.5,"items":[{"quantity":2}],"requestId":null}`), &fromJSON); err != nil {
		t.Fatal(err)
	}
	reqID := "abc"
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.FixedZone("JST", 9*3600))
	cases := []struct {
		in   map[string]any
		want map[string]any
	}{
		{fromJSON, map[string]any{"orderId": int64(7), "totalPrice": int64(1800), "ratio": 0.5,
			"items": []any{map[string]any{"quantity": int64(2)}}, "requestId": nil}},
		{map[string]any{"createdAt": at, "requestId": &reqID, "n": json.Number("12"), "u": uint32(3), "syncedAt": "caller"},
			map[string]any{"orderId": int64(7), "createdAt": "2026-11-29T12:00:00+09:00", "requestId": "abc", "n": int64(12), "u": int64(3)}},
		{map[string]any{"items": []typedItem{{MenuID: "ramen", Quantity: 2}}},
			map[string]any{"orderId": int64(7), "items": []any{map[string]any{"menuId": "ramen", "quantity": int64(2)}}}},
	}
	for i, c := range cases {
		got, err := normalizeDoc(7, c.in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("case %d:\n got %#v\nwant %#v", i, got, c.want)
		}
	}
	if _, err := normalizeDoc(7, map[string]any{"f": func() {}}); err == nil {
		t.Errorf("a func field was accepted")
	}
}

// Every Go integer kind becomes an int64; an unsigned one past int64 is an
// error, not a wrapped negative number.
func TestNormalizeIntegers(t *testing.T) {
	for _, v := range []any{int(-5), int8(-5), int16(-5), int32(-5), int64(-5)} {
		if got, err := normalizeValue(v); err != nil || got != int64(-5) {
			t.Errorf("%T: got %#v, %v", v, got, err)
		}
	}
	for _, v := range []any{uint(5), uint8(5), uint16(5), uint32(5), uint64(5)} {
		if got, err := normalizeValue(v); err != nil || got != int64(5) {
			t.Errorf("%T: got %#v, %v", v, got, err)
		}
	}
	for _, v := range []any{uint(math.MaxUint64), uint64(math.MaxInt64 + 1)} {
		if got, err := normalizeValue(v); err == nil {
			t.Errorf("%T %v: got %#v, want an overflow error", v, v, got)
		}
	}
	got, err := normalizeValue([]map[string]any{{"q": 2}})
	if want := []any{map[string]any{"q": int64(2)}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("[]map: got %#v, %v", got, err)
	}
}
