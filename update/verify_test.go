package update_test

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"masterorder/update"
)

const board = "masterorder-rpi-arm64"

func refusedWith(t *testing.T, what string, err error, code string) {
	t.Helper()
	var r *update.Refusal
	if !errors.As(err, &r) || r.Code != code {
		t.Fatalf("%s: got %v, want refusal %s", what, err, code)
	}
	t.Logf("%s: refused %s (%s)", what, r.Code, r.Detail)
}

// Every refusal of a bundle, each against a real RAUC bundle and RAUC's
// own signature check.
func TestVerifyRefusals(t *testing.T) {
	needRAUC(t)
	ctx := context.Background()
	dir := t.TempDir()
	payload := filepath.Join(dir, "payload")
	// Random bytes: squashfs cannot shrink them below the 4 KiB a verity
	// bundle needs.
	rnd := make([]byte, 64<<10)
	rand.Read(rnd)
	os.WriteFile(payload, rnd, 0o755)
	store, other := newSigner(t, "store"), newSigner(t, "other")
	expect := update.Expect{Keyring: store.Keyring, Compatible: board, Running: "1.2.0"}

	good := store.makeBundle(t, dir, board, "1.3.0", payload)
	b, err := update.Verify(ctx, good, expect)
	if err != nil || b.Version != "1.3.0" || b.Compatible != board {
		t.Fatalf("a good bundle: %+v, %v", b, err)
	}

	refusedWith(t, "unsigned", func() error {
		_, err := update.Verify(ctx, unsignedBundle(t, dir, board, "1.3.0", payload), expect)
		return err
	}(), update.CodeUnsigned)

	otherKey := other.makeBundle(t, t.TempDir(), board, "1.3.0", payload)
	_, err = update.Verify(ctx, otherKey, expect)
	refusedWith(t, "signed by another key", err, update.CodeWrongKey)

	raw, _ := os.ReadFile(good)
	for _, cut := range []int{len(raw) / 2, len(raw) - 100, 10} {
		truncated := filepath.Join(dir, "truncated.raucb")
		os.WriteFile(truncated, raw[:cut], 0o644)
		_, err = update.Verify(ctx, truncated, expect)
		refusedWith(t, "truncated", err, update.CodeCorrupt)
	}

	otherBoard := store.makeBundle(t, dir, "masterorder-x86", "1.3.0", payload)
	_, err = update.Verify(ctx, otherBoard, expect)
	refusedWith(t, "another board", err, update.CodeWrongBoard)

	older := store.makeBundle(t, dir, board, "1.1.9", payload)
	_, err = update.Verify(ctx, older, expect)
	refusedWith(t, "downgrade without confirmation", err, update.CodeDowngrade)
	if _, err := update.Verify(ctx, older, update.Expect{Keyring: store.Keyring, Compatible: board, Running: "1.2.0", AllowDowngrade: true}); err != nil {
		t.Fatalf("confirmed downgrade: %v", err)
	}

	same := store.makeBundle(t, dir, board, "1.2.0", payload)
	_, err = update.Verify(ctx, same, expect)
	refusedWith(t, "the version it runs", err, update.CodeCurrent)
}

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
		ok   bool
	}{
		{"1.2.0", "1.2.0", 0, true}, {"1.10.0", "1.9.3", 1, true}, {"v1.2", "1.2.1", -1, true},
		{"1.2.0-rc1", "1.2.0", -1, true}, {"1.2.0-rc2", "1.2.0-rc1", 1, true}, {"dev", "1.0.0", 0, false},
	} {
		got, ok := update.Compare(c.a, c.b)
		if got != c.want || ok != c.ok {
			t.Errorf("Compare(%q, %q) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}
