package setup

import (
	"context"
	"encoding/json"
	"errors"

	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/node"
	"masterorder/setup/cluster"
)

// The wizard's calls, served by the box the owner's phone opened (plain
// HTTP like the page; the box-to-box claim channel is TLS):
//
//	GET  /setup/api/boxes     the boxes found in setup mode (BoxView)
//	POST /setup/api/identify  {"id"}: blink that box's LED
//	POST /setup/api/create    CreateRequest → 202; form the cluster
//	GET  /setup/api/progress  Progress
//
// The page is plain HTTP on the shared store Wi-Fi, so it never sends a
// password: it checks init's strength rule itself, hashes each password
// with bcrypt (ui/static/setup/bcrypt.js) and sends the hashes, which the
// boxes' configs hold as init writes them. A body with a password in it
// is refused (PLAIN_PASSWORD).

// Steps of a box in Progress, in order.
const (
	StepFound   = "found"
	StepClaimed = "claimed"
	StepStarted = "started"
	StepJoined  = "joined" // in the cluster
	StepReady   = "ready"
)

// BoxView is one box as the wizard lists it.
type BoxView struct {
	ID           string `json:"id"`
	ShortCode    string `json:"shortCode"`
	Hostname     string `json:"hostname"`
	Model        string `json:"model,omitempty"`
	Serial       string `json:"serial,omitempty"`
	Self         bool   `json:"self"`
	WindowOpen   bool   `json:"windowOpen"`
	CodeRequired bool   `json:"codeRequired"`
	Via          string `json:"via"`
}

// CreateRequest is the wizard's form.
type CreateRequest struct {
	Boxes    []string `json:"boxes"` // box ids the owner ticked
	ShopName string   `json:"shopName"`
	// bcrypt hashes of the passwords ($2a$ or $2b$, cost 10 to 12), made
	// by the page after it checked init's strength rule.
	ManagerPasswordHash string `json:"managerPasswordHash"`
	KitchenPasswordHash string `json:"kitchenPasswordHash"`
	TaxRatePercent      int    `json:"taxRatePercent"`
	GuestName           string `json:"guestName"` // default masterorder.local
	SetupCode           string `json:"setupCode,omitempty"`
}

// createBody is what POST /setup/api/create reads: the form, and the
// password fields of a page (or script) that would send them in clear,
// named in order to be refused by name.
type createBody struct {
	CreateRequest
	ManagerPassword *string `json:"managerPassword"`
	KitchenPassword *string `json:"kitchenPassword"`
}

// BoxProgress is one box's step.
type BoxProgress struct {
	ID        string `json:"id"`
	ShortCode string `json:"shortCode"`
	Hostname  string `json:"hostname"`
	NodeID    string `json:"nodeId,omitempty"`
	Step      string `json:"step"`
	Error     string `json:"error,omitempty"` // a reason code
	Detail    string `json:"detail,omitempty"`
	Message   string `json:"message,omitempty"` // Error for the owner, in the page's language
}

// Done is what the done page shows.
type Done struct {
	ShopName   string    `json:"shopName"`
	StaffURL   string    `json:"staffUrl"`
	KitchenURL string    `json:"kitchenUrl"`
	GuestURL   string    `json:"guestUrl"`
	CAURL      string    `json:"caUrl"`
	Boxes      []DoneBox `json:"boxes"`
}

// DoneBox is one box on the done page and the setup sheet.
type DoneBox struct {
	NodeID   string `json:"nodeId"`
	Hostname string `json:"hostname"`
	StaffURL string `json:"staffUrl"`
}

// Progress is the wizard's state: idle, working, done or failed.
type Progress struct {
	State string        `json:"state"`
	Boxes []BoxProgress `json:"boxes,omitempty"`
	Error string        `json:"error,omitempty"`
	// Message is Error for the owner, in the language the page asked for.
	Message string `json:"message,omitempty"`
	Done    *Done  `json:"done,omitempty"`
}

// Wizard forms a cluster from boxes found in setup mode.
type Wizard struct {
	box *Box

	mu       sync.Mutex
	found    map[string]entry // the last listing, by box id
	progress Progress
}

type entry struct {
	Found
	Info Info
	Self bool
}

func newWizard(b *Box) *Wizard {
	return &Wizard{box: b, found: map[string]entry{}, progress: Progress{State: "idle"}}
}

