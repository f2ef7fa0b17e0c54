// Package escpos renders kitchen tickets and receipts as ESC/POS bytes for
// a Japanese thermal printer: Shift_JIS text in kanji mode (FS &), the
// ticket number double size, a cut at the end. Decode reads such a stream
// back (what a cook would read), for tests and diagnostics.
package escpos

import (
	"bytes"
	"fmt"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/japanese"
)

// Control bytes.
const (
	esc = 0x1b
	fs  = 0x1c
	gs  = 0x1d
	lf  = 0x0a
)

// Kinds of a job's document.
const (
	KindTicket  = "ticket"
	KindReprint = "reprint"
	KindReceipt = "receipt"
)

// Marks printed at the top of a document that is not the first print.
const (
	MarkReprint = "再発行 / REPRINT" // asked for by staff
	MarkCopy    = "再送 / COPY"     // resent: an earlier send may have printed
)

// Line is one order line on a ticket.
type Line struct {
	Name     string   `json:"name"`
	Quantity int      `json:"quantity"`
	Toppings []string `json:"toppings,omitempty"`
	Options  []string `json:"options,omitempty"` // chosen options' names
	Note     string   `json:"note,omitempty"`    // the guest's note, as typed
	Price    int64    `json:"price,omitempty"`   // line total, receipts only
}

// Doc is what a job prints: a kitchen ticket or a receipt.
type Doc struct {
	Kind    string `json:"kind"`
	Number  string `json:"number"` // the ticket number (the order id until tickets are numbered)
	Table   string `json:"table"`
	AtMs    int64  `json:"atMs"` // when the order was placed (wall clock, ms)
	Lines   []Line `json:"lines"`
	Total   int64  `json:"total,omitempty"`
	Tax     int64  `json:"taxIncluded,omitempty"`
	Payment string `json:"payment,omitempty"`
}

// Render is the ESC/POS stream of d; copy marks a resend. loc is the
// shop's time zone for the printed time.
func Render(d Doc, copy bool, loc *time.Location) []byte {
	var b bytes.Buffer
	enc := encoding.ReplaceUnsupported(japanese.ShiftJIS.NewEncoder())
	text := func(s string) {
		out, err := enc.Bytes([]byte(s))
		if err != nil { // ReplaceUnsupported never fails; keep the line anyway
			out = []byte(s)
		}
		b.Write(out)
		b.WriteByte(lf)
	}
	size := func(n byte) { b.Write([]byte{gs, '!', n}) }
	b.Write([]byte{esc, '@'})   // initialize
	b.Write([]byte{fs, 'C', 1}) // kanji code system: Shift_JIS
	b.Write([]byte{fs, '&'})    // kanji mode on
	if d.Kind == KindReprint {
		text(MarkReprint)
	}
	if copy {
		text(MarkCopy)
	}
	if d.Kind == KindReceipt {
		text("領収書 / RECEIPT")
	}
	size(0x11) // double width and height
	text("No." + d.Number)
	size(0)
	text("テーブル " + d.Table)
	if loc == nil {
		loc = time.Local
	}
	text(time.UnixMilli(d.AtMs).In(loc).Format("2006-01-02 15:04"))
	text("--------------------------------")
	for _, l := range d.Lines {
		if d.Kind == KindReceipt {
			text(fmt.Sprintf("%s x%d  %d円", l.Name, l.Quantity, l.Price))
		} else {
			size(0x01) // double height: readable from the pass
			text(fmt.Sprintf("%d x %s", l.Quantity, l.Name))
			size(0)
		}
		for _, o := range l.Options {
			text("  ・" + o)
		}
		for _, t := range l.Toppings {
			text("  + " + t)
		}
		if l.Note != "" {
			text("  ※ " + l.Note)
		}
	}
	if d.Kind == KindReceipt {
		text("--------------------------------")
		text(fmt.Sprintf("合計 %d円", d.Total))
		text(fmt.Sprintf("(内消費税 %d円)", d.Tax))
		if d.Payment != "" {
			text("支払 " + d.Payment)
		}
	}
	b.Write([]byte{fs, '.'})     // kanji mode off
	b.Write([]byte{esc, 'd', 4}) // feed past the cutter
	b.Write([]byte{gs, 'V', 0})  // full cut
	return b.Bytes()
}

// StatusRequest is GS r 1 (transmit paper sensor status). Unlike the
// real-time DLE EOT, a printer answers it only when it has processed
// everything before it, so its one-byte answer confirms the ticket.
var StatusRequest = []byte{gs, 'r', 1}

// Printed is one document read back from a stream.
type Printed struct {
	Lines  []string // text lines, decoded from Shift_JIS
	Double []string // the lines printed double width and height
	Cut    bool     // the document ended with a cut (a whole ticket)
	Kanji  bool     // kanji mode was on for its text
	SJIS   bool     // FS C 1 selected Shift_JIS
}

// Has reports whether some line contains s.
func (p Printed) Has(s string) bool {
	for _, l := range p.Lines {
		if bytes.Contains([]byte(l), []byte(s)) {
			return true
		}
	}
	return false
}

// Decode splits an ESC/POS stream into documents at each cut; a trailing
// document without a cut (a send cut short) comes last with Cut false.
// An unknown command is an error: the stream is not what Render writes.
func Decode(stream []byte) ([]Printed, error) {
	dec := japanese.ShiftJIS.NewDecoder()
	var docs []Printed
	var cur Printed
	var text []byte
	var sizeN byte
	started := false
	flush := func() error {
		s, err := dec.Bytes(text)
		if err != nil {
			return fmt.Errorf("escpos: text is not Shift_JIS: %w", err)
		}
		cur.Lines = append(cur.Lines, string(s))
		if sizeN == 0x11 {
			cur.Double = append(cur.Double, string(s))
		}
		text = text[:0]
		return nil
	}
	need := func(i, n int) error {
		if i+n >= len(stream) {
			return fmt.Errorf("escpos: command cut short at %d", i)
		}
		return nil
	}
	for i := 0; i < len(stream); i++ {
		c := stream[i]
		started = true
		switch c {
		case lf:
			if err := flush(); err != nil {
				return nil, err
			}
		case esc, fs, gs:
			if err := need(i, 1); err != nil {
				return nil, err
			}
			op := stream[i+1]
			i++
			switch {
			case c == esc && op == '@':
				sizeN = 0
			case c == esc && (op == 'd' || op == 't'):
				if err := need(i, 1); err != nil {
					return nil, err
				}
				i++
			case c == fs && op == '&':
				cur.Kanji = true
			case c == fs && op == '.':
			case c == fs && op == 'C':
				if err := need(i, 1); err != nil {
					return nil, err
				}
				i++
				cur.SJIS = stream[i] == 1
			case c == gs && op == '!':
				if err := need(i, 1); err != nil {
					return nil, err
				}
				i++
				sizeN = stream[i]
			case c == gs && op == 'r':
				if err := need(i, 1); err != nil {
					return nil, err
				}
				i++
			case c == gs && op == 'V':
				if err := need(i, 1); err != nil {
					return nil, err
				}
				i++
				if m := stream[i]; m == 65 || m == 66 {
					i++ // function B carries a feed count
				}
				cur.Cut = true
				docs = append(docs, cur)
				cur, started = Printed{}, false
			default:
				return nil, fmt.Errorf("escpos: unknown command %#x %#x at %d", c, op, i-1)
			}
		default:
			text = append(text, c)
		}
	}
	if len(text) > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if started && (len(cur.Lines) > 0 || cur.Kanji) {
		docs = append(docs, cur)
	}
	return docs, nil
}
