package orders

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/orders/staffauth"
	"masterorder/orders/store"
	"masterorder/orders/stream"
)

var kitchenDefault = []string{store.StatusAccepted, store.StatusCooking, store.StatusReady}

func (s *Service) kitchenOrders(c echo.Context) error {
	statuses := kitchenDefault
	if raw := c.QueryParam("status"); raw != "" {
		statuses = nil
		for _, st := range strings.Split(raw, ",") {
			st = strings.TrimSpace(st)
			if _, ok := statusRank[st]; !ok && st != store.StatusCancelled {
				return s.fail(c, http.StatusBadRequest, "INVALID_STATUS", 0, nil)
			}
			statuses = append(statuses, st)
		}
	}
	station, good := stationParam(c)
	if !good {
		return s.failField(c, http.StatusBadRequest, "INVALID_REQUEST", "station")
	}
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	var list []store.Order
	if err := s.query(func(db store.DB) (err error) { list, err = store.KitchenOrders(db, statuses); return }); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"orders": forStation(list, station)})
}

// kitchenSnapshot reads the open orders and the index they reflect in one
// SQLite read transaction, so the snapshot event's id is exact.
func (s *Service) kitchenSnapshot(ctx context.Context) (uint64, []store.Order, error) {
	var idx uint64
	var list []store.Order
	err := s.node.FSM().Query(func(db *sql.DB) error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var applied int64
		if err := tx.QueryRow(`SELECT COALESCE((SELECT v FROM _fsm_meta WHERE k='applied'),0)`).Scan(&applied); err != nil {
			return fmt.Errorf("read applied index: %w", err)
		}
		idx = uint64(applied)
		list, err = store.KitchenOrders(tx, kitchenDefault)
		return err
	})
	return idx, list, err
}

// sseHeartbeat is the interval of the stream's ping events (API.md: at
// least every 15 s).
const sseHeartbeat = 15 * time.Second

// kitchenStream serves Server-Sent Events. Ids are Raft indexes; a client
// resuming with Last-Event-ID (header, or lastEventId query for a screen
// switching nodes) gets exactly the events after it, or a snapshot when
// this node cannot vouch for the gap.
func (s *Service) kitchenStream(c echo.Context) error {
	var last uint64
	resume := false
	raw := c.Request().Header.Get("Last-Event-ID")
	if raw == "" {
		raw = c.QueryParam("lastEventId")
	}
	if raw != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(raw), 10, 64)
		if err != nil {
			return s.fail(c, http.StatusBadRequest, "INVALID_REQUEST", 0, nil)
		}
		last, resume = n, true
	}
	station, good := stationParam(c)
	if !good {
		return s.failField(c, http.StatusBadRequest, "INVALID_REQUEST", "station")
	}
	// A station's screen gets its lines only (bump.go).
	send := func(w http.ResponseWriter, e stream.Event) {
		if d, keep := stationEvent(e.Data, e.Type, station); keep {
			e.Data = d
			writeEvent(w, e)
		}
	}
	ctx := c.Request().Context()
	// Catch up first, so an id another node already sent is known here;
	// without a quorum the stream opens on what this box holds and goes on
	// live once the quorum is back (ids are log indexes: nothing is missed).
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	sub, backlog, ok := s.hub.Subscribe(last, s.node.FSM().Applied(), 1024)
	defer s.hub.Unsubscribe(sub)

	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	// Each batch of writes gets the write timeout anew (node.writeDeadline
	// gave the request one from its start).
	s.node.ExtendWriteDeadline(w)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 1000\n\n")

	sent := last
	if !resume || !ok {
		idx, list, err := s.kitchenSnapshot(ctx)
		if err != nil {
			return nil // headers are out; the client reconnects
		}
		data, _ := json.Marshal(map[string]any{"type": "snapshot", "orders": forStation(list, station)})
		writeEvent(w, stream.Event{ID: idx, Type: "snapshot", Data: data})
		sent = idx
	} else {
		for _, e := range backlog {
			send(w, e)
			sent = e.ID
		}
	}
	w.Flush()

	beat := time.NewTicker(sseHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.node.Done():
			return nil
		case <-sub.Lost:
			return nil
		case e := <-sub.C:
			if e.ID <= sent {
				continue // already in the snapshot or backlog
			}
			s.node.ExtendWriteDeadline(w)
			send(w, e)
			sent = e.ID
			// Drain what is queued before flushing once.
			for more := true; more; {
				select {
				case e := <-sub.C:
					if e.ID > sent { // one kitchen event per command
						send(w, e)
						sent = e.ID
					}
				default:
					more = false
				}
			}
			w.Flush()
		case <-beat.C:
			// An event, not a comment: EventSource shows only events to
			// the page, and the screen takes 45 s without one as a dead
			// connection (a box that lost power sends no FIN).
			s.node.ExtendWriteDeadline(w)
			fmt.Fprintf(w, "event: ping\ndata:\n\n")
			w.Flush()
		}
	}
}

// kitchenStreamTicket is POST /api/kitchen/stream-ticket: a ticket that
// opens the kitchen stream once (per node) within 60 s of FSM time, so the
// EventSource URL carries no token that a log or the browser history could
// replay.
func (s *Service) kitchenStreamTicket(c echo.Context) error {
	// The body is {}: nothing is asked, and a body that is something else
	// is a confused or hostile client (400, like every other write).
	var req map[string]json.RawMessage
	if err := httpapi.DecodeBody(c, &req); err != nil || req == nil || len(req) != 0 {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	cl, _ := staffauth.ClaimsFrom(c)
	ticket, expires := s.auth.Issuer().IssueTicket(cl)
	if ticket == "" {
		return s.fail(c, http.StatusUnauthorized, staffauth.ReasonUnauthorized, 0, nil)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string]any{"ticket": ticket, "expiresAt": expires.UTC().Format(time.RFC3339)})
}

func writeEvent(w http.ResponseWriter, e stream.Event) {
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, e.Data)
}
