package orders_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// importItem is the i-th of a spreadsheet's menu: a ramen with a required
// choice, toppings and allergens.
func importItem(i int) map[string]any {
	return map[string]any{"menuId": fmt.Sprintf("dish-%d", i), "name": fmt.Sprintf("らーめん %d", i), "category": "noodles", "price": 800 + 10*i,
		"toppings":  []map[string]any{{"toppingId": "egg", "name": "味玉", "price": 120}, {"toppingId": "nori", "name": "のり", "price": 100}},
		"allergens": []string{"wheat", "egg", "soy"},
		"optionGroups": []map[string]any{{"groupId": "firmness", "name": "麺のかたさ", "min": 1, "max": 1, "options": []map[string]any{
			{"optionId": "soft", "name": "やわらかめ", "price": 0}, {"optionId": "firm", "name": "かため", "price": 0}}}}}
}

type importedItem struct {
	MenuID, Name string
	Price        int
	Allergens    []string
	Toppings     []struct{ ToppingID string }
	OptionGroups []struct {
		GroupID string
		Options []struct{ OptionID string }
	}
}

func (s *store) menuItems(i int) map[string]importedItem {
	s.t.Helper()
	var out struct{ Items []importedItem }
	s.mustStaff(i, "GET", "/api/staff/menu", nil).json(s.t, &out)
	m := map[string]importedItem{}
	for _, it := range out.Items {
		m[it.MenuID] = it
	}
	return m
}

// A 40-item menu with choices, toppings and allergens goes in with one
// request, committed as one command, on every box; a list with a bad item
// anywhere writes nothing and names that item.
func TestMenuImportAllOrNothing(t *testing.T) {
	s := startStore(t, 3, nil)
	var items []map[string]any
	for i := 1; i <= 40; i++ {
		items = append(items, importItem(i))
	}
	r := s.mustStaff(0, "POST", "/api/staff/menu", map[string]any{"items": items})
	var answer struct{ Items []importedItem }
	r.json(t, &answer)
	if len(answer.Items) != 40 || answer.Items[39].MenuID != "dish-40" || answer.Items[39].Price != 1200 {
		t.Fatalf("import answered %d items: %s", len(answer.Items), r.Body[:min(len(r.Body), 300)])
	}
	s.c.WaitConverged(10 * time.Second)
	for node := 0; node < 3; node++ {
		got := s.menuItems(node)
		d := got["dish-17"]
		if len(got) != 40 || d.Name != "らーめん 17" || fmt.Sprint(d.Allergens) != "[wheat egg soy]" || len(d.Toppings) != 2 ||
			len(d.OptionGroups) != 1 || len(d.OptionGroups[0].Options) != 2 {
			t.Fatalf("node %d holds %d items; dish-17 %+v", node, len(got), d)
		}
	}

	// A bad item anywhere: nothing written, the item named.
	changed := make([]map[string]any, 40)
	for i := range changed {
		changed[i] = importItem(i + 1)
		changed[i]["price"] = 1
	}
	for _, tc := range []struct {
		name  string
		bad   func([]map[string]any)
		field string
	}{
		{"a negative price", func(l []map[string]any) { l[12]["price"] = -5 }, "items[12]"},
		{"an unknown allergen", func(l []map[string]any) { l[30]["allergens"] = []string{"gluten"} }, "items[30].allergens"},
		{"a choice group without a choice", func(l []map[string]any) {
			l[39]["optionGroups"] = []map[string]any{{"groupId": "size", "name": "量", "min": 1, "max": 1, "options": []map[string]any{}}}
		}, "items[39].optionGroups[0].options"},
		{"an id twice", func(l []map[string]any) { l[5]["menuId"] = "dish-1" }, "items[5].menuId"},
		{"a bad id", func(l []map[string]any) { l[0]["menuId"] = "らーめん" }, "items[0].menuId"},
	} {
		list := make([]map[string]any, 40)
		for i := range list {
			list[i] = map[string]any{}
			for k, v := range changed[i] {
				list[i][k] = v
			}
		}
		tc.bad(list)
		r := s.staff(0, "POST", "/api/staff/menu", map[string]any{"items": list})
		var e struct{ ReasonCode, Field string }
		json.Unmarshal(r.Body, &e)
		if r.Status != 400 || e.ReasonCode != "INVALID_MENU_ITEM" || e.Field != tc.field {
			t.Errorf("%s: %d %s, want 400 INVALID_MENU_ITEM field %q", tc.name, r.Status, r.Body, tc.field)
		}
		for id, it := range s.menuItems(0) {
			if it.Price == 1 {
				t.Fatalf("%s: %s was written by a refused import", tc.name, id)
			}
		}
	}
	for _, body := range []any{map[string]any{"items": []any{}}, map[string]any{}, map[string]any{"items": make([]map[string]any, 501)}} {
		if r := s.staff(0, "POST", "/api/staff/menu", body); r.Status != 400 {
			t.Errorf("import of %.40s: %d, want 400", fmt.Sprint(body), r.Status)
		}
	}
	// A kitchen login may not.
	if r := s.do(0, "POST", "/api/staff/menu", map[string]string{"Authorization": "Bearer nonsense"}, map[string]any{"items": items}); r.Status != 401 {
		t.Errorf("import without a login: %d", r.Status)
	}
	_ = strings.TrimSpace
}
