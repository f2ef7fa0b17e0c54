package orders

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

// decodeResult answers what json.Unmarshal answers for every input: the
// admitted order's answers it reads itself, and every near miss (another
// field after the body, a body that is not one object, other statuses,
// other spellings) it leaves to encoding/json.
func TestDecodeResultAsUnmarshal(t *testing.T) {
	body := successBody{RequestID: new("6ba7b810-9dad-41d1-80b4-00c04fd43701"), Allowed: true, OrderID: 123456, Status: "ACCEPTED", TotalPrice: 1020, TicketNo: 7}
	b, _ := json.Marshal(body)
	marshal := func(r Result) string { out, _ := json.Marshal(r); return string(out) }
	cases := []string{
		marshal(Result{Status: http.StatusOK, Body: b}),
		marshal(Result{Status: http.StatusOK, Replay: true, Body: b}),
		marshal(Result{Status: http.StatusOK, Body: json.RawMessage(`{}`)}),
		marshal(Result{Status: http.StatusOK, Body: json.RawMessage(`{"note":"醤油 \"quoted\" \\ \u2028 }{","x":[1,{"y":null}]}`)}),
		marshal(Result{Status: http.StatusOK}),
		marshal(Result{Status: http.StatusConflict, Reason: "SESSION_ORDER_IN_PROGRESS", RetryAfterMs: 900}),
		marshal(Result{Status: http.StatusOK, Body: b, SKUs: []string{"ramen"}}),
		marshal(Result{Status: http.StatusOK, Body: b, Field: "items[0]"}),
		marshal(Result{Status: http.StatusBadRequest, Reason: "INVALID_ORDER", Field: "items[1].options"}),
		`{"status":200,"body":{"a":1},"status":409}`,
		`{"status":200,"body":{"a":1},"skus":["x"]}`,
		`{"status":200,"body":{"a":1}{"b":2}}`,
		`{"status":200,"body":{"a":"},\"status\":409,\"b\":{"}}`,
		`{"status":200,"body":null}`,
		`{"status":200,"body":[1,2]}`,
		`{"status":200,"body":"x"}`,
		`{"status":200,"body":{"a":1} }`,
		`{"status":200,"body": {"a":1}}`,
		`{"status":200,"replay":false,"body":{"a":1}}`,
		`{"status":200,"replay":true,"replay":true,"body":{"a":1}}`,
		`{"status":2000,"body":{"a":1}}`,
		`{"status":200,"Body":{"a":1}}`,
		`{"status":200,"body":{"a":1}`,
		`{"status":200,"body":{"a":}}`,
		`{"status":200,"body":{}}}`,
		`{"status":200,"body":{"a":"` + "\xff" + `"}}`,
		`{"status":200,}`,
		`{"status":200,"body":}`,
		`{"status":200,"body":{}`,
		`{"status":200,`,
		`{"status":200,"body":{"a":1}} `,
		``,
		`null`,
		`{}`,
	}
	for _, c := range cases {
		got, gotErr := decodeResult([]byte(c))
		var want Result
		wantErr := json.Unmarshal([]byte(c), &want)
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n decodeResult %s %v\n json.Unmarshal %s %v", c, show(got), gotErr, show(want), wantErr)
		}
	}
	// The body is a copy: the answer's buffer may be reused.
	in := []byte(cases[0])
	r, _ := decodeResult(in)
	for i := range in {
		in[i] = 'x'
	}
	if string(r.Body) != string(b) {
		t.Fatalf("body %s changed with its input", r.Body)
	}
}

func show(r Result) string { return fmt.Sprintf("%+v body=%q nilBody=%v", r, r.Body, r.Body == nil) }
