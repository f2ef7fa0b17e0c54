package staffauth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSecret = bytes.Repeat([]byte{0x5a}, 32)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 4, 1, 11, 30, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestPassword(t *testing.T) {
	h, err := HashPassword("demo")
	if err != nil {
		t.Fatal(err)
	}
	if !CheckPassword(h, "demo") {
		t.Error("right password rejected")
	}
	for _, pw := range []string{"", "Demo", "demo ", strings.Repeat("d", 73)} {
		if CheckPassword(h, pw) {
			t.Errorf("CheckPassword(%q) = true", pw)
		}
	}
	if CheckPassword("not a hash", "demo") || CheckPassword("", "") {
		t.Error("malformed hash matched")
	}
	if _, err := HashPassword(""); err == nil {
		t.Error("empty password hashed")
	}
	if _, err := HashPassword(strings.Repeat("x", 73)); err == nil {
		t.Error("73-byte password hashed")
	}
	h2, _ := HashPassword("demo")
	if h == h2 {
		t.Error("hashes are not salted")
	}
}

func TestTokenRoundTripOnAnotherNode(t *testing.T) {
	clk := newClock()
	a := &Issuer{Secret: testSecret, Now: clk.Now}
	tok, id, exp := a.Issue()
	if len(id) != 32 {
		t.Errorf("id %q is not 128 bits of hex", id)
	}
	if want := clk.Now().Add(12 * time.Hour); !exp.Equal(want) {
		t.Errorf("expiresAt %v, want %v", exp, want)
	}
	// Another node (another Issuer value, same secret) accepts it.
	b := &Issuer{Secret: bytes.Clone(testSecret), Now: clk.Now}
	c, err := b.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != id || !c.ExpiresAt.Equal(exp) || !c.IssuedAt.Equal(clk.Now()) {
		t.Errorf("claims %+v", c)
	}
	tok2, id2, _ := a.Issue()
	if tok2 == tok || id2 == id {
		t.Error("two tokens are the same")
	}
}

func TestTokenExpiry(t *testing.T) {
	clk := newClock()
	iss := &Issuer{Secret: testSecret, TTL: time.Hour, Now: clk.Now}
	tok, _, _ := iss.Issue()
	clk.Advance(time.Hour - time.Second)
	if _, err := iss.Verify(tok); err != nil {
		t.Fatalf("valid one second before expiry: %v", err)
	}
	clk.Advance(time.Second)
	if _, err := iss.Verify(tok); !errors.Is(err, ErrExpired) {
		t.Fatalf("at expiry: %v, want ErrExpired", err)
	}
}

// splitIssued issues a token on a fresh clock and returns it with its
// parts: the encoded payload, the MAC and the decoded payload.
func splitIssued() (clk *fakeClock, iss *Issuer, tok, enc, mac string, payload []byte) {
	clk = newClock()
	iss = &Issuer{Secret: testSecret, Now: clk.Now}
	tok, _, _ = iss.Issue()
	enc, mac, _ = strings.Cut(tok, ".")
	payload, _ = b64.DecodeString(enc)
	return clk, iss, tok, enc, mac, payload
}

func TestTokenForged(t *testing.T) {
	clk, iss, _, enc, mac, payload := splitIssued()

	// Extend the expiry by a year, keep the MAC.
	longer := bytes.Clone(payload)
	binary.BigEndian.PutUint64(longer[25:], binary.BigEndian.Uint64(longer[25:])+365*24*3600)
	// Change the id.
	otherID := bytes.Clone(payload)
	otherID[5] ^= 1
	other := &Issuer{Secret: bytes.Repeat([]byte{0x42}, 32), Now: clk.Now}
	foreign, _, _ := other.Issue()
	macBytes, _ := b64.DecodeString(mac)
	macBytes[0] ^= 0x80

	for name, forged := range map[string]string{
		"longer expiry":  b64.EncodeToString(longer) + "." + mac,
		"changed id":     b64.EncodeToString(otherID) + "." + mac,
		"wrong secret":   foreign,
		"flipped mac":    enc + "." + b64.EncodeToString(macBytes),
		"mac of another": enc + "." + strings.SplitN(foreign, ".", 2)[1],
	} {
		if _, err := iss.Verify(forged); !errors.Is(err, ErrForged) {
			t.Errorf("%s: %v, want ErrForged", name, err)
		}
	}
}

