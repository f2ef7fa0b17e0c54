package orders

import (
	"context"
	"encoding/json"

	"masterorder/orders/store"
)

func p64(v int64) *int64 { return &v }

// demoMenu is a small ramen shop.
func demoMenu() []store.MenuItem {
	egg := store.Topping{ToppingID: "egg", Name: "味玉", NameEn: "Seasoned egg", Price: 120}
	chashu := store.Topping{ToppingID: "chashu", Name: "チャーシュー", NameEn: "Chashu pork", Price: 250}
	nori := store.Topping{ToppingID: "nori", Name: "海苔", NameEn: "Nori", Price: 80}
	menma := store.Topping{ToppingID: "menma", Name: "メンマ", NameEn: "Bamboo shoots", Price: 100}
	garlic := store.Topping{ToppingID: "garlic", Name: "にんにく", NameEn: "Garlic", Price: 50}
	noodle := []store.Topping{egg, chashu, nori, menma}
	return []store.MenuItem{
		{MenuID: "shoyu", Name: "醤油ラーメン", NameEn: "Shoyu ramen", Category: "noodles", Price: 900, Available: true, SortOrder: 1, Toppings: noodle},
		{MenuID: "shio", Name: "塩ラーメン", NameEn: "Shio ramen", Category: "noodles", Price: 900, Available: true, SortOrder: 2, Toppings: noodle},
		{MenuID: "miso", Name: "味噌ラーメン", NameEn: "Miso ramen", Category: "noodles", Price: 980, Available: true, SortOrder: 3, Toppings: append(append([]store.Topping{}, noodle...), garlic)},
		{MenuID: "tonkotsu", Name: "豚骨ラーメン", NameEn: "Tonkotsu ramen", Category: "noodles", Price: 1000, Available: true, SortOrder: 4, Toppings: append(append([]store.Topping{}, noodle...), garlic)},
		{MenuID: "tsukemen", Name: "つけ麺", NameEn: "Tsukemen", Category: "noodles", Price: 1050, Available: true, SortOrder: 5, Toppings: []store.Topping{egg, chashu}},
		{MenuID: "gyoza", Name: "餃子（6個）", NameEn: "Gyoza (6)", Category: "sides", Price: 450, Available: true, SortOrder: 10, Toppings: []store.Topping{}},
		{MenuID: "karaage", Name: "唐揚げ", NameEn: "Karaage", Category: "sides", Price: 550, Available: true, SortOrder: 11, Toppings: []store.Topping{}},
		{MenuID: "chahan", Name: "チャーハン", NameEn: "Fried rice", Category: "rice", Price: 650, Available: true, SortOrder: 20, Toppings: []store.Topping{}},
		{MenuID: "chashudon", Name: "チャーシュー丼", NameEn: "Chashu rice bowl", Category: "rice", Price: 480, Available: true, SortOrder: 21, Toppings: []store.Topping{egg}},
		{MenuID: "beer", Name: "生ビール", NameEn: "Draft beer", Category: "drinks", Price: 600, Available: true, SortOrder: 30, Toppings: []store.Topping{}},
		{MenuID: "oolong", Name: "烏龍茶", NameEn: "Oolong tea", Category: "drinks", Price: 300, Available: true, SortOrder: 31, Toppings: []store.Topping{}},
		{MenuID: "kaedama", Name: "替え玉", NameEn: "Extra noodles", Category: "noodles", Price: 150, Available: true, SortOrder: 6, Toppings: []store.Topping{}},
	}
}

// SeedDemo loads the demo menu and stock (once) and opens a session for
// table T1; it returns the session id and PIN.
func (s *Service) SeedDemo(ctx context.Context) (sessionID, pin string, err error) {
	var empty bool
	if err := s.query(func(db store.DB) (err error) { empty, err = store.CatalogEmpty(db); return }); err != nil {
		return "", "", err
	}
	if empty {
		for _, m := range demoMenu() {
			if _, err := refused(s.propose(ctx, CmdUpsertMenu, upsertMenuCmd{Item: m}, false)); err != nil {
				return "", "", err
			}
		}
		for sku, q := range map[string]*int64{"tsukemen": p64(20), "karaage": p64(15), "chashu": p64(30), "egg": p64(40), "chashudon": p64(0)} {
			if _, err := refused(s.propose(ctx, CmdSetStock, setStockCmd{SKU: sku, Quantity: q}, false)); err != nil {
				return "", "", err
			}
		}
	}
	r, err := refused(s.propose(ctx, CmdOpenSession, openSessionCmd{SessionID: newSessionID(), TableID: "T1", PIN: newPIN()}, false))
	if err != nil {
		return "", "", err
	}
	var opened sessionOpened
	if err := json.Unmarshal(r.Body, &opened); err != nil {
		return "", "", err
	}
	return opened.SessionID, opened.PIN, nil
}