func (w *Wizard) routes(e *echo.Echo) {
	e.GET("/setup/api/boxes", w.handleBoxes)
	e.POST("/setup/api/identify", w.handleIdentify)
	e.POST("/setup/api/create", w.handleCreate)
	e.GET("/setup/api/progress", func(c echo.Context) error { return c.JSON(http.StatusOK, w.Progress().Worded(httpapi.English(c))) })
}

// Progress is a copy of the current progress.
func (w *Wizard) Progress() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.progress
	p.Boxes = append([]BoxProgress(nil), p.Boxes...)
	return p
}

// Worded fills each reason code's message for the owner (httpapi's
// table), in English or Japanese.
func (p Progress) Worded(english bool) Progress {
	p.Message = words(p.Error, english)
	p.Boxes = append([]BoxProgress(nil), p.Boxes...)
	for i := range p.Boxes {
		p.Boxes[i].Message = words(p.Boxes[i].Error, english)
	}
	return p
}

// words is a reason code's message for people ("" for no code).
func words(code string, english bool) string {
	if code == "" {
		return ""
	}
	return httpapi.Message(code, english)
}

// Discover lists the boxes in setup mode this box can see: itself, what
// mDNS finds, and the probe addresses. selfHost is an address of this
// box the others reach (the one the owner's phone used), used when
// neither mDNS nor the probe list names this box.
func (w *Wizard) Discover(ctx context.Context, selfHost string) []BoxView {
	b := w.box
	seen := map[string]entry{}
	// A box answering its own mDNS query, or in its own probe list, is
	// itself: it is asked directly.
	for _, c := range Find(ctx, FindOptions{MDNS: b.opts.MDNS, Probe: b.opts.Probe, States: []Mode{ModeSetup, ModeClaimed}}) {
		if c.ID == b.id.ID {
			seen[c.ID] = entry{Found: c.Found, Info: b.Info(), Self: true}
		} else {
			seen[c.ID] = entry{Found: c.Found, Info: c.Info}
		}
	}
	if _, ok := seen[b.id.ID]; !ok {
		host := selfHost
		if h, _, err := net.SplitHostPort(b.Addr()); err == nil && h != "" && !net.ParseIP(h).IsUnspecified() {
			host = h
		}
		info := b.Info()
		seen[b.id.ID] = entry{Found: Found{ID: b.id.ID, State: info.State, Version: info.Version, Fingerprint: b.id.Fingerprint,
			Addr: net.JoinHostPort(host, strconv.Itoa(info.Ports.HTTP)), Via: "self"}, Info: info, Self: true}
	}
	var views []BoxView
	w.mu.Lock()
	for id, e := range seen {
		if e.Info.State != ModeSetup && !e.Self {
			continue
		}
		w.found[id] = e
		views = append(views, BoxView{ID: id, ShortCode: ShortCode(id), Hostname: e.Info.Device.Hostname, Model: e.Info.Device.Model,
			Serial: e.Info.Device.Serial, Self: e.Self, WindowOpen: e.Info.WindowOpen, CodeRequired: e.Info.CodeRequired, Via: e.Via})
	}
	w.mu.Unlock()
	sort.Slice(views, func(i, j int) bool {
		if views[i].Self != views[j].Self {
			return views[i].Self
		}
		if views[i].Hostname != views[j].Hostname {
			return views[i].Hostname < views[j].Hostname
		}
		return views[i].ID < views[j].ID
	})
	return views
}

// localHost is the address of this box the request came in on.
func localHost(c echo.Context) string {
	if a, ok := c.Request().Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if h, _, err := net.SplitHostPort(a.String()); err == nil {
			return h
		}
	}
	return "127.0.0.1"
}

func (w *Wizard) handleBoxes(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 8*time.Second)
	defer cancel()
	views := w.Discover(ctx, localHost(c))
	return c.JSON(http.StatusOK, map[string]any{"boxes": views, "self": w.box.id.ID})
}

