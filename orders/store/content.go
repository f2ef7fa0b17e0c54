package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Menu content: the words and pictures a guest chooses by (extra
// languages, descriptions, allergens, a picture). It lives beside the
// menu_items row in its own table, so the item's own columns and queries
// stay as they are; pictures are content-addressed rows of their own,
// shared by the items that show them.

// Names holds a name per BCP 47 tag ("zh-Hans", "ko", …) besides the
// Japanese `name` and English `nameEn` (items, categories, option groups
// and options).
type Names map[string]string

// MenuContent is what an item carries besides its order data.
type MenuContent struct {
	Names         Names    `json:"names"`
	Description   string   `json:"description"`
	DescriptionEn string   `json:"descriptionEn"`
	Allergens     []string `json:"allergens"`
	// ImageURL is content-addressed (ImagePath): a new picture is a new
	// URL, so phones may cache one for a year.
	ImageURL *string `json:"imageUrl"`
}

// Image is a stored picture (already checked and re-encoded).
type Image struct {
	Hash        string
	ContentType string
	Data        []byte
}

// ImagePath is the URL a picture is served under.
func ImagePath(hash string) string { return "/api/images/" + hash }

// emptyContent is an item's content before anything was said about it.
func emptyContent() MenuContent { return MenuContent{Names: Names{}, Allergens: []string{}} }

// contentRow decodes one menu_content row.
func contentRow(names, allergens string, desc, descEn string, image sql.NullString) (MenuContent, error) {
	c := emptyContent()
	c.Description, c.DescriptionEn = desc, descEn
	if err := json.Unmarshal([]byte(names), &c.Names); err != nil {
		return c, fmt.Errorf("decode names: %w", err)
	}
	if err := json.Unmarshal([]byte(allergens), &c.Allergens); err != nil {
		return c, fmt.Errorf("decode allergens: %w", err)
	}
	if c.Names == nil {
		c.Names = Names{}
	}
	if c.Allergens == nil {
		c.Allergens = []string{}
	}
	if image.Valid {
		u := ImagePath(image.String)
		c.ImageURL = &u
	}
	return c, nil
}

// withContent fills in the content of every listed item (one query).
func withContent(q DB, items []MenuItem, err error) ([]MenuItem, error) {
	if err != nil {
		return nil, err
	}
	idx := make(map[string]int, len(items))
	for i := range items {
		items[i].MenuContent = emptyContent()
		idx[items[i].MenuID] = i
	}
	rows, err := q.Query(`SELECT menu_id, names, description, description_en, allergens, image FROM menu_content`)
	if err != nil {
		return nil, fmt.Errorf("list menu content: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, names, desc, descEn, allergens string
		var image sql.NullString
		if err := rows.Scan(&id, &names, &desc, &descEn, &allergens, &image); err != nil {
			return nil, fmt.Errorf("list menu content: %w", err)
		}
		if i, ok := idx[id]; ok {
			if items[i].MenuContent, err = contentRow(names, allergens, desc, descEn, image); err != nil {
				return nil, fmt.Errorf("content of %s: %w", id, err)
			}
		}
	}
	return items, rows.Err()
}

// itemContent reads one item's content.
func itemContent(q DB, menuID string) (MenuContent, error) {
	var names, desc, descEn, allergens string
	var image sql.NullString
	err := q.QueryRow(`SELECT names, description, description_en, allergens, image FROM menu_content WHERE menu_id = ?`, menuID).
		Scan(&names, &desc, &descEn, &allergens, &image)
	if errors.Is(err, sql.ErrNoRows) {
		return emptyContent(), nil
	}
	if err != nil {
		return emptyContent(), fmt.Errorf("content of %s: %w", menuID, err)
	}
	return contentRow(names, allergens, desc, descEn, image)
}

// ContentPatch changes an item's words: a nil field keeps what is stored
// (a client that does not know the field, such as a kitchen sold-out
// toggle, leaves it alone).
type ContentPatch struct {
	Names         *Names    `json:"names,omitempty"`
	Description   *string   `json:"description,omitempty"`
	DescriptionEn *string   `json:"descriptionEn,omitempty"`
	Allergens     *[]string `json:"allergens,omitempty"`
}

// Empty reports a patch that changes nothing.
func (p ContentPatch) Empty() bool {
	return p.Names == nil && p.Description == nil && p.DescriptionEn == nil && p.Allergens == nil
}

// Apply returns c with the patch's fields in place.
func (p ContentPatch) Apply(c MenuContent) MenuContent {
	if p.Names != nil {
		c.Names = *p.Names
	}
	if p.Description != nil {
		c.Description = *p.Description
	}
	if p.DescriptionEn != nil {
		c.DescriptionEn = *p.DescriptionEn
	}
	if p.Allergens != nil {
		c.Allergens = *p.Allergens
	}
	return c
}

// PatchMenuContent applies p to the item's stored words (the picture is
// untouched). Names encode with sorted keys, so every node writes the
// same bytes.
func PatchMenuContent(tx DB, menuID string, p ContentPatch) error {
	if p.Empty() {
		return nil
	}
	cur, err := itemContent(tx, menuID)
	if err != nil {
		return err
	}
	c := p.Apply(cur)
	names, err := json.Marshal(c.Names)
	if err != nil {
		return err
	}
	allergens, err := json.Marshal(c.Allergens)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO menu_content(menu_id, names, description, description_en, allergens) VALUES (?,?,?,?,?)
		ON CONFLICT(menu_id) DO UPDATE SET names=excluded.names, description=excluded.description,
		description_en=excluded.description_en, allergens=excluded.allergens`,
		menuID, string(names), c.Description, c.DescriptionEn, string(allergens))
	if err != nil {
		return fmt.Errorf("write content of %s: %w", menuID, err)
	}
	return nil
}

// SetMenuImage stores img (once per hash) and makes it the item's picture;
// an empty hash removes the item's picture. A picture no item shows any
// more is deleted, so replaced pictures do not pile up in every snapshot.
func SetMenuImage(tx DB, menuID string, img *Image) error {
	var hash any
	if img != nil {
		if _, err := tx.Exec(`INSERT INTO images(hash, content_type, data) VALUES (?,?,?) ON CONFLICT(hash) DO NOTHING`,
			img.Hash, img.ContentType, img.Data); err != nil {
			return fmt.Errorf("store image: %w", err)
		}
		hash = img.Hash
	}
	if _, err := tx.Exec(`INSERT INTO menu_content(menu_id, image) VALUES (?,?) ON CONFLICT(menu_id) DO UPDATE SET image=excluded.image`,
		menuID, hash); err != nil {
		return fmt.Errorf("set image of %s: %w", menuID, err)
	}
	if _, err := tx.Exec(`DELETE FROM images WHERE hash NOT IN (SELECT image FROM menu_content WHERE image IS NOT NULL)`); err != nil {
		return fmt.Errorf("drop unused images: %w", err)
	}
	return nil
}

// GetImage reads a stored picture.
func GetImage(q DB, hash string) (Image, bool, error) {
	img := Image{Hash: hash}
	err := q.QueryRow(`SELECT content_type, data FROM images WHERE hash = ?`, hash).Scan(&img.ContentType, &img.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return img, false, nil
	}
	if err != nil {
		return img, false, fmt.Errorf("get image %s: %w", hash, err)
	}
	return img, true, nil
}

// CategoryNames maps each category that has names to them.
func CategoryNames(q DB) (map[string]Names, error) {
	rows, err := q.Query(`SELECT category, names FROM category_names ORDER BY category`)
	if err != nil {
		return nil, fmt.Errorf("list category names: %w", err)
	}
	defer rows.Close()
	out := map[string]Names{}
	for rows.Next() {
		var cat, raw string
		if err := rows.Scan(&cat, &raw); err != nil {
			return nil, fmt.Errorf("list category names: %w", err)
		}
		n := Names{}
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			return nil, fmt.Errorf("names of category %s: %w", cat, err)
		}
		out[cat] = n
	}
	return out, rows.Err()
}

// SetCategoryNames replaces a category's names (none: the row goes).
func SetCategoryNames(tx DB, category string, names Names) error {
	if len(names) == 0 {
		_, err := tx.Exec(`DELETE FROM category_names WHERE category = ?`, category)
		return err
	}
	raw, err := json.Marshal(names)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO category_names(category, names) VALUES (?,?) ON CONFLICT(category) DO UPDATE SET names=excluded.names`,
		category, string(raw))
	return err
}

// contentMigration creates the content tables. It is written to run at
// whatever place the migration list gives it (IF NOT EXISTS, no
// reference to a neighbouring migration).
const contentMigration = `CREATE TABLE IF NOT EXISTS menu_content (
		menu_id        TEXT PRIMARY KEY,
		names          TEXT NOT NULL DEFAULT '{}',
		description    TEXT NOT NULL DEFAULT '',
		description_en TEXT NOT NULL DEFAULT '',
		allergens      TEXT NOT NULL DEFAULT '[]',
		image          TEXT
	);
	CREATE TABLE IF NOT EXISTS images (
		hash         TEXT PRIMARY KEY,
		content_type TEXT NOT NULL,
		data         BLOB NOT NULL
	);
	CREATE TABLE IF NOT EXISTS category_names (
		category TEXT PRIMARY KEY,
		names    TEXT NOT NULL
	);`
