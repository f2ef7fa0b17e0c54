package join

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/node"
	"masterorder/node/pki"
	"masterorder/orders"
	"masterorder/setup"
)

// Growing and healing from the console: a member lists the boxes in setup
// mode on the LAN (setup.Find) and, on one manager tap, AddToCluster
// removes the dead box (when replacing), claims and configures the new
// one and adds it; the console then follows the new box until it holds
// every order.
//
//	GET  /api/staff/cluster/setup-boxes           {"boxes":[setup.BoxView]}
//	POST /api/staff/cluster/setup-boxes/{id}/join ConsoleRequest → 202 Progress
//	GET  /api/staff/cluster/join                  Progress (the current or last join)

// Steps of a console join, in order.
const (
	StepWorking = "working" // removing, claiming, configuring, adding
	StepAdded   = "added"   // a member now; catching up from a snapshot
	StepReady   = "ready"   // it holds every order and serves
)

// ConsoleRequest is the console's tap.
type ConsoleRequest struct {
	Replace   string `json:"replace,omitempty"` // the member it replaces; empty: add
	SetupCode string `json:"setupCode,omitempty"`
}

// Progress is one join as the console shows it: a setup.Job (idle,
// working, done, failed) about one box.
type Progress struct {
	setup.Job
	BoxID     string `json:"boxId,omitempty"`
	ShortCode string `json:"shortCode,omitempty"`
	Hostname  string `json:"hostname,omitempty"`
	NodeID    string `json:"nodeId,omitempty"`
	Replaces  string `json:"replaces,omitempty"`
	Step      string `json:"step,omitempty"`
}

// Worded words the join's reason for the manager.
func (p Progress) Worded(english bool) Progress {
	p.Reason = p.Reason.Worded(english)
	return p
}

// Console is a member's side of the console's add and replace.
type Console struct {
	n      *node.Node
	cfg    orders.FileConfig
	tlsDir string
	log    *slog.Logger

	mu       sync.Mutex
	found    map[string]setup.Candidate // the last listing: only these can be joined
	progress Progress
}

// NewConsole serves the console's add and replace on member n, whose
// config is cfg and whose TLS files (with the CA key the wizard gave
// every member) are in tlsDir.
func NewConsole(n *node.Node, cfg orders.FileConfig, tlsDir string, log *slog.Logger) *Console {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Console{n: n, cfg: cfg, tlsDir: tlsDir, log: log, found: map[string]setup.Candidate{},
		progress: Progress{Job: setup.Job{State: setup.JobIdle}}}
}

// Routes mounts the calls on the staff group (manager only: a kitchen
// token passes only its allow-list).
func (k *Console) Routes(staff *echo.Group) {
	staff.GET("/cluster/setup-boxes", k.handleList)
	staff.POST("/cluster/setup-boxes/:id/join", k.handleJoin)
	staff.GET("/cluster/join", func(c echo.Context) error { return c.JSON(http.StatusOK, k.Progress().Worded(httpapi.English(c))) })
}

// Progress is the current or last join.
func (k *Console) Progress() Progress {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.progress
}

func (k *Console) handleList(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 6*time.Second)
	defer cancel()
	list := setup.Find(ctx, setup.FindOptions{MDNS: true})
	views := make([]setup.BoxView, 0, len(list))
	k.mu.Lock()
	for _, e := range list {
		k.found[e.ID] = e
		views = append(views, e.View())
	}
	k.mu.Unlock()
	return c.JSON(http.StatusOK, map[string]any{"boxes": views})
}

func (k *Console) handleJoin(c echo.Context) error {
	var req ConsoleRequest
	if err := httpapi.DecodeBody(c, &req); err != nil {
		return httpapi.BadBody(c, err, "INVALID_SETUP")
	}
	k.mu.Lock()
	_, ok := k.found[c.Param("id")]
	k.mu.Unlock()
	if !ok {
		// Only a box this member listed, and so pinned, can be joined: a
		// rogue announcement is never joined untapped.
		return httpapi.Fail(c, http.StatusNotFound, "BOX_NOT_FOUND")
	}
	if _, err := pki.LoadCAFiles(k.tlsDir); err != nil {
		// A store made by hand (masterorder init) keeps its CA key off the
		// boxes unless the engineer copied it: say so, not "unreachable".
		k.log.Warn("console: cannot add a box without the CA key", "error", err)
		return httpapi.Fail(c, http.StatusConflict, "NO_CA_KEY")
	}
	// Checked and set in one locked section: two taps start one join.
	k.mu.Lock()
	e := k.found[c.Param("id")]
	p := Progress{Job: setup.Job{State: setup.JobWorking}, Step: StepWorking, BoxID: e.ID, ShortCode: setup.ShortCode(e.ID),
		Hostname: e.Info.Device.Hostname, Replaces: req.Replace}
	busy := k.progress.State == setup.JobWorking
	notMember := !busy && req.Replace != "" && !k.isMember(req.Replace)
	if !busy && !notMember {
		k.progress = p
	}
	k.mu.Unlock()
	switch {
	case busy:
		return httpapi.Fail(c, http.StatusConflict, "SETUP_BUSY")
	case notMember:
		return httpapi.Write(c, httpapi.Refusal{Status: http.StatusNotFound, Code: "MEMBER_NOT_FOUND", Field: "replace"})
	}
	go k.join(e, req)
	return c.JSON(http.StatusAccepted, p)
}

func (k *Console) isMember(id string) bool {
	for _, m := range k.n.Members() {
		if m.ID == id {
			return true
		}
	}
	return false
}

// join is the one manager action (AddToCluster), then the wait until the
// new box is ready: caught up with everything committed.
func (k *Console) join(e setup.Candidate, req ConsoleRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	j, err := AddToCluster(ctx, k.n, Request{Config: k.cfg, TLSDir: k.tlsDir, Target: e.Found, Code: req.SetupCode, Replaces: req.Replace})
	if j.NodeID != "" {
		k.mu.Lock()
		k.progress.NodeID = j.NodeID
		k.mu.Unlock()
	}
	if err != nil {
		k.fail(err)
		return
	}
	k.mu.Lock()
	k.progress.Step = StepAdded
	k.mu.Unlock()
	hc := &http.Client{Timeout: 3 * time.Second}
	for {
		if r, err := hc.Get("http://" + j.Peer.HTTPAddr + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-ctx.Done():
			k.fail(&setup.RefusedError{Code: "TIMEOUT", Message: "the new box did not catch up within 5 minutes"})
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	k.mu.Lock()
	k.progress.Step, k.progress.State = StepReady, setup.JobDone
	k.mu.Unlock()
	k.log.Info("console: a box joined the cluster", "node", j.NodeID, "replaces", req.Replace)
}

func (k *Console) fail(err error) {
	r := setup.ReasonOf(err)
	if me := (*node.MemberError)(nil); errors.As(err, &me) {
		r = setup.Reason{Error: me.Code, Detail: me.Msg}
	}
	k.log.Warn("console: adding a box failed", "code", r.Error, "error", err)
	k.mu.Lock()
	k.progress.State, k.progress.Reason = setup.JobFailed, r
	k.mu.Unlock()
}
