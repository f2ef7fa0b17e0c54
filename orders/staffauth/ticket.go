package staffauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// TicketTTL is how long a stream ticket opens the kitchen stream, in the
// issuer's time (FSM time): long enough for the page to open its
// EventSource, short enough that one read from a URL in a log is useless.
const TicketTTL = 60 * time.Second

// QueryTicket is the query parameter carrying a stream ticket.
const QueryTicket = "ticket"

// A stream ticket is
//
//	base64url(payload) "." base64url(HMAC-SHA256(k, payload))
//
// with payload = version(1) || role(1) || token id(16) || nonce(16) ||
// expiresAt(8, Unix s) || wallIssuedAt(8, 0 = unknown), and k derived from
// the secret for this purpose only (a ticket is never a token, nor the
// other way round). Every node sharing the secret accepts it; it carries
// the id of the token it was asked with, so logging that token out
// revokes its tickets too.
const (
	ticketVersion    = 1
	ticketPayloadLen = 1 + 1 + 16 + 16 + 8 + 8
	maxTicketChars   = 72 + 1 + 43
)

// IssueTicket returns a stream ticket for the holder of the token with
// claims c, and when it expires: TicketTTL from now, never after the token.
func (i *Issuer) IssueTicket(c Claims) (ticket string, expiresAt time.Time) {
	if i.Validate() != nil || (c.Role != RoleManager && c.Role != RoleKitchen) {
		return "", time.Time{}
	}
	id, err := hex.DecodeString(c.ID)
	if err != nil || len(id) != 16 {
		return "", time.Time{}
	}
	expires := i.now().Add(TicketTTL).Truncate(time.Second)
	if !c.ExpiresAt.IsZero() && c.ExpiresAt.Before(expires) {
		expires = c.ExpiresAt
	}
	var p [ticketPayloadLen]byte
	p[0] = ticketVersion
	p[1] = byte(c.Role)
	copy(p[2:18], id)
	rand.Read(p[18:34])
	binary.BigEndian.PutUint64(p[34:42], uint64(expires.Unix()))
	if wall, ok := i.wall(); ok {
		binary.BigEndian.PutUint64(p[42:50], uint64(wall.Unix()))
	}
	return b64.EncodeToString(p[:]) + "." + b64.EncodeToString(i.ticketMAC(p[:])), expires
}

// VerifyTicket checks a ticket's form, signature and expiry. The claims
// are the token's id and role and the ticket's expiry; nonce tells this
// ticket from the others of the same token (UsedTickets).
func (i *Issuer) VerifyTicket(ticket string) (c Claims, nonce string, err error) {
	if err := i.Validate(); err != nil {
		return Claims{}, "", err
	}
	if len(ticket) > maxTicketChars {
		return Claims{}, "", ErrMalformed
	}
	payload, mac, ok := decodeSigned(ticket, ticketPayloadLen)
	if !ok {
		return Claims{}, "", ErrMalformed
	}
	if !hmac.Equal(mac, i.ticketMAC(payload)) {
		return Claims{}, "", ErrForged
	}
	if payload[0] != ticketVersion {
		return Claims{}, "", ErrMalformed
	}
	c = Claims{
		ID:        hex.EncodeToString(payload[2:18]),
		Role:      Role(payload[1]),
		ExpiresAt: time.Unix(int64(binary.BigEndian.Uint64(payload[34:42])), 0),
	}
	if c.Role != RoleManager && c.Role != RoleKitchen {
		return Claims{}, "", ErrMalformed
	}
	if !i.now().Before(c.ExpiresAt) {
		return Claims{}, "", ErrExpired
	}
	// FSM time stands still while the store is off: a plausible wall
	// clock caps the ticket too.
	if w := int64(binary.BigEndian.Uint64(payload[42:50])); w != 0 {
		if wall, ok := i.wall(); ok && wall.Sub(time.Unix(w, 0)) > TicketTTL+WallSkew {
			return Claims{}, "", ErrExpired
		}
	}
	return c, hex.EncodeToString(payload[18:34]), nil
}

func (i *Issuer) ticketMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, i.key("masterorder stream ticket v1"))
	m.Write(payload)
	return m.Sum(nil)
}

// decodeSigned splits "payload.mac", decodes both and checks that the
// payload is n bytes and the MAC a SHA-256 one.
func decodeSigned(s string, n int) (payload, mac []byte, ok bool) {
	enc, encMAC, ok := strings.Cut(s, ".")
	if !ok {
		return nil, nil, false
	}
	payload, err := b64.DecodeString(enc)
	if err != nil || len(payload) != n {
		return nil, nil, false
	}
	mac, err = b64.DecodeString(encMAC)
	if err != nil || len(mac) != macLen {
		return nil, nil, false
	}
	return payload, mac, true
}

// UsedTickets remembers the tickets this node has accepted until they
// expire, so each opens one stream here. It is per node: a ticket read
// from a log could still open one stream on each other box within its
// 60 s, which replicating every use through Raft would not be worth.
type UsedTickets struct {
	mu   sync.Mutex
	seen map[string]time.Time // nonce → expiry
}

// maxUsedTickets bounds the memory: far more than a store's screens can
// ask for in TicketTTL (a ticket is issued only to a valid staff token).
const maxUsedTickets = 4096

// Use reports whether the ticket with this nonce was not used before here,
// and marks it used; now is the issuer's time (expired entries are pruned).
func (u *UsedTickets) Use(nonce string, expires, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen == nil {
		u.seen = map[string]time.Time{}
	}
	if _, ok := u.seen[nonce]; ok {
		return false
	}
	if len(u.seen) >= maxUsedTickets {
		for k, exp := range u.seen {
			if !now.Before(exp) {
				delete(u.seen, k)
			}
		}
		if len(u.seen) >= maxUsedTickets {
			return false // refuse rather than forget a live ticket
		}
	}
	u.seen[nonce] = expires
	return true
}
