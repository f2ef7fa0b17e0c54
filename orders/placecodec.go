package orders

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"masterorder/orders/admission"
)

// Version 4 of placeOrder is the same command in a compact binary form:
// decoding JSON was a tenth of a follower's Apply. Versions 1–3 stay JSON
// (a log written by an older build replays as it applied then). The
// layout below is the wire format: a field is never moved, added or
// dropped without a new version.
//
// Every field decodes to exactly what the JSON form would (nil and empty
// lists told apart), so version 4 is judged the same as version 3; a
// payload that is corrupt, truncated, has bytes left over or a string that
// is not UTF-8 is not a command (400 MALFORMED_COMMAND).
const placeBinaryVersion = 4

// binaryFrom is the first placeOrder version in binary (binaryCommand,
// dispatch.go).
func (placeOrderCmd) binaryFrom() uint8 { return placeBinaryVersion }

// Flags of the command's optional fields.
const (
	placeHasExpectedTotal = 1 << iota
	placeAllowRepeat
)

func (c placeOrderCmd) appendBinary(b []byte) []byte {
	for _, s := range []string{c.SessionID, c.RequestID, c.ClientID, c.Source, c.Node} {
		b = appendString(b, s)
	}
	b = appendListLen(b, len(c.Items), c.Items == nil)
	for _, l := range c.Items {
		b = appendString(b, l.MenuID)
		b = binary.AppendVarint(b, int64(l.Quantity))
		b = appendStrings(b, l.Toppings)
		// Groups in key order: the same line is the same bytes.
		groups := l.SortedGroups()
		b = binary.AppendUvarint(b, uint64(len(groups)))
		for _, g := range groups {
			b = appendString(b, g)
			b = appendStrings(b, l.Options[g])
		}
		b = appendString(b, l.Note)
	}
	b = appendString(b, c.Fingerprint)
	var flags byte
	if c.ExpectedTotal != nil {
		flags |= placeHasExpectedTotal
	}
	if c.AllowRepeat {
		flags |= placeAllowRepeat
	}
	b = append(b, flags)
	if c.ExpectedTotal != nil {
		b = binary.AppendVarint(b, *c.ExpectedTotal)
	}
	w := c.Windows
	for _, v := range []int64{c.CandidateID, w.CooldownMs, w.BurstMs, w.PayloadMs, w.IdempotencyMs} {
		b = binary.AppendVarint(b, v)
	}
	return appendString(b, c.Attempt)
}

func (c *placeOrderCmd) decodeBinary(p []byte) bool {
	r := newReader(p)
	for _, s := range []*string{&c.SessionID, &c.RequestID, &c.ClientID, &c.Source, &c.Node} {
		*s = r.string()
	}
	n, isNil := r.listLen()
	if !isNil {
		c.Items = make([]admission.Line, 0, n)
	}
	for i := 0; i < n && !r.bad; i++ {
		l := admission.Line{MenuID: r.string(), Quantity: r.int(), Toppings: r.strings()}
		// JSON leaves an empty map out (omitempty): none is nil.
		if groups := r.count(); groups > 0 {
			l.Options = make(map[string][]string, groups)
			prev := ""
			for j := 0; j < groups && !r.bad; j++ {
				g := r.string()
				// Strictly increasing keys: no group twice.
				if j > 0 && g <= prev {
					r.fail()
				}
				prev = g
				l.Options[g] = r.strings()
			}
		}
		l.Note = r.string()
		c.Items = append(c.Items, l)
	}
	c.Fingerprint = r.string()
	flags := r.byte()
	if flags&^(placeHasExpectedTotal|placeAllowRepeat) != 0 {
		r.fail()
	}
	if flags&placeHasExpectedTotal != 0 {
		v := r.varint()
		c.ExpectedTotal = &v
	}
	c.AllowRepeat = flags&placeAllowRepeat != 0
	w := &c.Windows
	for _, v := range []*int64{&c.CandidateID, &w.CooldownMs, &w.BurstMs, &w.PayloadMs, &w.IdempotencyMs} {
		*v = r.varint()
	}
	c.Attempt = r.string()
	return r.done()
}

// The cached result of an order (the KV value under its key and its
// payload window) is binary when a version-4 command writes it, after a
// tag byte no JSON text starts with; entries written as JSON (by a
// version-3 command, or an older build) are still read.
const cachedBinaryTag = 0x01

// Flags of the cached result's optional fields.
const (
	cachedHasRequestID = 1 << iota
	cachedAllowed
	cachedIdempotentReplay
)

