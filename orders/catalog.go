package orders

import (
	"fmt"
	"sync"

	"masterorder/kv"
	"masterorder/orders/store"
)

// keyCatalogVersion changes with every menu write (it holds that command's
// Raft index), so a node can keep the menu in memory and know exactly when
// to reload it: the same version means the same menu on every node.
const keyCatalogVersion = "catalog:version"

// catalog caches the menu (items and the toppings they allow) by version.
// Pricing an order was the largest cost of Apply (a query per line and
// topping list); stock is never cached.
type catalog struct {
	mu      sync.Mutex
	version string
	loaded  bool
	items   map[string]store.MenuItem
}

// lookup returns the menu at version, loading it with q when it changed.
func (c *catalog) lookup(version string, q store.DB) (map[string]store.MenuItem, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded && c.version == version {
		return c.items, nil
	}
	list, err := store.ListMenu(q)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	items := make(map[string]store.MenuItem, len(list))
	for _, m := range list {
		items[m.MenuID] = m
	}
	c.items, c.version, c.loaded = items, version, true
	return items, nil
}

func catalogVersion(t *kv.Tx) string {
	if e, ok := t.Get(keyCatalogVersion); ok {
		return string(e.Value)
	}
	return ""
}
