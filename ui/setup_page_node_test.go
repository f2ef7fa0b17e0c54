package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"masterorder/httpapi"
	"masterorder/orders/staffauth"
)

// pageSecrets is what ui/setup_test/page-secrets.mjs answers.
type pageSecrets struct {
	Hashes      []string                     `json:"hashes"`
	HashMs      []int                        `json:"hashMs"`
	Problems    []string                     `json:"problems"`
	CommonWords []string                     `json:"commonWords"`
	Strings     map[string]map[string]string `json:"strings"`
}

type hashJob struct {
	Password string `json:"password"`
	Cost     int    `json:"cost,omitempty"`
	Salt     string `json:"salt,omitempty"`
}

// runPageSecrets runs the setup page's bcrypt.js and password-rule.js
// under Node on the job. Without node on PATH the test is skipped, except
// in CI, where a missing node is a failure (as for the SDK tests).
func runPageSecrets(t *testing.T, hash []hashJob, rule []string) pageSecrets {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not on PATH; CI must run the setup page's bcrypt tests")
		}
		t.Skip("node is not on PATH: skipping the setup page's bcrypt tests")
	}
	in, err := json.Marshal(map[string]any{"hash": hash, "rule": rule})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "setup_test/page-secrets.mjs")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node setup_test/page-secrets.mjs: %v\n%s", err, stderr.Bytes())
	}
	var r pageSecrets
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node's answer: %v\n%s", err, out)
	}
	if len(r.Hashes) != len(hash) || len(r.Problems) != len(rule) {
		t.Fatalf("node answered %d hashes and %d verdicts for %d and %d", len(r.Hashes), len(r.Problems), len(hash), len(rule))
	}
	return r
}