// encodeCached is r as a command of version v stores it: JSON before
// version 4, so an old log replays to the same bytes.
func encodeCached(r cachedResult, v uint8) []byte {
	if v < placeBinaryVersion {
		return mustJSON(r)
	}
	body := r.Body
	b := make([]byte, 0, 16+len(r.Fingerprint)+len(r.Attempt)+len(body.Status)+40)
	b = append(b, cachedBinaryTag)
	b = appendString(b, r.Fingerprint)
	b = appendString(b, r.Attempt)
	var flags byte
	if body.RequestID != nil {
		flags |= cachedHasRequestID
	}
	if body.Allowed {
		flags |= cachedAllowed
	}
	if body.IdempotentReplay {
		flags |= cachedIdempotentReplay
	}
	b = append(b, flags)
	if body.RequestID != nil {
		b = appendString(b, *body.RequestID)
	}
	b = binary.AppendVarint(b, body.OrderID)
	b = appendString(b, body.Status)
	b = binary.AppendVarint(b, body.TotalPrice)
	return binary.AppendVarint(b, body.TicketNo)
}

// decodeCached reads a cached result in either form; false when it is
// neither (the callers treat it as they always treated bad JSON).
func decodeCached(b []byte) (cachedResult, bool) {
	var c cachedResult
	if len(b) == 0 || b[0] != cachedBinaryTag {
		return c, json.Unmarshal(b, &c) == nil
	}
	r := newReader(b[1:])
	c.Fingerprint = r.string()
	c.Attempt = r.string()
	flags := r.byte()
	if flags&^(cachedHasRequestID|cachedAllowed|cachedIdempotentReplay) != 0 {
		r.fail()
	}
	body := &c.Body
	if flags&cachedHasRequestID != 0 {
		id := r.string()
		body.RequestID = &id
	}
	body.Allowed = flags&cachedAllowed != 0
	body.IdempotentReplay = flags&cachedIdempotentReplay != 0
	body.OrderID = r.varint()
	body.Status = r.string()
	body.TotalPrice = r.varint()
	body.TicketNo = r.varint()
	return c, r.done()
}

// shownValue is a KV value as staff see it (GET /api/staff/locks): a
// binary cached result as the JSON it stands for, the cloud setting
// without its key.
func shownValue(key string, v []byte) string {
	if key == keyCloudSetting {
		// The sealed key stays on the boxes (cloud_setting.go).
		var c cloudSettingCmd
		json.Unmarshal(v, &c)
		return string(mustJSON(c.shown()))
	}
	if strings.HasPrefix(key, prefixWindowRecord) {
		if r, good := decodeWindowRecord(v); good {
			return string(mustJSON(r.shown()))
		}
	}
	if len(v) > 0 && v[0] == cachedBinaryTag && (strings.HasPrefix(key, prefixIdem) || strings.HasPrefix(key, prefixPayload)) {
		if c, good := decodeCached(v); good {
			return string(mustJSON(c))
		}
	}
	return string(v)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendListLen writes a list's length plus one, 0 for nil: JSON tells
// null from [] and so does this.
func appendListLen(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendStrings(b []byte, ss []string) []byte {
	b = appendListLen(b, len(ss), ss == nil)
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// reader reads the binary forms; the first fault sticks and
// every later read yields zero values, so a decoder reads on and checks
// once. Counts are bounded by the bytes left, so a corrupt count cannot
// make a large allocation.
//
// Strings are cut from one copy of the whole input (one allocation, not
// one per field).
type reader struct {
	b   []byte
	s   string // the input, read from off
	off int
	bad bool
}

func newReader(b []byte) reader { return reader{b: b, s: string(b)} }

func (r *reader) fail() { r.bad, r.b = true, nil }

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.skip(n)
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.skip(n)
	return v
}

func (r *reader) skip(n int) { r.b, r.off = r.b[n:], r.off+n }

// int is a varint that fits this platform's int (as json.Unmarshal into
// an int demands).
func (r *reader) int() int {
	v := r.varint()
	if int64(int(v)) != v {
		r.fail()
		return 0
	}
	return int(v)
}

// count is a number of elements still to come, each at least one byte.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	v := r.b[0]
	r.skip(1)
	return v
}

func (r *reader) string() string {
	n := r.count()
	if r.bad {
		return ""
	}
	s := r.s[r.off : r.off+n]
	r.skip(n)
	if !utf8.ValidString(s) {
		r.fail()
		return ""
	}
	return s
}

// listLen reads an appendListLen length, bounded like count.
func (r *reader) listLen() (n int, isNil bool) {
	v := r.uvarint()
	if v == 0 || r.bad {
		return 0, true
	}
	if v-1 > uint64(len(r.b)) {
		r.fail()
		return 0, true
	}
	return int(v - 1), false
}

// strings reads an appendStrings list.
func (r *reader) strings() []string {
	n, isNil := r.listLen()
	if isNil {
		return nil
	}
	ss := make([]string, 0, n)
	for i := 0; i < n && !r.bad; i++ {
		ss = append(ss, r.string())
	}
	return ss
}

// done reports a clean read with nothing left over.
func (r *reader) done() bool { return !r.bad && len(r.b) == 0 }