func TestTokenMalformed(t *testing.T) {
	_, iss, tok, enc, mac, payload := splitIssued()

	// A correctly signed payload of an unknown version.
	v2 := bytes.Clone(payload)
	v2[0] = 1 // version 1 tokens (no role) are refused
	noRole := bytes.Clone(payload)
	noRole[1] = 9
	// Expiry before issue.
	backwards := bytes.Clone(payload)
	binary.BigEndian.PutUint64(backwards[26:34], binary.BigEndian.Uint64(backwards[18:26])-1)

	for name, bad := range map[string]string{
		"empty":          "",
		"no dot":         enc + mac,
		"two dots":       tok + ".x",
		"not base64":     "!!!." + mac,
		"padded base64":  enc + "=." + mac,
		"short payload":  b64.EncodeToString(payload[:20]) + "." + mac,
		"short mac":      enc + "." + mac[:20],
		"too long":       tok + strings.Repeat("A", 200),
		"unknown format": b64.EncodeToString(v2) + "." + b64.EncodeToString(iss.mac(v2)),
		"unknown role":   b64.EncodeToString(noRole) + "." + b64.EncodeToString(iss.mac(noRole)),
		"backwards":      b64.EncodeToString(backwards) + "." + b64.EncodeToString(iss.mac(backwards)),
		"bearer prefix":  "Bearer " + tok,
	} {
		if _, err := iss.Verify(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

func TestShortSecretIsRefused(t *testing.T) {
	for _, secret := range [][]byte{nil, []byte("short")} {
		iss := &Issuer{Secret: secret}
		if tok, id, exp := iss.Issue(); tok != "" || id != "" || !exp.IsZero() {
			t.Errorf("issued with secret %q", secret)
		}
		if _, err := iss.Verify("x.y"); !errors.Is(err, ErrNoSecret) {
			t.Errorf("Verify with secret %q: %v", secret, err)
		}
		if _, err := NewAuth(iss, nil); err == nil {
			t.Errorf("NewAuth accepted secret %q", secret)
		}
	}
}

func TestSecretEncoding(t *testing.T) {
	s := NewSecret()
	b, err := DecodeSecret(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("DecodeSecret(NewSecret()) = %x, %v", b, err)
	}
	if NewSecret() == s {
		t.Error("NewSecret repeats")
	}
	if _, err := DecodeSecret("abcd"); err == nil {
		t.Error("short secret accepted")
	}
	if _, err := DecodeSecret(strings.Repeat("zz", 32)); err == nil {
		t.Error("non-hex secret accepted")
	}
}

func TestCSRFToken(t *testing.T) {
	iss := &Issuer{Secret: testSecret}
	a := iss.CSRFToken("00112233445566778899aabbccddeeff")
	if a != iss.CSRFToken("00112233445566778899aabbccddeeff") {
		t.Error("CSRF value is not deterministic")
	}
	if a == iss.CSRFToken("00112233445566778899aabbccddeefe") {
		t.Error("CSRF value does not depend on the id")
	}
	other := &Issuer{Secret: bytes.Repeat([]byte{1}, 32)}
	if a == other.CSRFToken("00112233445566778899aabbccddeeff") {
		t.Error("CSRF value does not depend on the secret")
	}
	// The CSRF value is not the token's MAC key material: it must not
	// verify as a MAC for anything.
	if strings.Contains(a, ".") {
		t.Error("CSRF value looks like a token")
	}
}

// A kitchen token says so, lasts its own TTL, and cannot be turned into a
// manager token without the secret.
func TestTokenRole(t *testing.T) {
	clk := newClock()
	iss := &Issuer{Secret: testSecret, Now: clk.Now}
	tok, _, exp := iss.IssueRole(RoleKitchen, DefaultKitchenTTL)
	c, err := iss.Verify(tok)
	if err != nil || c.Role != RoleKitchen || exp.Sub(clk.Now()) != DefaultKitchenTTL {
		t.Fatalf("kitchen token: %+v %v (expires %v)", c, err, exp)
	}
	enc, mac, _ := strings.Cut(tok, ".")
	p, _ := b64.DecodeString(enc)
	p[1] = byte(RoleManager)
	if _, err := iss.Verify(b64.EncodeToString(p) + "." + mac); !errors.Is(err, ErrForged) {
		t.Errorf("kitchen token relabelled manager: %v", err)
	}
	if m, _, _ := iss.Issue(); m == "" {
		t.Fatal("no manager token")
	} else if c, _ := iss.Verify(m); c.Role != RoleManager {
		t.Errorf("Issue gave role %v", c.Role)
	}
	if tok, _, _ := iss.IssueRole(Role(7), time.Hour); tok != "" {
		t.Error("issued a token of an unknown role")
	}
}

// FSM time stands still while the store is dark: a token issued before a
// night off must still expire by the wall clock, but an implausible wall
// clock (a box booted without RTC, at 1970) must not expire or extend
// anything.
func TestTokenWallClockCap(t *testing.T) {
	fsm := newClock() // FSM time: does not move over the night
	wall := newClock()
	iss := &Issuer{Secret: testSecret, Now: fsm.Now, Wall: wall.Now, TTL: 12 * time.Hour}
	tok, _, _ := iss.Issue()
	wall.Advance(11 * time.Hour)
	if _, err := iss.Verify(tok); err != nil {
		t.Fatalf("within the TTL by the wall clock: %v", err)
	}
	wall.Advance(2 * time.Hour) // 13 h of wall time, FSM time 0
	if _, err := iss.Verify(tok); !errors.Is(err, ErrExpired) {
		t.Errorf("13 h later by the wall clock: %v, want ErrExpired", err)
	}
	// Another box whose clock is at 1970 judges by FSM time only.
	dark := &Issuer{Secret: testSecret, Now: fsm.Now, Wall: func() time.Time { return time.Unix(0, 0) }}
	if _, err := dark.Verify(tok); err != nil {
		t.Errorf("a box with an implausible clock refused a live token: %v", err)
	}
	// A token issued by a box with an implausible clock carries no wall
	// stamp; FSM time alone limits it.
	tok2, _, _ := dark.Issue()
	if _, err := iss.Verify(tok2); err != nil {
		t.Errorf("token without a wall stamp: %v", err)
	}
	fsm.Advance(12 * time.Hour)
	if _, err := iss.Verify(tok2); !errors.Is(err, ErrExpired) {
		t.Errorf("past its FSM expiry: %v", err)
	}
}

// Tokens issued while nobody has given the boxes the time (after a power
// cut, no NTP) carry no wall stamp: otherwise setting the clock the next
// minute would expire every login of the morning. A token stamped while
// the time was trusted is still capped once it is trusted again.
func TestTokenUntrustedWallStampsNothing(t *testing.T) {
	fsm := newClock()
	wall := newClock()
	trusted := false
	iss := &Issuer{Secret: testSecret, Now: fsm.Now, Wall: wall.Now, WallTrusted: func() bool { return trusted }, TTL: 12 * time.Hour}
	early, _, _ := iss.Issue() // the clock says last night
	trusted = true
	wall.Advance(13 * time.Hour) // a manager sets the real time
	if _, err := iss.Verify(early); err != nil {
		t.Errorf("a token issued before the time was set, after it was: %v", err)
	}
	stamped, _, _ := iss.Issue()
	trusted = false
	wall.Advance(13 * time.Hour)
	if _, err := iss.Verify(stamped); err != nil {
		t.Errorf("an untrusted wall clock expired a token: %v", err)
	}
	trusted = true
	if _, err := iss.Verify(stamped); !errors.Is(err, ErrExpired) {
		t.Errorf("13 trusted hours later: %v, want ErrExpired", err)
	}
}

func TestCheckStrength(t *testing.T) {
	for _, weak := range []string{"", "demo", "short1!", "password", "Password123", "P@ssword!!", "1234567890", "aaaaaaaaaaaa",
		"abcdefghij", "kitchen2026", "Ramen-2026!!", "0987654321", "ababababab", "qwertyuiop"} {
		if CheckStrength(weak) == nil {
			t.Errorf("CheckStrength(%q) accepted", weak)
		}
	}
	for _, ok := range []string{"correct horse battery", "kitchen tablet 42", "t7!Kq9zR2mX", NewSecret()[:16]} {
		if err := CheckStrength(ok); err != nil {
			t.Errorf("CheckStrength(%q): %v", ok, err)
		}
	}
}
