package staffauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultTTL is how long a staff (manager) token lives.
const DefaultTTL = 12 * time.Hour

// DefaultKitchenTTL is how long a kitchen token lives: a service day.
const DefaultKitchenTTL = 18 * time.Hour

// Role is what a token may do.
type Role byte

// The two roles (API.md "Staff roles and HTTPS").
const (
	RoleManager Role = 1 // everything
	RoleKitchen Role = 2 // kitchen list and stream, order status, sold-out toggles, calls
)

// String is the role's name in the login answer.
func (r Role) String() string {
	switch r {
	case RoleManager:
		return "manager"
	case RoleKitchen:
		return "kitchen"
	}
	return "unknown"
}

// PlausibleAfter is the earliest wall-clock time a box can really be at:
// a box without a real-time clock boots far in the past, and its wall
// clock then says nothing about how old a token is.
var PlausibleAfter = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// WallSkew is how far apart two boxes' plausible wall clocks may be before
// the wall-clock cap expires a token early.
const WallSkew = 10 * time.Minute

// MinSecretLen is the shortest cluster secret accepted (256 bits).
const MinSecretLen = 32

// Token errors. Verify wraps none of them; compare with errors.Is.
var (
	ErrMalformed = errors.New("staffauth: malformed token")
	ErrForged    = errors.New("staffauth: token signature does not verify")
	ErrExpired   = errors.New("staffauth: token expired")
	ErrRevoked   = errors.New("staffauth: token revoked")
	ErrNoSecret  = fmt.Errorf("staffauth: cluster secret shorter than %d bytes", MinSecretLen)
)

// Claims are what a verified token says.
type Claims struct {
	ID        string    // 32 hex digits, 128 random bits; the revocation key
	Role      Role      // manager or kitchen
	IssuedAt  time.Time // second precision
	ExpiresAt time.Time // second precision
	// WallIssuedAt is the issuing box's wall clock at login (zero when it
	// was not plausible); it caps the lifetime when FSM time stood still.
	WallIssuedAt time.Time
}

// Issuer issues and verifies staff tokens. A token is
//
//	base64url(payload) "." base64url(HMAC-SHA256(k, payload))
//
// where payload is version(1) || role(1) || id(16) || issuedAt(8, Unix s,
// big endian) || expiresAt(8) || wallIssuedAt(8, 0 = unknown) and k is
// derived from Secret. Because the token carries
// its own proof, every node that shares Secret accepts it, restarts lose
// nothing, and nothing is replicated at login; logout replicates the id
// into a revocation list that the middleware consults.
//
// Now should be the cluster's FSM time where one is available, so that
// boxes whose wall clocks disagree (no RTC, offline boot) still agree on
// expiry; it defaults to time.Now. TTL defaults to DefaultTTL.
//
// FSM time stops while the whole store is powered off, so a token would
// outlive its TTL in wall time by every night the store was dark. Wall,
// when set, is this box's wall clock: a token is also expired once a
// plausible wall clock (after PlausibleAfter) is more than TTL+WallSkew
// past the plausible wall time it was issued at. An implausible clock
// (a box booted without a real-time clock) judges nothing. Wall should be
// the cluster's wall time, the same on every box, not each box's own
// clock: a box that just booted at its image's date would otherwise issue
// tokens that every other box calls expired.
//
// WallTrusted, when set, says whether Wall is known to show the real time
// (NTP, a manager, a trusted box): while it does not, tokens carry no
// wall time and the wall judges nothing. Otherwise a token issued after a
// power cut, before anyone gave the boxes the time, would be stamped with
// the time before the cut and expire the moment the time is set.
type Issuer struct {
	Secret      []byte
	TTL         time.Duration
	Now         func() time.Time
	Wall        func() time.Time
	WallTrusted func() bool
}

const (
	tokenVersion  = 2 // version 1 carried no role: such tokens are refused
	payloadLen    = 1 + 1 + 16 + 8 + 8 + 8
	macLen        = sha256.Size
	maxTokenChars = 128 // 56 + 1 + 43 for version 2
)

var b64 = base64.RawURLEncoding.Strict()

// Validate reports whether the issuer can be used (secret long enough).
func (i *Issuer) Validate() error {
	if i == nil || len(i.Secret) < MinSecretLen {
		return ErrNoSecret
	}
	return nil
}

// Issue returns a new manager token, its id, and when it expires. With a
// secret shorter than MinSecretLen it issues nothing (all results zero);
// NewAuth refuses such an issuer, so check Validate when using Issuer alone.
func (i *Issuer) Issue() (token string, id string, expiresAt time.Time) {
	return i.IssueRole(RoleManager, i.ttl())
}