// TestSetupPageHashesWithBcrypt: the hashes the setup page makes in the
// browser are bcrypt hashes Go's bcrypt (so every box's staff login)
// accepts for exactly that password, at init's cost, with a fresh salt
// each time; with a given salt they are the known vectors, byte for byte.
func TestSetupPageHashesWithBcrypt(t *testing.T) {
	passwords := []string{
		"Tanaka-ramen-2024",           // ASCII
		"らーめん田中の合言葉です",                // Japanese: 3 bytes a character
		"my kitchen has  two spaces ", // spaces, inside and at the end
		strings.Repeat("k7-Q", 18),    // 72 bytes, bcrypt's whole key
		strings.Repeat("田中", 12),      // 72 bytes of Japanese
		"こんにちは, Tanaka 🍜 ok",          // a 4-byte character
		"k",                           // one byte
	}
	for _, pw := range passwords[3:5] {
		if len(pw) != staffauth.MaxPasswordLen {
			t.Fatalf("%q is %d bytes, want 72", pw, len(pw))
		}
	}
	// Known vectors: Go's own bcrypt tests and Openwall's crypt_blowfish.
	vectors := []struct{ password, want string }{
		{"allmine", "$2a$10$XajjQvNhvvRt5GSeFk1xFeyqRrsxkhBkUiQeg0dt.wU1qD4aFDcga"},
		{"012345678901234567890123456789012345678901234567890123456", "$2a$10$XajjQvNhvvRt5GSeFk1xFe5l47dONXg781AmZtd869sO8zfsHuw7C"},
		{"passw0rd", "$2a$10$LK9XRuhNxHHCvjX3tdkRKei1QiCDUKrJRhZv7WWZPuQGRUM92rOUa"},
		{"U*U", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"},
		{"U*U*", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK"},
		{"U*U*U", "$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a"},
	}
	var jobs []hashJob
	for _, pw := range passwords {
		jobs = append(jobs, hashJob{Password: pw}, hashJob{Password: pw}) // twice: two salts
	}
	for _, v := range vectors {
		cost, err := bcrypt.Cost([]byte(v.want))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, hashJob{Password: v.password, Cost: cost, Salt: v.want[7:29]})
	}
	r := runPageSecrets(t, jobs, nil)
	for i, pw := range passwords {
		h1, h2 := r.Hashes[2*i], r.Hashes[2*i+1]
		for _, h := range []string{h1, h2} {
			if cost, err := bcrypt.Cost([]byte(h)); err != nil || cost != bcrypt.DefaultCost || !strings.HasPrefix(h, "$2a$10$") || len(h) != 60 {
				t.Errorf("%q: hash %q (cost %d, %v), want $2a$10$ and 53 characters", pw, h, cost, err)
			}
			if err := bcrypt.CompareHashAndPassword([]byte(h), []byte(pw)); err != nil {
				t.Errorf("%q: Go's bcrypt refuses the page's hash %q: %v", pw, h, err)
			}
			if !staffauth.CheckPassword(h, pw) {
				t.Errorf("%q: a staff login would refuse the page's hash %q", pw, h)
			}
			other := pw[:len(pw)-1] + "!"
			if err := bcrypt.CompareHashAndPassword([]byte(h), []byte(other)); err == nil {
				t.Errorf("%q: hash %q also takes %q", pw, h, other)
			}
		}
		if h1 == h2 || h1[7:29] == h2[7:29] {
			t.Errorf("%q: two hashes share a salt: %q, %q", pw, h1, h2)
		}
	}
	for i, v := range vectors {
		if got := r.Hashes[2*len(passwords)+i]; got != v.want {
			t.Errorf("%q: page made %q, want %q", v.password, got, v.want)
		}
	}
	t.Logf("cost-10 hash times in Node, ms: %v", r.HashMs[:2*len(passwords)])
}

// TestSetupPageStrengthRule: the page refuses exactly the passwords init
// (staffauth.CheckStrength) refuses, knows the same common words, and
// says so in the words a box's WEAK_PASSWORD and SAME_PASSWORDS say.
func TestSetupPageStrengthRule(t *testing.T) {
	rule := []string{
		"Tanaka-ramen-2024", "kitchen-screen-pw", "short1!", "12345678", "1234567890", "0987654321",
		"1234567890123456", "9384750192837465", "abcdefghij", "aaaaaaaaaaaa", "ababababab", "abcabcabca",
		"P@ssw0rd2024", "Passw0rd!!!!", "passwordxyzw", "xyzpassword!", "p4ssw0rd-99", "Ramen-Tanaka-2024!",
		"correct horse battery", "  spaced  out  ", "らーめん田中の合言葉です", "らーめん田中", "１２３４５６７８９０",
		"一二三四五六七八九十", "ＰＡＳＳＷＯＲＤ１２", "İstanbul-Kebab7", "ΣΊΣΥΦΟΣ-σοφός", "Küche-2024-ok",
		strings.Repeat("k7-Q", 18), strings.Repeat("k7-Q", 18) + "x", strings.Repeat("田中", 12), strings.Repeat("田中", 12) + "!",
		"qwertyuiop", "QWERTYUIOP12", "s3cr3t-s3cr3t", "Str0ng but guest", "guest-guest-guest",
		"🍜🍜🍜🍜🍜🍜🍜🍜🍜🍜", "🍜🍣🍱🍙🍜🍣🍱🍙🍜🍣",
	}
	for _, w := range staffauth.CommonWords() {
		rule = append(rule, w, w+"12", strings.ToUpper(w)+"!!", "x"+w+"99", w+"-tanaka-extra")
	}
	r := runPageSecrets(t, nil, rule)
	for i, pw := range rule {
		goOK, pageOK := staffauth.CheckStrength(pw) == nil, r.Problems[i] == ""
		if goOK != pageOK {
			t.Errorf("%q: init says ok=%v (%v), the page says %q", pw, goOK, staffauth.CheckStrength(pw), r.Problems[i])
		}
	}
	js := slices.Sorted(slices.Values(r.CommonWords))
	if !slices.Equal(js, staffauth.CommonWords()) {
		t.Errorf("the page's common words differ from staffauth's:\npage %v\ninit %v", js, staffauth.CommonWords())
	}
	for _, lang := range []string{"ja", "en"} {
		english := lang == "en"
		if got, want := r.Strings[lang]["weak"], httpapi.Message("WEAK_PASSWORD", english); got != want {
			t.Errorf("%s setup.shop.weak %q, a box says %q", lang, got, want)
		}
		if got, want := r.Strings[lang]["same"], httpapi.Message("SAME_PASSWORDS", english); got != want {
			t.Errorf("%s setup.shop.same %q, a box says %q", lang, got, want)
		}
	}
}
