package orders

import (
	"bytes"
	"errors"
	"testing"
)

// A sealed key opens with the same secret and shop only; a key sealed
// under other secrets is told apart from a damaged one (the page says
// "choose the file again" for the first).
func TestCloudSealer(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	key := []byte(`{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\nMIIE…"}`)
	a, err := newCloudSealer(secret, "shop-a")
	if err != nil {
		t.Fatal(err)
	}
	sealed := a.seal(key)
	if bytes.Contains(sealed, []byte("PRIVATE KEY")) || len(sealed) != len(key)+sealOverhead {
		t.Fatalf("sealed %d bytes of %d: %q", len(sealed), len(key), sealed)
	}
	if again := a.seal(key); bytes.Equal(again, sealed) {
		t.Fatal("two seals of one key are the same bytes (nonce reused)")
	}
	if got, err := a.open(sealed); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("open: %q, %v", got, err)
	}

	rotated, _ := newCloudSealer([]byte("another secret, after rotate-secrets"), "shop-a")
	if _, err := rotated.open(sealed); !errors.Is(err, errSealedElsewhere) {
		t.Fatalf("open under another secret: %v, want errSealedElsewhere", err)
	}
	otherShop, _ := newCloudSealer(secret, "shop-b")
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	for name, c := range map[string]struct {
		s *cloudSealer
		b []byte
	}{"another shop": {otherShop, sealed}, "a flipped bit": {a, tampered}, "cut short": {a, sealed[:sealOverhead]}, "another version": {a, append([]byte{9}, sealed[1:]...)}} {
		if _, err := c.s.open(c.b); err == nil || errors.Is(err, errSealedElsewhere) {
			t.Errorf("%s: %v, want the key damaged", name, err)
		}
	}
}

// The command's checks: off carries nothing; on carries a sealed key, a
// project, an account and how the check went.
func TestCloudSettingValid(t *testing.T) {
	on := cloudSettingCmd{On: true, Sealed: make([]byte, 100), ProjectID: "my-shop-1234", ClientEmail: "sync@my-shop-1234.iam.gserviceaccount.com",
		KeyID: "abc123", SavedAt: 1, Checked: checkWritten}
	if !on.valid() || !(cloudSettingCmd{}).valid() {
		t.Fatal("a good setting refused")
	}
	for name, f := range map[string]func(c *cloudSettingCmd){
		"off with a key":   func(c *cloudSettingCmd) { *c = cloudSettingCmd{Sealed: []byte("x")} },
		"no key":           func(c *cloudSettingCmd) { c.Sealed = nil },
		"a huge key":       func(c *cloudSettingCmd) { c.Sealed = make([]byte, maxSealedKey+1) },
		"a bad project":    func(c *cloudSettingCmd) { c.ProjectID = "Has Spaces" },
		"no account":       func(c *cloudSettingCmd) { c.ClientEmail = "" },
		"a line break":     func(c *cloudSettingCmd) { c.ClientEmail = "a@b\nc" },
		"an unknown check": func(c *cloudSettingCmd) { c.Checked = "maybe" },
	} {
		c := on
		f(&c)
		if c.valid() {
			t.Errorf("%s: accepted", name)
		}
	}
	if shown := on.shown(); shown.Sealed != nil || shown.ProjectID != on.ProjectID {
		t.Fatalf("shown %+v", shown)
	}
}
