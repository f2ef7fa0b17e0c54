package setup

import (
	"context"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/setup/cluster"
)

// The wizard's calls, served by the box the owner's phone opened (plain
// HTTP like the page; the box-to-box claim channel is TLS):
//
//	GET  /setup/api/boxes     the boxes found in setup mode (BoxView)
//	POST /setup/api/identify  {"id"}: blink that box's LED
//	POST /setup/api/create    CreateRequest → 202; form the cluster
//	GET  /setup/api/progress  Progress
//	POST /setup/api/restore   a backup file → RestoreUpload (restore.go)
//
// The page is plain HTTP on the shared store Wi-Fi, so it never sends a
// password: it checks init's strength rule itself, hashes each password
// with bcrypt (ui/static/setup/bcrypt.js) and sends the hashes, which the
// boxes' configs hold as init writes them. A body with a password in it
// is refused (PLAIN_PASSWORD).

// The wizard's other files: wizard_create.go (the form and its checks),
// wizard_forming.go (claim, make the cluster, push), wizard_following.go
// (until every box is ready); progress.go holds what the page follows.

// Wizard forms a cluster from boxes found in setup mode.
type Wizard struct {
	box *Box

	mu       sync.Mutex
	found    map[string]Candidate // the last listing, by box id
	progress Progress
	restore  *RestoreUpload // the backup sent for a restore (restore.go)
}

func newWizard(b *Box) *Wizard {
	return &Wizard{box: b, found: map[string]Candidate{}, progress: Progress{Job: Job{State: JobIdle}}}
}

func (w *Wizard) routes(e *echo.Echo) {
	e.GET("/setup/api/boxes", w.handleBoxes)
	e.POST("/setup/api/identify", w.handleIdentify)
	e.POST("/setup/api/create", w.handleCreate)
	e.POST("/setup/api/restore", w.handleRestoreUpload)
	e.GET("/setup/api/progress", func(c echo.Context) error { return c.JSON(http.StatusOK, w.Progress().Worded(httpapi.English(c))) })
}

// Progress is a copy of the current progress. A failure is forgotten
// once another box's wizard claimed or configured this box: the owner made
// the shop from there, and this box's failure no longer says anything.
func (w *Wizard) Progress() Progress {
	stale := w.box.takenByAnother()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.progress.State == JobFailed && stale {
		w.progress = Progress{Job: Job{State: JobIdle}}
	}
	p := w.progress
	p.Boxes = append([]BoxProgress(nil), p.Boxes...)
	return p
}

// Discover lists the boxes in setup mode this box can see: itself, what
// mDNS finds, and the probe addresses. selfHost is an address of this
// box the others reach (the one the owner's phone used), used when
// neither mDNS nor the probe list names this box.
func (w *Wizard) Discover(ctx context.Context, selfHost string) []BoxView {
	b := w.box
	seen := map[string]Candidate{}
	// A box answering its own mDNS query, or in its own probe list, is
	// itself: it is asked directly.
	for _, c := range Find(ctx, FindOptions{MDNS: b.opts.MDNS, Probe: b.opts.Probe, States: []Mode{ModeSetup, ModeClaimed}}) {
		if c.ID == b.id.ID {
			c.Info, c.Self = b.Info(), true
		}
		seen[c.ID] = c
	}
	if _, ok := seen[b.id.ID]; !ok {
		host := selfHost
		if h, _, err := net.SplitHostPort(b.Addr()); err == nil && h != "" && !net.ParseIP(h).IsUnspecified() {
			host = h
		}
		info := b.Info()
		seen[b.id.ID] = Candidate{Found: Found{ID: b.id.ID, State: info.State, Version: info.Version, Fingerprint: b.id.Fingerprint,
			Addr: net.JoinHostPort(host, strconv.Itoa(info.Ports.HTTP)), Via: "self"}, Info: info, Self: true}
	}
	var views []BoxView
	w.mu.Lock()
	for id, c := range seen {
		if c.Info.State != ModeSetup && !c.Self {
			continue
		}
		w.found[id] = c
		views = append(views, c.View())
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
	cl, err := w.makeCluster(req)
	if err != nil {
		return httpapi.Fail(c, http.StatusInternalServerError, "INTERNAL")
	}
	if r := checkSettings(cl); r != nil {
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
	if w.progress.State == JobWorking || w.progress.State == JobDone {
		w.mu.Unlock()
		return httpapi.Fail(c, http.StatusConflict, "SETUP_BUSY")
	}
	if req.Restore && w.restore == nil {
		w.mu.Unlock()
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusBadRequest, Code: "RESTORE_NEEDS_BACKUP", Field: "restore"})
	}
	var picked []Candidate
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
	w.progress = Progress{Job: Job{State: JobWorking}, Restore: req.Restore}
	ids := cluster.NodeIDs(len(picked))
	for i, e := range picked {
		w.progress.Boxes = append(w.progress.Boxes, BoxProgress{ID: e.ID, ShortCode: ShortCode(e.ID), Hostname: e.Info.Device.Hostname,
			NodeID: ids[i], Step: StepFound})
	}
	w.mu.Unlock()
	go w.form(req, cl, picked, ids)
	return c.JSON(http.StatusAccepted, w.Progress().Worded(httpapi.English(c)))
}

func (w *Wizard) setStep(i int, step string, r Reason) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if step != "" {
		w.progress.Boxes[i].Step = step
	}
	w.progress.Boxes[i].Reason = r
}

func (w *Wizard) fail(code string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.progress.State, w.progress.Error = JobFailed, code
}
