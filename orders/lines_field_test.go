package orders

import (
	"testing"

	"masterorder/orders/admission"
	"masterorder/orders/store"
)

// When a menu gains option groups a moment before an order, the node that
// took the order may judge it with the old menu and let Apply refuse it.
// Apply numbers the normalized cart's lines; the guest must be told the
// line they sent (API.md: the field names the line). guestLineField is
// that renumbering: Apply's field, renumbered, is the field the handler
// would have named with the new menu.
func TestGuestLineFieldNamesTheLineAsSent(t *testing.T) {
	menu := map[string]store.MenuItem{
		"ramen": {MenuID: "ramen", OptionGroups: []store.OptionGroup{{GroupID: "firmness", Min: 1, Max: 1,
			Options: []store.Option{{OptionID: "firm"}, {OptionID: "soft"}}}}},
		"tea": {MenuID: "tea"},
	}
	firm := map[string][]string{"firmness": {"firm"}}
	for i, asSent := range [][]admission.Line{
		{{MenuID: "tea", Quantity: 1}, {MenuID: "ramen", Quantity: 1, Options: map[string][]string{"firmness": {}}}},
		{{MenuID: "tea", Quantity: 1}, {MenuID: "ramen", Quantity: 1, Options: firm}, {MenuID: "tea", Quantity: 2},
			{MenuID: "ramen", Quantity: 1, Options: firm, Note: "ネギ抜き"}, {MenuID: "ramen", Quantity: 2, Toppings: []string{"egg"}}},
		{{MenuID: "ramen", Quantity: 1, Options: firm, Toppings: []string{"nori", "egg"}}, {MenuID: "tea", Quantity: 1},
			{MenuID: "ramen", Quantity: 1, Options: map[string][]string{"firmness": {"hard"}}, Toppings: []string{"egg", "nori", "egg"}}},
	} {
		lines := admission.Normalize(asSent)
		applied := cartOptionsField(menu, lines)
		want := cartOptionsField(menu, asSent)
		if applied == "" || want == "" {
			t.Fatalf("cart %d: no bad field (%q, %q)", i, applied, want)
		}
		if got := guestLineField(applied, lines, asSent); got != want {
			t.Errorf("cart %d: Apply's %s renumbered to %s, want %s", i, applied, got, want)
		}
	}
	lines := []admission.Line{{MenuID: "tea", Quantity: 1}}
	for _, f := range []string{"", "expectedTotal", "items[7].options.firmness", "items[x].note", "items[0"} {
		if got := guestLineField(f, lines, lines); got != f {
			t.Errorf("%q renumbered to %q", f, got)
		}
	}
}
