package orders

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"masterorder/kv"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Stations (issue 16): each item is prepared at one station; a station's
// kitchen screen sees only its lines and bumps them when done. The order
// becomes READY when every station with a line in it has bumped; the
// order-level status (PATCH) keeps working beside it.

// CmdBump marks one station's lines of an order done.
const CmdBump raftfsm.CommandType = 90

type bumpCmd struct {
	OrderID int64  `json:"orderId"`
	Station string `json:"station"`
	Node    string `json:"node"`
}

func (c bumpCmd) valid() bool {
	return c.OrderID >= 1 && c.OrderID <= 1<<31-1 && stationRe.MatchString(c.Station) && validNode(c.Node)
}

// registerLines adds the order-line commands (called from registerTable).
func registerLines(tab commandTable) {
	register(tab, CmdBump, "orders.bump", applyBump)
}

// applyBump records the station's bump; the last station to bump moves
// an ACCEPTED or COOKING order to READY. Bumping again changes nothing.
func applyBump(ctx *raftfsm.ApplyContext, _ *kv.Tx, c bumpCmd) ([]byte, error) {
	o, found, err := store.GetOrder(ctx.DB, c.OrderID)
	if err != nil {
		return nil, err
	}
	if !found {
		return reject(http.StatusNotFound, "ORDER_NOT_FOUND")
	}
	sess, found, err := store.GetSession(ctx.DB, o.SessionID)
	if err != nil {
		return nil, err
	}
	if !found || sess.Status != store.SessionActive {
		return reject(http.StatusGone, "SESSION_CLOSED")
	}
	stations := o.Stations()
	if !slices.Contains(stations, c.Station) {
		return withField(reject(http.StatusBadRequest, "INVALID_REQUEST"))("station")
	}
	if o.Status == store.StatusServed || o.Status == store.StatusCancelled {
		return reject(http.StatusConflict, "INVALID_TRANSITION")
	}
	if slices.Contains(o.Bumped, c.Station) {
		return ok(o)
	}
	o.Bumped = append(o.Bumped, c.Station)
	slices.Sort(o.Bumped)
	if err := store.SetOrderBumped(ctx.DB, o.OrderID, o.Bumped, ctx.WallTime); err != nil {
		return nil, err
	}
	if allBumped(stations, o.Bumped) && (o.Status == store.StatusAccepted || o.Status == store.StatusCooking) {
		if err := store.SetOrderStatus(ctx.DB, o.OrderID, store.StatusReady, ctx.WallTime); err != nil {
			return nil, err
		}
		o.Status = store.StatusReady
	}
	if err := store.InsertOutbox(ctx.DB, o.OrderID, store.OutboxUpsert); err != nil {
		return nil, err
	}
	o.UpdatedAt = store.FormatTime(ctx.WallTime)
	emitOrder(ctx, "order.updated", o)
	return ok(o)
}

func allBumped(stations, bumped []string) bool {
	for _, s := range stations {
		if !slices.Contains(bumped, s) {
			return false
		}
	}
	return true
}

// clearBumpsOnRecall: a kitchen recall (READY back to COOKING or
// ACCEPTED) puts the order back on every station's screen.
func clearBumpsOnRecall(ctx *raftfsm.ApplyContext, o *store.Order, to string) error {
	if o.Status != store.StatusReady || (to != store.StatusCooking && to != store.StatusAccepted) || len(o.Bumped) == 0 {
		return nil
	}
	o.Bumped = []string{}
	return store.SetOrderBumped(ctx.DB, o.OrderID, o.Bumped, ctx.WallTime)
}

// bump is POST /api/kitchen/orders/{orderId}/bump {"station":"S"}.
func (s *Service) bump(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("orderId"), 10, 64)
	if err != nil || id < 1 || id > 1<<31-1 {
		return s.fail(c, http.StatusNotFound, "ORDER_NOT_FOUND", 0, nil)
	}
	var in struct {
		Station string `json:"station"`
	}
	if err := decodeStrict(c, &in); err != nil {
		return s.badBody(c, err, "INVALID_REQUEST")
	}
	if !stationRe.MatchString(in.Station) {
		return s.failField(c, http.StatusBadRequest, "INVALID_REQUEST", "station")
	}
	r, err := s.propose(c.Request().Context(), CmdBump, bumpCmd{OrderID: id, Station: in.Station, Node: s.cfg.NodeID}, false)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

// stationParam is ?station= of the kitchen list and stream ("" for all);
// ok is false for an id out of pattern.
func stationParam(c echo.Context) (string, bool) {
	st := c.QueryParam("station")
	return st, st == "" || stationRe.MatchString(st)
}

// forStation narrows orders to those with a line for station, showing
// only those lines ("" keeps everything).
func forStation(list []store.Order, station string) []store.Order {
	if station == "" {
		return list
	}
	out := []store.Order{}
	for _, o := range list {
		if n, ok := o.ForStation(station); ok {
			out = append(out, n)
		}
	}
	return out
}

// stationEvent is a stream event as a station sees it: order events
// narrowed to its lines, dropped when the order has none; others as
// they are.
func stationEvent(data []byte, typ, station string) ([]byte, bool) {
	if station == "" || (typ != "order.created" && typ != "order.updated") {
		return data, true
	}
	var ev orderEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return data, true
	}
	n, ok := ev.Order.ForStation(station)
	if !ok {
		return nil, false
	}
	ev.Order = n
	return mustJSON(ev), true
}
