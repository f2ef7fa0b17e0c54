package orders

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"masterorder/kv"
	"masterorder/orders/admission"
	"masterorder/orders/menuimage"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Menu content commands (M-content: 100–104). The words of an item ride
// on upsertMenu (version 2, its `content` patch); pictures and category
// names have commands of their own.
const (
	CmdSetMenuImage     raftfsm.CommandType = 100
	CmdSetCategoryNames raftfsm.CommandType = 101
)

func registerContent(tab commandTable) {
	register(tab, CmdSetMenuImage, "orders.setMenuImage", applySetMenuImage)
	register(tab, CmdSetCategoryNames, "orders.setCategoryNames", applySetCategoryNames)
}

// Allergens is the fixed list of API.md, in display order.
var Allergens = []string{"wheat", "buckwheat", "egg", "milk", "peanut", "shrimp", "crab", "walnut",
	"soy", "sesame", "fish", "shellfish", "pork", "beef", "chicken", "alcohol"}

const (
	maxNames          = 16
	maxTagLen         = 35
	maxDescriptionLen = 500
)

func knownAllergen(a string) bool {
	for _, k := range Allergens {
		if a == k {
			return true
		}
	}
	return false
}

// tagShaped: the shape of a BCP 47 tag, checked without a tag library (the
// HTTP handler canonicalizes with golang.org/x/text/language; Apply must
// not depend on that library's version).
func tagShaped(t string) bool {
	if len(t) < 2 || len(t) > maxTagLen {
		return false
	}
	for i, part := range strings.Split(t, "-") {
		if len(part) < 1 || len(part) > 8 || i == 0 && len(part) < 2 {
			return false
		}
		for j := 0; j < len(part); j++ {
			c := part[j]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}

func validNames(n store.Names) bool {
	if len(n) > maxNames {
		return false
	}
	for tag, name := range n { // every entry must pass: the order of the walk does not matter
		if !tagShaped(tag) || !validText(name, maxNameLen, true) {
			return false
		}
	}
	return true
}

// validDescription: text with line breaks, no other control characters.
func validDescription(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxDescriptionLen {
		return false
	}
	for _, r := range s {
		if r != '\n' && unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func validAllergens(list []string) bool {
	seen := map[string]bool{}
	for _, a := range list {
		if !knownAllergen(a) || seen[a] {
			return false
		}
		seen[a] = true
	}
	return true
}

func validContentPatch(p *store.ContentPatch) bool {
	return p == nil ||
		(p.Names == nil || validNames(*p.Names)) &&
			(p.Description == nil || validDescription(*p.Description)) &&
			(p.DescriptionEn == nil || validDescription(*p.DescriptionEn)) &&
			(p.Allergens == nil || validAllergens(*p.Allergens))
}

// ---- pictures ----

// setMenuImageCmd carries the re-encoded picture itself (the proposer ran
// menuimage.Process); nil data removes the item's picture.
type setMenuImageCmd struct {
	MenuID      string `json:"menuId"`
	Hash        string `json:"hash,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Data        []byte `json:"data,omitempty"`
}

func (c setMenuImageCmd) valid() bool {
	if !admission.ValidID(c.MenuID) {
		return false
	}
	if c.Data == nil {
		return c.Hash == "" && c.ContentType == ""
	}
	return len(c.Data) <= menuimage.MaxStoredBytes && (c.ContentType == "image/jpeg" || c.ContentType == "image/png") &&
		isLowerHex(c.Hash, 64) && menuimage.Hash(c.Data) == c.Hash
}

func applySetMenuImage(ctx *raftfsm.ApplyContext, _ *kv.Tx, c setMenuImageCmd) ([]byte, error) {
	if _, found, err := store.GetMenuItem(ctx.DB, c.MenuID); err != nil {
		return nil, err
	} else if !found {
		return reject(http.StatusNotFound, "MENU_ITEM_NOT_FOUND")
	}
	var img *store.Image
	if c.Data != nil {
		img = &store.Image{Hash: c.Hash, ContentType: c.ContentType, Data: c.Data}
	}
	if err := store.SetMenuImage(ctx.DB, c.MenuID, img); err != nil {
		return nil, err
	}
	item, _, err := store.GetMenuItem(ctx.DB, c.MenuID)
	if err != nil {
		return nil, err
	}
	ctx.Emit("menu.updated", nil)
	return ok(item)
}

// ---- category names ----

type setCategoryNamesCmd struct {
	Category string      `json:"category"`
	Names    store.Names `json:"names"`
}

func (c setCategoryNamesCmd) valid() bool {
	return validText(c.Category, 64, true) && validNames(c.Names)
}

func applySetCategoryNames(ctx *raftfsm.ApplyContext, _ *kv.Tx, c setCategoryNamesCmd) ([]byte, error) {
	if err := store.SetCategoryNames(ctx.DB, c.Category, c.Names); err != nil {
		return nil, err
	}
	ctx.Emit("menu.updated", nil)
	if c.Names == nil {
		c.Names = store.Names{}
	}
	return ok(map[string]any{"category": c.Category, "names": c.Names})
}
