// Package staffauth holds the pieces of staff login: password hashing,
// self-verifying session tokens that every node accepts, login rate
// limiting, CSRF protection for cookie-authenticated writes, and an echo
// middleware that ties them together.
package staffauth

import (
	"errors"
	"sort"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/bcrypt"
)

// MaxPasswordLen is bcrypt's limit; longer passwords are refused rather
// than silently truncated.
const MaxPasswordLen = 72

// HashPassword returns a bcrypt hash of pw (for `[staff] password_hash`).
func HashPassword(pw string) (string, error) {
	if pw == "" {
		return "", errors.New("staffauth: empty password")
	}
	if len(pw) > MaxPasswordLen {
		return "", errors.New("staffauth: password longer than 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}

// CheckPassword reports whether pw matches hash. A malformed hash, an
// empty password or one longer than MaxPasswordLen never matches.
func CheckPassword(hash, pw string) bool {
	if pw == "" || len(pw) > MaxPasswordLen || hash == "" {
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}

// BcryptGate caps the bcrypt comparisons running at once on a node: each
// takes ~50-100 ms of a core, and a script firing logins at three boxes
// would otherwise turn them into a CPU weapon against the order path.
type BcryptGate struct{ slots chan struct{} }

// NewBcryptGate allows n comparisons at once (at least 1).
func NewBcryptGate(n int) *BcryptGate {
	return &BcryptGate{slots: make(chan struct{}, max(n, 1))}
}

// Check compares like CheckPassword when a slot frees up within wait;
// busy reports that none did (the caller answers "try again").
func (g *BcryptGate) Check(hash, pw string, wait time.Duration) (match, busy bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
	case <-t.C:
		return false, true
	}
	defer func() { <-g.slots }()
	return CheckPassword(hash, pw), false
}

// MinPasswordLen is the shortest staff or kitchen password init accepts.
const MinPasswordLen = 10

// commonWords are passwords (and the words inside them) an attacker on the
// Wi-Fi tries first; a password that is one of them, perhaps with digits
// or punctuation around it, is refused.
var commonWords = map[string]bool{
	"password": true, "passwort": true, "letmein": true, "welcome": true, "qwerty": true, "qwertyuiop": true,
	"admin": true, "administrator": true, "manager": true, "kitchen": true, "staff": true, "master": true,
	"masterorder": true, "order": true, "ramen": true, "sushi": true, "restaurant": true, "shop": true,
	"store": true, "tenchou": true, "changeme": true, "secret": true, "iloveyou": true, "sunshine": true,
	"dragon": true, "monkey": true, "football": true, "baseball": true, "princess": true, "default": true,
	"abcdefgh": true, "abcdefghij": true, "demo": true, "test": true, "guest": true, "wifi": true,
	"passw0rd": true, "trustno": true, "superman": true, "asdfghjkl": true, "zxcvbnm": true,
}

// CommonWords lists the words CheckStrength refuses, sorted: the setup
// page keeps a copy (it checks passwords before hashing them) and its test
// holds the copy to this list.
func CommonWords() []string {
	words := make([]string, 0, len(commonWords))
	for w := range commonWords {
		words = append(words, w)
	}
	sort.Strings(words)
	return words
}

// leet undoes the usual letter-for-symbol swaps ("p@ssw0rd").
var leet = map[rune]rune{'@': 'a', '4': 'a', '0': 'o', '1': 'i', '!': 'i', '3': 'e', '$': 's', '5': 's', '7': 't'}

// CheckStrength refuses passwords a guest could guess: shorter than
// MinPasswordLen, one repeated character, a run of consecutive digits or
// letters, or a common word once digits and punctuation are stripped.
func CheckStrength(pw string) error {
	if len([]rune(pw)) < MinPasswordLen {
		return errors.New("staffauth: password shorter than 10 characters")
	}
	if len(pw) > MaxPasswordLen {
		return errors.New("staffauth: password longer than 72 bytes")
	}
	distinct := map[rune]bool{}
	for _, r := range pw {
		distinct[r] = true
	}
	if len(distinct) < 4 {
		return errors.New("staffauth: password repeats too few characters")
	}
	run := true
	for i := 1; i < len(pw); i++ {
		if d := int(pw[i]) - int(pw[i-1]); d != 1 && d != -1 {
			run = false
			break
		}
	}
	if run {
		return errors.New("staffauth: password is a run of consecutive characters")
	}
	digits := 0
	for _, r := range pw {
		if unicode.IsDigit(r) {
			digits++
		}
	}
	if digits == len(pw) && len(pw) < 16 {
		return errors.New("staffauth: a password of digits only needs 16 of them")
	}
	for _, v := range []string{lettersOf(pw, false), lettersOf(pw, true)} {
		for w := range commonWords {
			// The word itself, or the word with a few letters stuck on.
			if v == w || len(w) >= 4 && len(v)-len(w) <= 3 && (strings.HasPrefix(v, w) || strings.HasSuffix(v, w)) {
				return errors.New("staffauth: password is a common word")
			}
		}
	}
	return nil
}

// lettersOf is pw lower-cased with everything but letters dropped, after
// undoing leet swaps when asked.
func lettersOf(pw string, undoLeet bool) string {
	var b strings.Builder
	for _, r := range strings.ToLower(pw) {
		if l, ok := leet[r]; ok && undoLeet {
			r = l
		}
		if unicode.IsLetter(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}
