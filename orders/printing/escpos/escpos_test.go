package escpos

import (
	"bytes"
	"testing"
	"time"
)

// Render's stream decodes back to what the cook reads: Japanese text,
// the number double size, a cut; a copy and a reprint are marked.
func TestRenderDecode(t *testing.T) {
	d := Doc{Kind: KindTicket, Number: "42", Table: "A1", AtMs: time.Date(2026, 12, 1, 19, 5, 0, 0, time.UTC).UnixMilli(),
		Lines: []Line{{Name: "醤油ラーメン", Quantity: 2, Toppings: []string{"味玉", "海苔"}}, {Name: "餃子", Quantity: 1}}}
	raw := Render(d, false, time.UTC)
	if !bytes.HasPrefix(raw, []byte{esc, '@'}) || !bytes.HasSuffix(raw, []byte{gs, 'V', 0}) {
		t.Fatalf("stream does not initialize and cut: % x", raw)
	}
	if bytes.Contains(raw, []byte("醤油")) {
		t.Fatal("text went out as UTF-8, not Shift_JIS")
	}
	docs, err := Decode(raw)
	if err != nil || len(docs) != 1 {
		t.Fatalf("decode: %v, %d docs", err, len(docs))
	}
	p := docs[0]
	if !p.Cut || !p.Kanji || !p.SJIS || len(p.Double) != 1 || p.Double[0] != "No.42" {
		t.Errorf("decoded %+v", p)
	}
	for _, want := range []string{"テーブル A1", "2026-12-01 19:05", "2 x 醤油ラーメン", "  + 味玉", "  + 海苔", "1 x 餃子"} {
		if !p.Has(want) {
			t.Errorf("lacks %q: %q", want, p.Lines)
		}
	}
	if p.Has(MarkCopy) || p.Has(MarkReprint) {
		t.Errorf("a first print is marked: %q", p.Lines)
	}
	c, _ := Decode(Render(d, true, time.UTC))
	if !c[0].Has(MarkCopy) {
		t.Errorf("a resend is not marked: %q", c[0].Lines)
	}
	d.Kind = KindReprint
	r, _ := Decode(Render(d, false, time.UTC))
	if !r[0].Has(MarkReprint) {
		t.Errorf("a reprint is not marked: %q", r[0].Lines)
	}
	// Cut short: a document without its cut, and no error.
	half, err := Decode(raw[:len(raw)/2])
	if err != nil || len(half) != 1 || half[0].Cut {
		t.Errorf("half a ticket: %v %+v", err, half)
	}
	if _, err := Decode([]byte{esc, 'Z'}); err == nil {
		t.Error("an unknown command decodes")
	}
}
