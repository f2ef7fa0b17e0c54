package staffauth

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

func TestTicketExpiresAfterTTLAndWithItsToken(t *testing.T) {
	clk := newClock()
	iss := &Issuer{Secret: testSecret, TTL: time.Hour, Now: clk.Now}
	tok, id, _ := iss.IssueRole(RoleKitchen, 0)
	cl, err := iss.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	tk, exp := iss.IssueTicket(cl)
	if tk == "" || exp.Sub(clk.Now()) != TicketTTL {
		t.Fatalf("ticket %q expires %v, want now+%v", tk, exp, TicketTTL)
	}
	got, _, err := iss.VerifyTicket(tk)
	if err != nil || got.ID != id || got.Role != RoleKitchen {
		t.Fatalf("VerifyTicket = %+v, %v; want the token's id %s and role", got, err, id)
	}
	clk.Advance(TicketTTL)
	if _, _, err := iss.VerifyTicket(tk); !errors.Is(err, ErrExpired) {
		t.Fatalf("after %v: %v, want ErrExpired", TicketTTL, err)
	}
	// A token about to expire gets a ticket that expires with it.
	clk.Advance(time.Hour - TicketTTL - 10*time.Second)
	tk, exp = iss.IssueTicket(cl)
	if !exp.Equal(cl.ExpiresAt) {
		t.Fatalf("ticket of a token with 10 s left expires %v, want %v", exp, cl.ExpiresAt)
	}
	clk.Advance(10 * time.Second)
	if _, _, err := iss.VerifyTicket(tk); !errors.Is(err, ErrExpired) {
		t.Fatalf("ticket outlived its token: %v", err)
	}
}

// FSM time stands still while the store is off; a plausible wall clock
// still ends the ticket.
func TestTicketCappedByWallClock(t *testing.T) {
	fsm, wall := newClock(), newClock()
	iss := &Issuer{Secret: testSecret, Now: fsm.Now, Wall: wall.Now}
	tok, _, _ := iss.Issue()
	cl, _ := iss.Verify(tok)
	tk, _ := iss.IssueTicket(cl)
	wall.Advance(TicketTTL + WallSkew + time.Second)
	if _, _, err := iss.VerifyTicket(tk); !errors.Is(err, ErrExpired) {
		t.Fatalf("a night later by the wall clock: %v, want ErrExpired", err)
	}
}

// A ticket is not a token nor the other way round, and a forged or
// foreign one is refused.
func TestTicketIsNotAToken(t *testing.T) {
	clk := newClock()
	iss := &Issuer{Secret: testSecret, Now: clk.Now}
	tok, _, _ := iss.Issue()
	cl, _ := iss.Verify(tok)
	tk, _ := iss.IssueTicket(cl)
	if _, err := iss.Verify(tk); err == nil {
		t.Fatal("a ticket verified as a token")
	}
	if _, _, err := iss.VerifyTicket(tok); err == nil {
		t.Fatal("a token verified as a ticket")
	}
	other := &Issuer{Secret: bytes.Repeat([]byte{0x42}, 32), Now: clk.Now}
	if _, _, err := other.VerifyTicket(tk); !errors.Is(err, ErrForged) {
		t.Fatalf("another store's ticket: %v, want ErrForged", err)
	}
	b := []byte(tk)
	b[3] ^= 1
	if _, _, err := iss.VerifyTicket(string(b)); err == nil {
		t.Fatal("a tampered ticket verified")
	}
}

// Through StreamMiddleware a ticket opens one stream on this node; the
// plain Middleware takes no ticket; a revoked token's tickets are refused.
func TestStreamMiddlewareTicketOnce(t *testing.T) {
	clk := newClock()
	iss := &Issuer{Secret: testSecret, Now: clk.Now}
	revoked := map[string]bool{}
	a, err := NewAuth(iss, func(id string) bool { return revoked[id] })
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	ok := func(c echo.Context) error { return c.String(200, "ok") }
	e.GET("/stream", ok, a.StreamMiddleware())
	e.GET("/other", ok, a.Middleware())
	get := func(path string) int {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code
	}
	tok, id, _ := iss.Issue()
	cl, _ := iss.Verify(tok)
	tk, _ := iss.IssueTicket(cl)
	if c := get("/other?ticket=" + tk); c != 401 {
		t.Fatalf("ticket on another route: %d", c)
	}
	if c := get("/stream?ticket=" + tk); c != 200 {
		t.Fatalf("first use: %d", c)
	}
	if c := get("/stream?ticket=" + tk); c != 401 {
		t.Fatalf("second use: %d, want 401", c)
	}
	tk2, _ := iss.IssueTicket(cl)
	revoked[id] = true
	if c := get("/stream?ticket=" + tk2); c != 401 {
		t.Fatalf("ticket of a logged-out token: %d, want 401", c)
	}
}
