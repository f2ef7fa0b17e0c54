package orders

import (
	"fmt"
	"sync"

	"masterorder/orders/store"
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

// catalogAt reads the catalog version and the menu it names.
func (c *catalog) at(q store.DB) (map[string]store.MenuItem, error) {
	v, err := store.CatalogVersion(q)
	if err != nil {
		return nil, err
	}
	return c.lookup(v, q)
}
