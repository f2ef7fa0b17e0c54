package setup

import (
	"errors"
	"net/http"
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
	// TimeZone is the store's time zone, an IANA name; the page offers
	// the owner's phone's. Empty: none written (the boxes' own, UTC).
	TimeZone  string `json:"timeZone,omitempty"`
	SetupCode string `json:"setupCode,omitempty"`
	// Restore makes the store from the backup sent before
	// (POST /setup/api/restore) instead of an empty one.
	Restore bool `json:"restore,omitempty"`
}

// createBody is what POST /setup/api/create reads: the form, and the
// password fields of a page (or script) that would send them in clear,
// named in order to be refused by name.
type createBody struct {
	CreateRequest
	ManagerPassword *string `json:"managerPassword"`
	KitchenPassword *string `json:"kitchenPassword"`
}

// DefaultGuestName is the mDNS name guests' QR codes use.
const DefaultGuestName = "masterorder.local"

// validate checks what of the form no box config holds (the boxes, the
// passwords' hashes); a refusal names the field. The settings the boxes
// keep (the guest name, the shop's name, the tax rate, the time zone) are
// checked by the boxes' own rule: checkSettings.
func (req *CreateRequest) validate() *httpapi.Refusal {
	bad := func(code, field string) *httpapi.Refusal {
		return &httpapi.Refusal{Status: http.StatusBadRequest, Code: code, Field: field}
	}
	req.ShopName = strings.TrimSpace(req.ShopName)
	req.GuestName = strings.ToLower(strings.TrimSpace(req.GuestName))
	req.TimeZone = strings.TrimSpace(req.TimeZone)
	if req.GuestName == "" {
		req.GuestName = DefaultGuestName
	}
	switch {
	case len(req.Boxes) == 0 || len(req.Boxes) > 7:
		return bad("INVALID_SETUP", "boxes")
	case req.ShopName == "":
		return bad("INVALID_SHOP_NAME", "shopName")
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

// settingFields names, for a setting the boxes' config check refuses,
// the form's field that made it and the reason code that words it.
var settingFields = map[string]struct{ field, code string }{
	"mdns_name":             {"guestName", "INVALID_GUEST_NAME"},
	"public_url":            {"guestName", "INVALID_GUEST_NAME"},
	"shop.name":             {"shopName", "INVALID_SHOP_NAME"},
	"shop_id":               {"shopName", "INVALID_SHOP_NAME"},
	"shop.tax_rate_percent": {"taxRatePercent", "INVALID_TAX_RATE"},
	"shop.time_zone":        {"timeZone", "INVALID_TIME_ZONE"},
}

// checkSettings runs the boxes' own config check over the cluster the
// form makes (cluster.Check), before any box is claimed: a setting every
// box would refuse is refused here, naming the form's field.
func checkSettings(cl *cluster.Cluster) *httpapi.Refusal {
	err := cl.Check()
	if err == nil {
		return nil
	}
	if ce := (*cluster.ConfigError)(nil); errors.As(err, &ce) {
		if f, ok := settingFields[ce.Setting]; ok {
			return &httpapi.Refusal{Status: http.StatusBadRequest, Code: f.code, Field: f.field}
		}
	}
	return &httpapi.Refusal{Status: http.StatusBadRequest, Code: "INVALID_SETUP", Detail: err.Error()}
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
