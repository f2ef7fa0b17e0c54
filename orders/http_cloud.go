package orders

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/orders/cloudsync"
	"masterorder/orders/store"
)

// The Cloud page's calls (manager): GET /api/staff/cloud says where the
// sync's setting comes from and how it is doing; PUT takes a service
// account key file, checks it with a test write and replicates it; DELETE
// switches the page's sync off. The key is never answered.

func (s *Service) cloudRoutes(staff *echo.Group) {
	staff.GET("/cloud", s.getCloud)
	staff.PUT("/cloud", s.putCloud)
	staff.DELETE("/cloud", s.deleteCloud)
}

// Where the sync's setting comes from.
const (
	sourceNone    = "none"    // nowhere: the sync is off
	sourceConsole = "console" // the Cloud page
	sourceFile    = "file"    // masterorder.toml [firestore] enabled, which wins
)

// The sync's state, for the page's words.
const (
	stateOff           = "off"
	stateStarting      = "starting"      // on, nothing tried yet
	stateOn            = "on"            // the last call to Firestore worked
	stateWaiting       = "waiting"       // no answer from Firestore: waiting for the internet
	stateError         = "error"         // Firestore refused (lastError, problem)
	stateKeyUnreadable = "keyUnreadable" // this box cannot open the saved key (secrets changed)
)

// cloudCheckTimeout bounds the test write of an uploaded key; past it the
// key is saved as unconfirmed (a store whose line is down or slow).
const cloudCheckTimeout = 15 * time.Second

// cloudView is GET /api/staff/cloud: the setting (never its key) and the
// sync's state as this box knows it.
type cloudView struct {
	Source      string  `json:"source"`
	State       string  `json:"state"`
	Problem     *string `json:"problem"`
	ProjectID   *string `json:"projectId"`
	ClientEmail *string `json:"clientEmail"`
	KeyID       *string `json:"keyId"`
	SavedAt     *string `json:"savedAt"`
	Checked     *string `json:"checked"`
	Online      bool    `json:"online"`
	Pending     int64   `json:"pending"`
	LastSyncAt  *string `json:"lastSyncAt"`
	LastError   *string `json:"lastError"`
}

// nonZero is &v, or nil for the zero value (null in the answer).
func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// cloudView reads the setting and the replicated state on this box.
func (s *Service) cloudView() cloudView {
	v := cloudView{Source: sourceNone, State: stateOff}
	s.query(func(db store.DB) error {
		n, err := store.CountOutbox(db)
		v.Pending = n
		return err
	})
	if e, live, err := s.node.KV().Get(keyCloudLastSync); err == nil && live {
		var ms int64
		if _, err := fmt.Sscan(string(e.Value), &ms); err == nil && ms > 0 {
			v.LastSyncAt = nonZero(store.FormatTime(ms))
		}
	}
	var setting uint64
	var checked string
	if s.cfg.Firestore.Enabled {
		v.Source = sourceFile
		v.ProjectID = nonZero(s.fileSyncer.ProjectID())
	} else {
		c, rev := s.cloudSetting()
		if c == nil {
			return v
		}
		v.Source, setting, checked = sourceConsole, rev, c.Checked
		v.ProjectID, v.ClientEmail, v.KeyID, v.Checked = nonZero(c.ProjectID), nonZero(c.ClientEmail), nonZero(c.KeyID), nonZero(c.Checked)
		v.SavedAt = nonZero(store.FormatTime(c.SavedAt))
		if _, err := s.sealer.open(c.Sealed); err != nil {
			v.State, v.LastError = stateKeyUnreadable, nonZero(err.Error())
			return v
		}
	}
	v.State = stateStarting
	if checked == checkUnconfirmed {
		v.State = stateWaiting // the test write got no answer: so far, no internet
	}
	if e, live, err := s.node.KV().Get(keyCloudState); err == nil && live {
		var c cloudState
		if json.Unmarshal(e.Value, &c) == nil && c.Setting == setting {
			v.Online, v.LastError, v.Problem = c.Online, c.LastError, nonZero(string(c.Problem))
			switch {
			case c.LastError != nil && c.Problem == cloudsync.ProblemOffline:
				v.State = stateWaiting
			case c.LastError != nil:
				v.State = stateError
			case c.Online:
				v.State = stateOn
			}
		}
	}
	return v
}

func (s *Service) getCloud(c echo.Context) error {
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, s.cloudView())
}

