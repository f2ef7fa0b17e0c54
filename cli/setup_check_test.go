package cli

import (
	"net/http"
	"strings"
	"testing"

	"masterorder/setup"
)

// TestSetupRefusesABadGuestNameBeforeClaiming (issue 39 #1): a guest name
// every box would refuse in its config (mdns_name must end in .local) is
// refused by the wizard itself, naming the field, before any box is
// claimed; the same form with a good name then makes the shop.
func TestSetupRefusesABadGuestNameBeforeClaiming(t *testing.T) {
	boxes := startSetupBoxes(t, 2, nil)
	var ids []string
	for _, v := range listBoxes(t, boxes[0]) {
		ids = append(ids, v.ID)
	}
	if len(ids) != 2 {
		t.Fatalf("the wizard lists %d boxes, want 2", len(ids))
	}
	req := setup.CreateRequest{Boxes: ids, ShopName: "Ramen Tanaka", ManagerPasswordHash: hashFor(t, setupManagerPW),
		KitchenPasswordHash: hashFor(t, setupKitchenPW), TaxRatePercent: 10}
	for _, c := range []struct{ name, lang, words string }{
		{"127.0.0.1", "en", "Address name for guests"}, // what demo --setup used to suggest
		{"masterorder.lan", "ja", "お客様用のアドレス名"},        // the pattern took it; no box does
	} {
		req.GuestName = c.name
		var refusal struct{ ReasonCode, Field, Message string }
		st := jsonCall(t, http.DefaultClient, "POST", "http://"+boxes[0].addr+"/setup/api/create", map[string]string{"Accept-Language": c.lang}, req, &refusal)
		if st != 400 || refusal.ReasonCode != "INVALID_GUEST_NAME" || refusal.Field != "guestName" || !containsAll(refusal.Message, c.words, ".local") {
			t.Errorf("guest name %q: %d %+v, want 400 INVALID_GUEST_NAME on guestName, worded in %s", c.name, st, refusal, c.lang)
		}
		for i, b := range boxes {
			if m := b.layout.ModeOf(); m != setup.ModeSetup {
				t.Errorf("after the refused guest name %q box %d is %q, want it untouched in setup", c.name, i, m)
			}
		}
	}
	req.GuestName = "ramen-tanaka.local"
	if st := jsonCall(t, http.DefaultClient, "POST", "http://"+boxes[0].addr+"/setup/api/create", nil, req, nil); st != 202 {
		t.Fatalf("create with a good guest name: %d", st)
	}
}

// containsAll reports whether s holds every one of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
