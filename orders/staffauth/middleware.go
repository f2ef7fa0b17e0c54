package staffauth

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
)

// Cookie and header names.
const (
	CookieToken = "mo_staff"     // the token; HttpOnly
	CookieCSRF  = "mo_csrf"      // CSRF value, readable by the page's script
	HeaderCSRF  = "X-CSRF-Token" // where cookie-authenticated writes echo it
	QueryToken  = "token"        // accepted only where StreamMiddleware guards a GET (EventSource)
)

// Reason codes of the middleware's error answers.
const (
	ReasonUnauthorized  = "UNAUTHORIZED"
	ReasonCSRF          = "CSRF_TOKEN_INVALID"
	ReasonForbiddenRole = "FORBIDDEN_ROLE"
)

// Source says how a request presented its token.
type Source int

// Token sources, in the order the middleware looks for them.
const (
	SourceBearer Source = iota + 1 // Authorization: Bearer
	SourceCookie                   // mo_staff cookie: writes need X-CSRF-Token
	SourceQuery                    // ?token= on a GET of the kitchen stream
	SourceTicket                   // ?ticket= (IssueTicket) on a GET of the kitchen stream
)

var (
	errMissing    = errors.New("staffauth: no token")
	errTicketUsed = errors.New("staffauth: stream ticket already used")
)

const (
	ctxClaims = "masterorder.staffauth.claims"
	ctxSource = "masterorder.staffauth.source"
)

// Auth authenticates staff requests.
type Auth struct {
	issuer    *Issuer
	isRevoked func(id string) bool
	tickets   UsedTickets
}

// NewAuth returns the staff authenticator. isRevoked reports whether a
// token id has been logged out (the server keeps revoked ids in the
// replicated KV until the token would have expired); nil means none are.
func NewAuth(issuer *Issuer, isRevoked func(id string) bool) (*Auth, error) {
	if err := issuer.Validate(); err != nil {
		return nil, err
	}
	if isRevoked == nil {
		isRevoked = func(string) bool { return false }
	}
	return &Auth{issuer: issuer, isRevoked: isRevoked}, nil
}

// Issuer is the token issuer the Auth verifies with.
func (a *Auth) Issuer() *Issuer { return a.issuer }

// Authenticate finds and checks the request's token: form, signature,
// expiry and revocation. It does not check CSRF.
func (a *Auth) Authenticate(r *http.Request) (Claims, Source, error) {
	return a.authenticate(r, false)
}

func (a *Auth) authenticate(r *http.Request, query bool) (Claims, Source, error) {
	token, src, err := tokenFrom(r, query)
	if err != nil {
		return Claims{}, 0, err
	}
	var claims Claims
	if src == SourceTicket {
		var nonce string
		claims, nonce, err = a.issuer.VerifyTicket(token)
		if err == nil && !a.tickets.Use(nonce, claims.ExpiresAt, a.issuer.now()) {
			err = errTicketUsed
		}
	} else {
		claims, err = a.issuer.Verify(token)
	}
	if err != nil {
		return Claims{}, src, err
	}
	if a.isRevoked(claims.ID) {
		return Claims{}, src, ErrRevoked
	}
	return claims, src, nil
}

// Middleware lets a request through only with a valid, unrevoked staff
// token, answering 401 UNAUTHORIZED otherwise, and 403 CSRF_TOKEN_INVALID
// for a cookie-authenticated write (not GET, HEAD or OPTIONS) whose
// X-CSRF-Token header does not match. Handlers read the claims with
// ClaimsFrom.
func (a *Auth) Middleware() echo.MiddlewareFunc { return a.middleware(false) }

// StreamMiddleware is Middleware that also takes ?ticket= (a stream
// ticket, once per node) or ?token= on a GET: an EventSource cannot send
// headers. Only the kitchen stream uses it, so a token leaked into a URL
// (logs, history) opens nothing else; a ticket in a URL is spent and
// lapses within TicketTTL.
func (a *Auth) StreamMiddleware() echo.MiddlewareFunc { return a.middleware(true) }

// Forbid answers 403 FORBIDDEN_ROLE: the token is good, its role may not
// make this call.
func Forbid(c echo.Context) error {
	return deny(c, http.StatusForbidden, ReasonForbiddenRole, httpapi.Message(ReasonForbiddenRole, english(c.Request())))
}

// RoleFrom returns the role of the request's verified token (0 if none).
func RoleFrom(c echo.Context) Role {
	cl, _ := ClaimsFrom(c)
	return cl.Role
}

