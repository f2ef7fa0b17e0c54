package orders

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"

	"masterorder/orders/store"
)

// A pooled HMAC answers every session's credential as a fresh one would,
// with many requests at once: nothing of one session's credential stays
// in the next (run with -race).
func TestSessionCredentialPooledHMAC(t *testing.T) {
	s := &Service{guestKey: guestKey([]byte("a token secret of this store"))}
	fresh := func(id, pin string) string {
		m := hmac.New(sha256.New, s.guestKey)
		m.Write([]byte(id))
		m.Write([]byte{0})
		m.Write([]byte(pin))
		return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 300 {
				id, pin := fmt.Sprintf("S%d-%d", w, i), fmt.Sprintf("%04d", (w*300+i)%10000)
				if i%7 == 0 {
					id = "" // an empty message too
				}
				got, want := s.sessionCredential(id, pin), fresh(id, pin)
				if got != want {
					select {
					case errs <- fmt.Sprintf("credential(%q, %q) = %s, fresh HMAC %s", id, pin, got, want):
					default:
					}
					return
				}
				sess := store.Session{SessionID: id, PIN: pin}
				if !s.validCredential(sess, want) || s.validCredential(sess, fresh(id, pin+"0")) {
					select {
					case errs <- fmt.Sprintf("validCredential wrong for %q", id):
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
