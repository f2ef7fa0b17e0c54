package orders

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"masterorder/kv"
	"masterorder/orders/admission"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// keyCatalogVersion is still written by every menu write (it holds that
// command's Raft index) so the coordination KV stays the same as on a node
// of the previous build; nothing reads it any more: the locks API could
// delete it, and two menus would then share one cache key.
const keyCatalogVersion = "catalog:version"

// catalog caches the menu (items and the toppings they allow) by the
// catalog version in SQLite (store.CatalogVersion, written only by menu
// writes): the same version means the same menu on every node. Pricing an
// order was the largest cost of Apply (a query per line and topping list).
// Stock is never cached, nor anything derived from it (sold-out marks):
// stock writes do not change the version.
type catalog struct {
	mu      sync.Mutex
	version int64
	items   map[string]store.MenuItem
}

// lookup returns the menu at version, loading it with q when it changed.
// Version 0 (unknown) is never cached.
func (c *catalog) lookup(version int64, q store.DB) (map[string]store.MenuItem, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != 0 && c.version == version {
		return c.items, nil
	}
	list, err := store.ListMenu(q)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	items := make(map[string]store.MenuItem, len(list))
	for _, m := range list {
		m.SoldOut = false
		tops := make([]store.Topping, len(m.Toppings))
		for i, t := range m.Toppings {
			t.SoldOut = false
			tops[i] = t
		}
		m.Toppings = tops
		items[m.MenuID] = m
	}
	c.items, c.version = items, version
	return items, nil
}

// cached is the menu at version when it is the one loaded (no read).
func (c *catalog) cached(version int64) (map[string]store.MenuItem, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != 0 && c.version == version {
		return c.items, true
	}
	return nil, false
}

// catalogAt reads the catalog version and the menu it names.
func (c *catalog) at(q store.DB) (map[string]store.MenuItem, error) {
	v, err := store.CatalogVersion(q)
	if err != nil {
		return nil, err
	}
	return c.lookup(v, q)
}

// resolveLine finds a cart line's item and toppings in menu; found is
// false for an unknown item or a topping the item does not allow. The
// HTTP check (catalogKnows, before proposing) and pricing inside Apply (priceCart) share it,
// so they cannot disagree on what the menu knows.
func resolveLine(menu map[string]store.MenuItem, l admission.Line) (m store.MenuItem, tops []store.Topping, found bool) {
	m, found = menu[l.MenuID]
	if !found {
		return m, nil, false
	}
	for _, tid := range l.Toppings {
		i := slices.IndexFunc(m.Toppings, func(t store.Topping) bool { return t.ToppingID == tid })
		if i < 0 {
			return m, nil, false
		}
		tops = append(tops, m.Toppings[i])
	}
	return m, tops, true
}

// priceCart prices normalized lines from the menu at this index (with
// their stations, options and notes when extras, lines.go). known is
// false for an unknown item or topping; unavailable lists items staff
// marked unavailable (the total counts them at their price, for row 12).
func priceCart(menu map[string]store.MenuItem, lines []admission.Line, extras bool) (items []store.OrderItem, total int64, known bool, unavailable []string) {
	for _, l := range lines {
		m, tops, found := resolveLine(menu, l)
		if !found {
			return nil, 0, false, nil
		}
		if !m.Available {
			unavailable = append(unavailable, m.MenuID)
		}
		item := store.OrderItem{MenuID: m.MenuID, Name: m.Name, Quantity: l.Quantity, Toppings: []store.ToppingRef{}, UnitPrice: m.Price}
		for _, top := range tops {
			item.Toppings = append(item.Toppings, store.ToppingRef{ToppingID: top.ToppingID, Name: top.Name, Price: top.Price})
			item.UnitPrice += top.Price
		}
		if extras {
			addLineExtras(m, l, &item)
		}
		item.LineTotal = item.UnitPrice * int64(l.Quantity)
		total += item.LineTotal
		items = append(items, item)
	}
	return items, total, true, unavailable
}

type skuUnits struct {
	sku string
	n   int64
}

// unitsPerSKU sums what a cart takes per sku, in a stable order: a line of
// quantity 2 with topping egg takes 2 of the item and 2 of egg.
func unitsPerSKU(lines []admission.Line) []skuUnits {
	var out []skuUnits
	idx := map[string]int{}
	add := func(sku string, n int64) {
		if i, ok := idx[sku]; ok {
			out[i].n += n
			return
		}
		idx[sku] = len(out)
		out = append(out, skuUnits{sku, n})
	}
	for _, l := range lines {
		add(l.MenuID, int64(l.Quantity))
		for _, t := range l.Toppings {
			add(t, int64(l.Quantity))
		}
	}
	return out
}

// ---- commands ----

type upsertMenuCmd struct {
	Item store.MenuItem `json:"item"`
	// Content (version 2) changes the item's words; Item's own content
	// fields are ignored.
	Content *store.ContentPatch `json:"content,omitempty"`
}

func applyUpsertMenu(ctx *raftfsm.ApplyContext, tx *kv.Tx, c upsertMenuCmd) ([]byte, error) {
	if err := store.UpsertMenuItem(ctx.DB, c.Item); err != nil {
		return nil, err
	}
	if ctx.Version >= 2 && c.Content != nil {
		if err := store.PatchMenuContent(ctx.DB, c.Item.MenuID, *c.Content); err != nil {
			return nil, err
		}
	}
	// Every version writes it: a v1 write after a v2 one must change the
	// cache key too, or nodes would price with different menus.
	if err := menuChanged(ctx, tx); err != nil {
		return nil, err
	}
	item, _, err := store.GetMenuItem(ctx.DB, c.Item.MenuID)
	if err != nil {
		return nil, err
	}
	ctx.Emit("menu.updated", nil)
	return ok(item)
}

// menuChanged records that the menu changed at this index: the catalog
// version (the pricing cache's key) and its KV twin.
func menuChanged(ctx *raftfsm.ApplyContext, tx *kv.Tx) error {
	if err := store.SetCatalogVersion(ctx.DB, int64(ctx.Index)); err != nil {
		return err
	}
	return tx.Put(keyCatalogVersion, []byte(fmt.Sprint(ctx.Index)), 0)
}

type setStockCmd struct {
	SKU      string `json:"sku"`
	Quantity *int64 `json:"quantity"`
	// RequestID names the staff request; the FSM remembers it, so the
	// command applied twice (a forward retried after an unknown outcome)
	// changes stock once.
	RequestID string `json:"requestId,omitempty"`
}

func applySetStock(ctx *raftfsm.ApplyContext, tx *kv.Tx, c setStockCmd) ([]byte, error) {
	if out, done := recalled(tx, c.RequestID); done {
		return out, nil
	}
	exists, err := store.SKUExists(ctx.DB, c.SKU)
	if err != nil {
		return nil, err
	}
	if !exists {
		return reject(http.StatusNotFound, "SKU_NOT_FOUND")
	}
	if err := store.SetStock(ctx.DB, c.SKU, c.Quantity); err != nil {
		return nil, err
	}
	ctx.Emit("menu.updated", nil)
	out, err := ok(store.StockLevel{SKU: c.SKU, Quantity: c.Quantity})
	return remember(tx, c.RequestID, out, err)
}