// IssueRole returns a new token of role lasting ttl (the issuer's TTL when
// ttl <= 0).
func (i *Issuer) IssueRole(role Role, ttl time.Duration) (token string, id string, expiresAt time.Time) {
	if i.Validate() != nil || (role != RoleManager && role != RoleKitchen) {
		return "", "", time.Time{}
	}
	if ttl <= 0 {
		ttl = i.ttl()
	}
	var p [payloadLen]byte
	p[0] = tokenVersion
	p[1] = byte(role)
	rand.Read(p[2:18]) // never fails (crypto/rand, Go 1.24+)
	issued := i.now().Truncate(time.Second)
	expires := issued.Add(ttl)
	binary.BigEndian.PutUint64(p[18:26], uint64(issued.Unix()))
	binary.BigEndian.PutUint64(p[26:34], uint64(expires.Unix()))
	if wall, ok := i.wall(); ok {
		binary.BigEndian.PutUint64(p[34:42], uint64(wall.Unix()))
	}
	mac := i.mac(p[:])
	return b64.EncodeToString(p[:]) + "." + b64.EncodeToString(mac), hex.EncodeToString(p[2:18]), expires
}

// Verify checks a token's form, signature (in constant time) and expiry.
// It returns ErrMalformed, ErrForged, ErrExpired or ErrNoSecret; revocation
// is the caller's (the middleware's) business.
func (i *Issuer) Verify(token string) (Claims, error) {
	if err := i.Validate(); err != nil {
		return Claims{}, err
	}
	if len(token) > maxTokenChars {
		return Claims{}, ErrMalformed
	}
	enc, encMAC, ok := strings.Cut(token, ".")
	if !ok {
		return Claims{}, ErrMalformed
	}
	payload, err := b64.DecodeString(enc)
	if err != nil || len(payload) != payloadLen {
		return Claims{}, ErrMalformed
	}
	mac, err := b64.DecodeString(encMAC)
	if err != nil || len(mac) != macLen {
		return Claims{}, ErrMalformed
	}
	if !hmac.Equal(mac, i.mac(payload)) {
		return Claims{}, ErrForged
	}
	if payload[0] != tokenVersion {
		return Claims{}, ErrMalformed
	}
	c := Claims{
		ID:        hex.EncodeToString(payload[2:18]),
		Role:      Role(payload[1]),
		IssuedAt:  time.Unix(int64(binary.BigEndian.Uint64(payload[18:26])), 0),
		ExpiresAt: time.Unix(int64(binary.BigEndian.Uint64(payload[26:34])), 0),
	}
	if w := int64(binary.BigEndian.Uint64(payload[34:42])); w != 0 {
		c.WallIssuedAt = time.Unix(w, 0)
	}
	if c.ExpiresAt.Before(c.IssuedAt) || (c.Role != RoleManager && c.Role != RoleKitchen) {
		return Claims{}, ErrMalformed
	}
	if !i.now().Before(c.ExpiresAt) {
		return Claims{}, ErrExpired
	}
	if wall, ok := i.wall(); ok && !c.WallIssuedAt.IsZero() &&
		wall.Sub(c.WallIssuedAt) > c.ExpiresAt.Sub(c.IssuedAt)+WallSkew {
		return Claims{}, ErrExpired
	}
	return c, nil
}

// CSRFToken is the double-submit value for the token with this id: the
// server puts it in the mo_csrf cookie at login and cookie-authenticated
// writes must echo it in X-CSRF-Token. It is derived, not stored, so every
// node computes the same value.
func (i *Issuer) CSRFToken(id string) string {
	m := hmac.New(sha256.New, i.key("masterorder staff csrf v1"))
	m.Write([]byte(id))
	return b64.EncodeToString(m.Sum(nil))
}

func (i *Issuer) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, i.key("masterorder staff token v1"))
	m.Write(payload)
	return m.Sum(nil)
}

// key derives a purpose-specific key from the cluster secret, so a value
// computed for one purpose is useless for another.
func (i *Issuer) key(purpose string) []byte {
	m := hmac.New(sha256.New, i.Secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func (i *Issuer) now() time.Time {
	if i.Now != nil {
		return i.Now()
	}
	return time.Now()
}

// wall is the wall clock when it is plausible (and trusted, where the
// issuer is told).
func (i *Issuer) wall() (time.Time, bool) {
	if i.Wall == nil || (i.WallTrusted != nil && !i.WallTrusted()) {
		return time.Time{}, false
	}
	w := i.Wall()
	return w, w.After(PlausibleAfter)
}

func (i *Issuer) ttl() time.Duration {
	if i.TTL > 0 {
		return i.TTL
	}
	return DefaultTTL
}

// NewSecret returns a fresh cluster secret (32 random bytes, hex) for
// `masterorder init` to write into every node's config.
func NewSecret() string {
	b := make([]byte, MinSecretLen)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// DecodeSecret parses a secret written by NewSecret (hex, at least 32
// bytes once decoded).
func DecodeSecret(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("staffauth: secret is not hex: %w", err)
	}
	if len(b) < MinSecretLen {
		return nil, ErrNoSecret
	}
	return b, nil
}
