// Package staffauth holds the pieces of staff login: password hashing,
// self-verifying session tokens that every node accepts, login rate
// limiting, CSRF protection for cookie-authenticated writes, and an echo
// middleware that ties them together.
package staffauth

import (
	"errors"

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
