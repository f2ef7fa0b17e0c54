package orders

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/language"

	"masterorder/node"
	"masterorder/orders/admission"
	"masterorder/orders/menuimage"
	"masterorder/orders/store"
)

// contentInput is the part of PUT /api/staff/menu/{menuId} that carries an
// item's words (API.md "Menu: options, notes, stations, languages"). An
// absent field keeps what is stored.
type contentInput struct {
	Names         map[string]string `json:"names"`
	Description   *string           `json:"description"`
	DescriptionEn *string           `json:"descriptionEn"`
	Allergens     *[]string         `json:"allergens"`
}

// patch checks the input and returns it as a command patch (nil when it
// changes nothing), or the name of the first bad field.
func (in contentInput) patch() (*store.ContentPatch, string, bool) {
	var p store.ContentPatch
	if in.Names != nil {
		names, field, ok := canonicalNames(in.Names, "names")
		if !ok {
			return nil, field, false
		}
		p.Names = &names
	}
	if in.Description != nil {
		if !validDescription(*in.Description) {
			return nil, "description", false
		}
		p.Description = in.Description
	}
	if in.DescriptionEn != nil {
		if !validDescription(*in.DescriptionEn) {
			return nil, "descriptionEn", false
		}
		p.DescriptionEn = in.DescriptionEn
	}
	if in.Allergens != nil {
		list := *in.Allergens
		for i, a := range list {
			if !knownAllergen(a) || contains(list[:i], a) {
				return nil, "allergens", false
			}
		}
		sorted := sortAllergens(list)
		p.Allergens = &sorted
	}
	if p.Empty() {
		return nil, "", true
	}
	return &p, "", true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sortAllergens puts a list in the order of the fixed list, so the same
// set is stored (and shown) the same way whatever order it was sent in.
func sortAllergens(list []string) []string {
	out := make([]string, 0, len(list))
	for _, a := range Allergens {
		if contains(list, a) {
			out = append(out, a)
		}
	}
	return out
}

// canonicalNames checks every tag with golang.org/x/text/language and keys
// the names by its canonical form ("zh-hans" → "zh-Hans"); a tag that does
// not parse, or two tags naming one language, are refused with the field
// "names.TAG".
func canonicalNames(in map[string]string, field string) (store.Names, string, bool) {
	if len(in) > maxNames {
		return nil, field, false
	}
	tags := make([]string, 0, len(in))
	for t := range in {
		tags = append(tags, t)
	}
	sort.Strings(tags) // the first bad field named is the same every time
	out := store.Names{}
	for _, t := range tags {
		tag, err := language.Parse(t)
		canon := tag.String()
		if err != nil || canon == "und" || !tagShaped(canon) {
			return nil, field + "." + t, false
		}
		if _, dup := out[canon]; dup || !validText(in[t], maxNameLen, true) {
			return nil, field + "." + t, false
		}
		out[canon] = in[t]
	}
	return out, "", true
}

// ---- pictures ----

// putMenuImage: PUT /api/staff/menu/{menuId}/image, the picture as the
// body with its Content-Type. The body limit of every other route does not
// apply (node.AllowLargeBody); this handler reads at most one byte more
// than a picture may weigh.
func (s *Service) putMenuImage(c echo.Context) error {
	menuID := c.Param("menuId")
	if !admission.ValidID(menuID) {
		return s.fail(c, http.StatusBadRequest, "INVALID_ID", 0, nil)
	}
	data, err := io.ReadAll(io.LimitReader(c.Request().Body, menuimage.MaxUploadBytes+1))
	if err != nil {
		return s.failField(c, http.StatusBadRequest, "INVALID_IMAGE", "image")
	}
	ct := strings.ToLower(strings.TrimSpace(strings.Split(c.Request().Header.Get("Content-Type"), ";")[0]))
	pic, err := menuimage.Process(data, ct)
	if err != nil {
		field := "image"
		if errors.Is(err, menuimage.ErrType) {
			field = "contentType"
		}
		return s.failField(c, http.StatusBadRequest, "INVALID_IMAGE", field)
	}
	r, err := s.propose(c.Request().Context(), CmdSetMenuImage, setMenuImageCmd{MenuID: menuID, Hash: pic.Hash, ContentType: pic.ContentType, Data: pic.Data}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

// deleteMenuImage: DELETE /api/staff/menu/{menuId}/image.
func (s *Service) deleteMenuImage(c echo.Context) error {
	menuID := c.Param("menuId")
	if !admission.ValidID(menuID) {
		return s.fail(c, http.StatusBadRequest, "INVALID_ID", 0, nil)
	}
	r, err := s.propose(c.Request().Context(), CmdSetMenuImage, setMenuImageCmd{MenuID: menuID}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

// getImage: GET /api/images/{sha256}. Public (an <img> sends no PIN; a
// menu picture is no secret) and immutable: the URL is the content's hash.
// A box that has not applied the upload yet catches up once before it
// answers 404 (a guest's menu may come from a box ahead of this one).
func (s *Service) getImage(c echo.Context) error {
	hash := c.Param("hash")
	if !isLowerHex(hash, 64) {
		return s.fail(c, http.StatusNotFound, "NOT_FOUND", 0, nil)
	}
	if tag := c.Request().Header.Get("If-None-Match"); tag == `"`+hash+`"` {
		return c.NoContent(http.StatusNotModified)
	}
	var img store.Image
	var found bool
	read := func() error {
		return s.query(func(db store.DB) (err error) { img, found, err = store.GetImage(db, hash); return })
	}
	if err := read(); err != nil {
		return s.failErr(c, err)
	}
	if !found {
		if err := s.consistent(c.Request().Context()); err == nil {
			if err := read(); err != nil {
				return s.failErr(c, err)
			}
		}
	}
	if !found {
		return s.fail(c, http.StatusNotFound, "NOT_FOUND", 0, nil)
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", `"`+hash+`"`)
	h.Set("Content-Disposition", "inline")
	return c.Stream(http.StatusOK, img.ContentType, bytes.NewReader(img.Data))
}

// ---- category names ----

// putCategoryNames: PUT /api/staff/categories/{category} {"names":{…}}
// (an empty object removes them).
func (s *Service) putCategoryNames(c echo.Context) error {
	cat, err := url.PathUnescape(c.Param("category"))
	if err != nil || !validText(cat, 64, true) {
		return s.failField(c, http.StatusBadRequest, "INVALID_REQUEST", "category")
	}
	var in struct {
		Names map[string]string `json:"names"`
	}
	if err := decodeStrict(c, &in); err != nil || in.Names == nil {
		return s.badBody(c, err, "INVALID_REQUEST")
	}
	names, field, good := canonicalNames(in.Names, "names")
	if !good {
		return s.failField(c, http.StatusBadRequest, "INVALID_REQUEST", field)
	}
	r, err := s.propose(c.Request().Context(), CmdSetCategoryNames, setCategoryNamesCmd{Category: cat, Names: names}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

// menuAnswer writes a menu answer: the items and, under "categories",
// each named category's names.
func (s *Service) menuAnswer(c echo.Context, items []store.MenuItem) error {
	if items == nil {
		items = []store.MenuItem{}
	}
	var cats map[string]store.Names
	if err := s.query(func(db store.DB) (err error) { cats, err = store.CategoryNames(db); return }); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items, "categories": cats})
}

// contentRoutes adds the picture and category routes.
func (s *Service) contentRoutes(e *echo.Echo, staff *echo.Group) {
	staff.PUT("/menu/:menuId/image", s.putMenuImage)
	staff.DELETE("/menu/:menuId/image", s.deleteMenuImage)
	staff.PUT("/categories/:category", s.putCategoryNames)
	node.AllowLargeBody(http.MethodPut, "/api/staff/menu/:menuId/image")
	e.GET("/api/images/:hash", s.getImage)
}