func (a *Auth) middleware(query bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			claims, src, err := a.authenticate(r, query)
			if err != nil {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="masterorder"`)
				return deny(c, http.StatusUnauthorized, ReasonUnauthorized, unauthorizedMessage(err, english(r)))
			}
			if src == SourceCookie && !safeMethod(r.Method) {
				got := r.Header.Get(HeaderCSRF)
				want := a.issuer.CSRFToken(claims.ID)
				if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
					return deny(c, http.StatusForbidden, ReasonCSRF, httpapi.Message(ReasonCSRF, english(r)))
				}
			}
			c.Set(ctxClaims, claims)
			c.Set(ctxSource, src)
			return next(c)
		}
	}
}

// ClaimsFrom returns the claims the middleware verified for this request
// (e.g. the id to revoke at logout).
func ClaimsFrom(c echo.Context) (Claims, bool) {
	cl, ok := c.Get(ctxClaims).(Claims)
	return cl, ok
}

// SourceFrom returns how this request presented its token.
func SourceFrom(c echo.Context) Source {
	s, _ := c.Get(ctxSource).(Source)
	return s
}

// SetLoginCookies sets mo_staff (HttpOnly) holding the token and mo_csrf
// (readable by script) holding its CSRF value, both SameSite=Strict,
// Path=/, living as long as the token (expiresAt as returned by Issue),
// Secure when the request came over TLS. It fails only if token is not a
// valid token of this Auth's issuer.
func (a *Auth) SetLoginCookies(c echo.Context, token string, expiresAt time.Time) error {
	claims, err := a.issuer.Verify(token)
	if err != nil {
		return err
	}
	// MaxAge rather than Expires: the browser's clock, this box's wall
	// clock and the issuer's clock (FSM time) need not agree, but the
	// remaining lifetime is the same on all of them.
	maxAge := int((expiresAt.Sub(a.issuer.now()) + time.Second - 1) / time.Second)
	if maxAge < 1 {
		maxAge = 1
	}
	secure := c.IsTLS()
	c.SetCookie(&http.Cookie{
		Name: CookieToken, Value: token, Path: "/",
		MaxAge: maxAge, HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode,
	})
	c.SetCookie(&http.Cookie{
		Name: CookieCSRF, Value: a.issuer.CSRFToken(claims.ID), Path: "/",
		MaxAge: maxAge, HttpOnly: false, Secure: secure, SameSite: http.SameSiteStrictMode,
	})
	return nil
}

// ClearCookies removes both login cookies (at logout).
func (a *Auth) ClearCookies(c echo.Context) {
	secure := c.IsTLS()
	for _, name := range []string{CookieToken, CookieCSRF} {
		c.SetCookie(&http.Cookie{
			Name: name, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
			HttpOnly: name == CookieToken, Secure: secure, SameSite: http.SameSiteStrictMode,
		})
	}
}

// tokenFrom looks for the token in the Authorization header, then the
// mo_staff cookie, then (a GET, where query allows it) the token query
// parameter. A present but unusable Authorization header is an error, not
// a fall-through.
func tokenFrom(r *http.Request, query bool) (string, Source, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		tok = strings.TrimSpace(tok)
		if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
			return "", SourceBearer, ErrMalformed
		}
		return tok, SourceBearer, nil
	}
	if ck, err := r.Cookie(CookieToken); err == nil && ck.Value != "" {
		return ck.Value, SourceCookie, nil
	}
	if query && r.Method == http.MethodGet {
		if tok := r.URL.Query().Get(QueryToken); tok != "" {
			return tok, SourceQuery, nil
		}
		if t := r.URL.Query().Get(QueryTicket); t != "" {
			return t, SourceTicket, nil
		}
	}
	return "", 0, errMissing
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func deny(c echo.Context, status int, reason, msg string) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return httpapi.Write(c, httpapi.Refusal{Status: status, Code: reason, Message: msg})
}

// english reports whether the first language in Accept-Language is
// English ("en", "en-US", ...); everything else gets Japanese.
func english(r *http.Request) bool {
	first, _, _ := strings.Cut(r.Header.Get("Accept-Language"), ",")
	first, _, _ = strings.Cut(first, ";")
	first = strings.ToLower(strings.TrimSpace(first))
	return first == "en" || strings.HasPrefix(first, "en-")
}

func unauthorizedMessage(err error, en bool) string {
	switch {
	case errors.Is(err, ErrExpired):
		if en {
			return "Your staff login has expired. Please log in again."
		}
		return "スタッフログインの有効期限が切れました。もう一度ログインしてください。"
	case errors.Is(err, ErrRevoked):
		if en {
			return "You have been logged out. Please log in again."
		}
		return "ログアウト済みです。もう一度ログインしてください。"
	case errors.Is(err, errMissing):
		if en {
			return "Staff login required."
		}
		return "スタッフのログインが必要です。"
	default:
		if en {
			return "The staff login is not valid. Please log in again."
		}
		return "ログイン情報が無効です。もう一度ログインしてください。"
	}
}