// putCloud: the key file is checked (what it is, then a test write to
// shops/{shopId} with it), sealed here and replicated. No answer from
// Firestore saves it anyway (checked: unconfirmed): the leader keeps
// trying and syncs once the store is online.
func (s *Service) putCloud(c echo.Context) error {
	if s.cfg.Firestore.Enabled {
		return s.fail(c, http.StatusConflict, "CLOUD_SET_IN_FILE", 0, nil)
	}
	var in struct {
		KeyFile string `json:"keyFile"`
	}
	if err := httpapi.DecodeBody(c, &in); err != nil {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	file := []byte(in.KeyFile)
	k, err := cloudsync.ParseKey(file, true)
	if err == nil && !cloudProjectRe.MatchString(k.ProjectID) {
		err = &cloudsync.KeyError{Problem: cloudsync.KeyIncomplete, Detail: "project_id is not a Firebase project id"}
	}
	if err != nil {
		return s.cloudRefusal(c, err)
	}
	ctx := c.Request().Context()
	cctx, cancel := context.WithTimeout(ctx, cloudCheckTimeout)
	err = cloudsync.Check(cctx, s.syncConfig(k.ProjectID, "", file))
	cancel()
	checked := checkWritten
	if err != nil {
		var ke *cloudsync.KeyError
		if errors.As(err, &ke) || cloudsync.Classify(err) != cloudsync.ProblemOffline || ctx.Err() != nil {
			return s.cloudRefusal(c, err)
		}
		checked = checkUnconfirmed
	}
	cmd := cloudSettingCmd{On: true, Sealed: s.sealer.seal(file), ProjectID: k.ProjectID, ClientEmail: k.ClientEmail,
		KeyID: k.PrivateKeyID, SavedAt: time.Now().UnixMilli(), Checked: checked}
	if !cmd.valid() {
		return s.cloudRefusal(c, &cloudsync.KeyError{Problem: cloudsync.KeyIncomplete, Detail: "client_email or private_key_id is not plain text"})
	}
	return s.proposeCloud(c, cmd)
}

// deleteCloud switches the page's sync off and removes the key from the
// boxes; what is already in Firestore stays.
func (s *Service) deleteCloud(c echo.Context) error {
	// A DELETE carries nothing: a body is a caller's mistake, not ignored.
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	if len(bytes.TrimSpace(body)) > 0 {
		return s.fail(c, http.StatusBadRequest, "INVALID_REQUEST", 0, nil)
	}
	if s.cfg.Firestore.Enabled {
		return s.fail(c, http.StatusConflict, "CLOUD_SET_IN_FILE", 0, nil)
	}
	return s.proposeCloud(c, cloudSettingCmd{})
}

// proposeCloud commits a setting and answers the view once this box has
// applied it.
func (s *Service) proposeCloud(c echo.Context, cmd cloudSettingCmd) error {
	ctx := c.Request().Context()
	// Idempotent: applying the same setting twice changes nothing more.
	r, err := s.propose(ctx, CmdCloudSetting, cmd, true)
	if err != nil {
		return s.failErr(c, err)
	}
	if r.Status != http.StatusOK {
		return s.respond(c, r)
	}
	if err := s.consistent(ctx); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, s.cloudView())
}

// cloudRefusal answers a key that cannot be used: what is wrong in words,
// the specifics in details (never the file's contents).
func (s *Service) cloudRefusal(c echo.Context, err error) error {
	code := "CLOUD_CHECK_FAILED"
	var ke *cloudsync.KeyError
	if errors.As(err, &ke) {
		code = map[cloudsync.KeyProblem]string{cloudsync.KeyNotJSON: "CLOUD_KEY_NOT_JSON",
			cloudsync.KeyNotServiceAccount: "CLOUD_KEY_NOT_SERVICE_ACCOUNT", cloudsync.KeyIncomplete: "CLOUD_KEY_INCOMPLETE"}[ke.Problem]
	} else {
		switch cloudsync.Classify(err) {
		case cloudsync.ProblemNoAccess:
			code = "CLOUD_KEY_NO_ACCESS"
		case cloudsync.ProblemNoDatabase:
			code = "CLOUD_NO_DATABASE"
		}
	}
	return httpapi.Write(c, httpapi.Refusal{Status: http.StatusBadRequest, Code: code, Field: "keyFile", Details: err.Error()})
}
