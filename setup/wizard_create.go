package setup

import (
	"net/http"
	"regexp"
	"strings"

	"masterorder/httpapi"
	"masterorder/setup/cluster"
)

// CreateRequest is the wizard's form.
type CreateRequest struct {
	Boxes    []string `json:"boxes"` // box ids the owner ticked
	ShopName string   `json:"shopName"`
	// bcrypt hashes of the passwords ($2a$ or $2b$, cost 10 to 12), made
	// by the page after it checked init's strength rule.
	ManagerPasswordHash string `json:"managerPasswordHash"`
	KitchenPasswordHash string `json:"kitchenPasswordHash"`
	TaxRatePercent      int    `json:"taxRatePercent"`
	GuestName           string `json:"guestName"` // default masterorder.local
	SetupCode           string `json:"setupCode,omitempty"`
}

// createBody is what POST /setup/api/create reads: the form, and the
// password fields of a page (or script) that would send them in clear,
// named in order to be refused by name.
type createBody struct {
	CreateRequest
	ManagerPassword *string `json:"managerPassword"`
	KitchenPassword *string `json:"kitchenPassword"`
}

var guestNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?)*$`)

// DefaultGuestName is the mDNS name guests' QR codes use.
const DefaultGuestName = "masterorder.local"

// validate checks the form as init checks its flags; a refusal names
// the field.
func (req *CreateRequest) validate() *httpapi.Refusal {
	bad := func(code, field string) *httpapi.Refusal {
		return &httpapi.Refusal{Status: http.StatusBadRequest, Code: code, Field: field}
	}
	req.ShopName = strings.TrimSpace(req.ShopName)
	req.GuestName = strings.ToLower(strings.TrimSpace(req.GuestName))
	if req.GuestName == "" {
		req.GuestName = DefaultGuestName
	}
	switch {
	case len(req.Boxes) == 0 || len(req.Boxes) > 7:
		return bad("INVALID_SETUP", "boxes")
	case req.ShopName == "" || len(req.ShopName) > 100:
		return bad("INVALID_SETUP", "shopName")
	case req.TaxRatePercent < 0 || req.TaxRatePercent > 100:
		return bad("INVALID_SETUP", "taxRatePercent")
	case !guestNamePattern.MatchString(req.GuestName) || len(req.GuestName) > 253:
		return bad("INVALID_SETUP", "guestName")
	}
	if cluster.CheckPasswordHash(req.ManagerPasswordHash) != nil {
		return bad("BAD_PASSWORD_HASH", "managerPasswordHash")
	}
	if cluster.CheckPasswordHash(req.KitchenPasswordHash) != nil {
		return bad("BAD_PASSWORD_HASH", "kitchenPasswordHash")
	}
	// The page checks that the passwords differ; one hash sent for both
	// is the one sign of the same password left to the server.
	if req.KitchenPasswordHash == req.ManagerPasswordHash {
		return bad("SAME_PASSWORDS", "kitchenPasswordHash")
	}
	seen := map[string]bool{}
	for _, id := range req.Boxes {
		if seen[id] {
			return bad("INVALID_SETUP", "boxes")
		}
		seen[id] = true
	}
	return nil
}

// ShopID makes a shop id from the shop's name: its ASCII letters and
// digits, else "shop".
func ShopID(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case (r == ' ' || r == '-' || r == '_') && b.Len() > 0:
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "shop"
	}
	return s
}