func (w *Wizard) handleIdentify(c echo.Context) error {
	var req struct {
		ID string `json:"id"`
	}
	if err := httpapi.DecodeBody(c, &req); err != nil {
		return httpapi.Fail(c, http.StatusBadRequest, "INVALID_SETUP")
	}
	w.mu.Lock()
	e, ok := w.found[req.ID]
	w.mu.Unlock()
	if !ok {
		return httpapi.Fail(c, http.StatusNotFound, "BOX_NOT_FOUND")
	}
	if e.Self {
		ok := Identify(context.Background(), w.box.opts.Layout.SysRoot, 15*time.Second)
		return c.JSON(http.StatusOK, map[string]bool{"blinking": ok})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	blinking, err := NewClient(e.Addr, e.Fingerprint).Identify(ctx)
	if err != nil {
		return httpapi.Fail(c, http.StatusNotFound, "BOX_NOT_FOUND")
	}
	return c.JSON(http.StatusOK, map[string]bool{"blinking": blinking})
}

var guestNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?)*$`)

// DefaultGuestName is the mDNS name guests' QR codes use.
const DefaultGuestName = "masterorder.local"

// validate checks the form as init checks its flags; a refusal names
// the field.
func (req *CreateRequest) validate() *httpapi.Refusal {
	bad := func(code, field string) *httpapi.Refusal {
		return &httpapi.Refusal{Status: http.StatusBadRequest, Code: code, Field: field}
	}
	req.ShopName = strings.TrimSpace(req.ShopName)
	req.GuestName = strings.ToLower(strings.TrimSpace(req.GuestName))
	if req.GuestName == "" {
		req.GuestName = DefaultGuestName
	}
	switch {
	case len(req.Boxes) == 0 || len(req.Boxes) > 7:
		return bad("INVALID_SETUP", "boxes")
	case req.ShopName == "" || len(req.ShopName) > 100:
		return bad("INVALID_SETUP", "shopName")
	case req.TaxRatePercent < 0 || req.TaxRatePercent > 100:
		return bad("INVALID_SETUP", "taxRatePercent")
	case !guestNamePattern.MatchString(req.GuestName) || len(req.GuestName) > 253:
		return bad("INVALID_SETUP", "guestName")
	}
	if cluster.CheckPasswordHash(req.ManagerPasswordHash) != nil {
		return bad("BAD_PASSWORD_HASH", "managerPasswordHash")
	}
	if cluster.CheckPasswordHash(req.KitchenPasswordHash) != nil {
		return bad("BAD_PASSWORD_HASH", "kitchenPasswordHash")
	}
	// The page checks that the passwords differ; one hash sent for both
	// is the one sign of the same password left to the server.
	if req.KitchenPasswordHash == req.ManagerPasswordHash {
		return bad("SAME_PASSWORDS", "kitchenPasswordHash")
	}
	seen := map[string]bool{}
	for _, id := range req.Boxes {
		if seen[id] {
			return bad("INVALID_SETUP", "boxes")
		}
		seen[id] = true
	}
	return nil
}

func (w *Wizard) handleCreate(c echo.Context) error {
	var body createBody
	if err := httpapi.DecodeBody(c, &body); err != nil {
		return httpapi.BadBody(c, err, "INVALID_SETUP")
	}
	switch {
	case body.ManagerPassword != nil:
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusBadRequest, Code: "PLAIN_PASSWORD", Field: "managerPassword"})
	case body.KitchenPassword != nil:
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusBadRequest, Code: "PLAIN_PASSWORD", Field: "kitchenPassword"})
	}
	req := body.CreateRequest
	if r := req.validate(); r != nil {
		return httpapi.Write(c, *r)
	}
	w.mu.Lock()
	missing := false
	for _, id := range req.Boxes {
		_, ok := w.found[id]
		missing = missing || !ok
	}
	w.mu.Unlock()
	if missing { // ticked on a list this box has not made (another tab, a restart): look again
		ctx, cancel := context.WithTimeout(c.Request().Context(), 8*time.Second)
		w.Discover(ctx, localHost(c))
		cancel()
	}
	w.mu.Lock()
	if w.progress.State == "working" || w.progress.State == "done" {
		w.mu.Unlock()
		return httpapi.Fail(c, http.StatusConflict, "SETUP_BUSY")
	}
	var picked []entry
	for _, id := range req.Boxes {
		e, ok := w.found[id]
		if !ok {
			w.mu.Unlock()
			return httpapi.Write(c, httpapi.Refusal{Status: http.StatusNotFound, Code: "BOX_NOT_FOUND", Field: "boxes"})
		}
		picked = append(picked, e)
	}
	// The wizard's own box is a, the others follow as listed.
	sort.SliceStable(picked, func(i, j int) bool { return picked[i].Self && !picked[j].Self })
	w.progress = Progress{State: "working"}
	for i, e := range picked {
		w.progress.Boxes = append(w.progress.Boxes, BoxProgress{ID: e.ID, ShortCode: ShortCode(e.ID), Hostname: e.Info.Device.Hostname,
			NodeID: string(rune('a' + i)), Step: StepFound})
	}
	w.mu.Unlock()
	go w.form(req, picked)
	return c.JSON(http.StatusAccepted, w.Progress().Worded(httpapi.English(c)))
}

func (w *Wizard) setStep(i int, step, errCode, detail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if step != "" {
		w.progress.Boxes[i].Step = step
	}
	w.progress.Boxes[i].Error, w.progress.Boxes[i].Detail = errCode, detail
}

func (w *Wizard) fail(code string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.progress.State, w.progress.Error = "failed", code
}

// reasonOf is the reason code of a box's refusal, or UNREACHABLE.
func reasonOf(err error) (string, string) {
	if r, ok := err.(*RefusedError); ok {
		return r.Code, r.Message
	}
	if err == ErrFingerprint {
		return "FINGERPRINT_MISMATCH", err.Error()
	}
	return "UNREACHABLE", err.Error()
}

// ShopID makes a shop id from the shop's name: its ASCII letters and
// digits, else "shop".
func ShopID(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case (r == ' ' || r == '-' || r == '_') && b.Len() > 0:
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "shop"
	}
	return s
}

// form claims the picked boxes, makes the cluster with package cluster
// (as init does), pushes every box its bundle (this box last: it stops
// its setup server to become a member) and follows them until ready.
func (w *Wizard) form(req CreateRequest, picked []entry) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clients := make([]*Client, len(picked))
	tokens := make([]string, len(picked))
	release := func() {
		for i, t := range tokens {
			if t != "" {
				rctx, c := context.WithTimeout(context.Background(), 5*time.Second)
				clients[i].Release(rctx, t)
				c()
			}
		}
	}
	for i, e := range picked {
		clients[i] = NewClient(e.Addr, e.Fingerprint)
		tok, err := clients[i].Claim(ctx, w.box.id.ID, req.SetupCode)
		if err != nil {
			code, detail := reasonOf(err)
			w.setStep(i, "", code, detail)
			release()
			w.fail(code)
			return
		}
		tokens[i] = tok
		w.setStep(i, StepClaimed, "", "")
	}
	cl, err := w.makeCluster(req)
	if err != nil {
		release()
		w.fail("INTERNAL")
		return
	}
	boxes := make([]cluster.Box, len(picked))
	for i, e := range picked {
		host, _, _ := net.SplitHostPort(e.Addr)
		boxes[i] = cluster.Box{ID: string(rune('a' + i)), Host: host, HTTPPort: strconv.Itoa(e.Info.Ports.HTTP),
			RaftPort: strconv.Itoa(e.Info.Ports.Raft), HTTPSPort: strconv.Itoa(e.Info.Ports.HTTPS)}
	}
	peers := cl.Peers(boxes)
	order := make([]int, 0, len(picked))
	for i, e := range picked {
		if !e.Self {
			order = append(order, i)
		}
	}
	for i, e := range picked {
		if e.Self {
			order = append(order, i)
		}
	}
	// A box that fails its push (it lost power or its cable midway) does
	// not stop the others while a majority of the store can still run:
	// the store starts without it, and the console's "Replace" puts
	// another box in its place. Without a majority nothing more is
	// configured (with this box last, a three-box store then has none).
	majority := len(picked)/2 + 1
	configured := make([]bool, len(picked))
	ok, lastCode := 0, ""
	for _, i := range order {
		if picked[i].Self && ok+1 < majority {
			release()
			w.fail(lastCode)
			return
		}
		bundle, err := cl.Bundle(boxes[i], peers, false, true)
		if err == nil {
			err = configure(ctx, clients[i], tokens[i], bundle)
		}
		if err != nil {
			code, detail := reasonOf(err)
			w.setStep(i, "", code, detail)
			if picked[i].Self {
				release()
				w.fail(code)
				return
			}
			lastCode = code
			continue
		}
		tokens[i] = "" // configured: nothing to release
		configured[i] = true
		ok++
	}
	release() // the boxes that failed go back to setup mode if they still answer
	w.follow(ctx, req, peers, configured)
}

func (w *Wizard) makeCluster(req CreateRequest) (*cluster.Cluster, error) {
	cl, err := cluster.New(ShopID(req.ShopName))
	if err != nil {
		return nil, err
	}
	cl.StaffPasswordHash, cl.KitchenPasswordHash = req.ManagerPasswordHash, req.KitchenPasswordHash
	cl.ShopName = req.ShopName
	tax := req.TaxRatePercent
	cl.TaxRatePercent = &tax
	cl.PublicURL = guestURL(req.GuestName, w.box.ports.HTTP)
	cl.MDNSName = req.GuestName // the members answer it (node/lanname)
	return cl, nil
}

// guestURL is public_url for the guest name on the members' HTTP port.
func guestURL(name string, port int) string {
	if port == 80 {
		return "http://" + name
	}
	return "http://" + net.JoinHostPort(name, strconv.Itoa(port))
}

// follow watches each box come up: answering (started), in the cluster
// with every other box (joined), ready to take orders (ready).
// Boxes that were not configured keep the error of their push.
func (w *Wizard) follow(ctx context.Context, req CreateRequest, peers []node.Peer, configured []bool) {
	hc := &http.Client{Timeout: 3 * time.Second}
	get := func(url string) (int, []byte) {
		r, err := hc.Get(url)
		if err != nil {
			return 0, nil
		}
		defer r.Body.Close()
		var buf [1 << 16]byte
		n, _ := r.Body.Read(buf[:])
		return r.StatusCode, buf[:n]
	}
	for {
		allReady := true
		for i, p := range peers {
			if !configured[i] {
				continue
			}
			base := "http://" + p.HTTPAddr
			step := ""
			if code, _ := get(base + "/healthz"); code == http.StatusOK {
				step = StepStarted
				if code, body := get(base + "/api/cluster/status"); code == http.StatusOK && listsAll(body, peers) {
					step = StepJoined
					if code, _ := get(base + "/readyz"); code == http.StatusOK {
						step = StepReady
					}
				}
			}
			if step != "" {
				w.setStep(i, step, "", "")
			}
			if step != StepReady {
				allReady = false
			}
		}
		if allReady {
			break
		}
		select {
		case <-ctx.Done():
			w.fail("TIMEOUT")
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	d := &Done{ShopName: req.ShopName, GuestURL: guestURL(req.GuestName, w.box.ports.HTTP) + "/"}
	first := peers[0]
	d.StaffURL = "https://" + first.HTTPSAddr + "/staff/"
	d.KitchenURL = "https://" + first.HTTPSAddr + "/kitchen/"
	d.CAURL = "http://" + first.HTTPAddr + "/ca"
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range peers {
		if configured[i] {
			d.Boxes = append(d.Boxes, DoneBox{NodeID: p.ID, Hostname: w.progress.Boxes[i].Hostname, StaffURL: "https://" + p.HTTPSAddr + "/staff/"})
		}
	}
	w.progress.State, w.progress.Done = "done", d
}

// listsAll reports whether a status body (guest view) lists every peer.
func listsAll(body []byte, peers []node.Peer) bool {
	var s struct {
		Nodes []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	}
	if json.Unmarshal(body, &s) != nil {
		return false
	}
	have := map[string]bool{}
	for _, n := range s.Nodes {
		have[n.ID] = true
	}
	for _, p := range peers {
		if !have[p.ID] {
			return false
		}
	}
	return true
}

// configure pushes a bundle, trying again through a short network blip
// (some boxes of the cluster may already be configured, waiting for this
// one). A push whose answer was lost finds the box a member: done.
func configure(ctx context.Context, c *Client, token string, b cluster.Bundle) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		err = c.Configure(ctx, token, b)
		switch {
		case err == nil:
			return nil
		case attempt > 0 && IsRefused(err, "NOT_IN_SETUP"):
			return nil
		case errors.As(err, new(*RefusedError)):
			return err // the box said no: trying again will not change it
		case attempt > 0 && answersAsMember(ctx, c.Addr):
			return nil // the first push went through; its answer was lost
		}
	}
	return err
}

// answersAsMember reports whether the box at addr now serves as a member
// (its store answers /healthz where setup mode had none).
func answersAsMember(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}
