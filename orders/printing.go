package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"masterorder/httpapi"
	"masterorder/kv"
	"masterorder/orders/backoff"
	"masterorder/orders/printing/escpos"
	"masterorder/orders/store"
	"masterorder/raftfsm"
)

// Kitchen printing, exactly once. Placing an order queues one job per
// printer whose stations it touches, inside the placeOrder Apply (no extra
// commit). The leader sends each printer's jobs in order and acknowledges
// them through Raft, like cloud sync. The rule for the window between
// "bytes sent" and "marked printed" (a printer has no idempotency):
//
//  1. dial the printer; a refused or unreachable printer has printed
//     nothing, so nothing is committed and the job is retried later;
//  2. commit printJob "begin" carrying the attempts count read: Apply
//     accepts it only if the count still matches, so of two leaders racing
//     for a job exactly one sends each attempt;
//  3. send the ticket, then GS r 1, and wait for the printer's status
//     byte: printers answer it only after processing what came before;
//  4. commit printJob "done", which deletes the job.
//
// A job found with attempts > 0 was begun by someone who may have printed
// it (a leader that died, a reset or stalled connection): it prints again
// marked 再送 / COPY. So a ticket is never lost, never printed twice
// unmarked; a copy appears only after a fault inside steps 2–4.

const (
	CmdPutPrinter    raftfsm.CommandType = 80
	CmdDeletePrinter raftfsm.CommandType = 81
	CmdPrintJob      raftfsm.CommandType = 82
	CmdReprint       raftfsm.CommandType = 83
	CmdPrinterState  raftfsm.CommandType = 84
)

// defaultStation prepares the lines of items that name no station.
const defaultStation = store.DefaultStation

// stationOf is the station that prepares an order line.
func stationOf(it store.OrderItem) string {
	if it.Station == "" {
		return defaultStation
	}
	return it.Station
}

// ticketNumber is what a ticket shows in big type: the day's ticket
// number (the order id for an order placed before ticket numbers).
func ticketNumber(o store.Order) string {
	if o.TicketNo > 0 {
		return strconv.FormatInt(o.TicketNo, 10)
	}
	return strconv.FormatInt(o.OrderID, 10)
}

func registerPrinting(tab commandTable) {
	register(tab, CmdPutPrinter, "orders.putPrinter", applyPutPrinter)
	register(tab, CmdDeletePrinter, "orders.deletePrinter", applyDeletePrinter)
	register(tab, CmdPrintJob, "orders.printJob", applyPrintJob)
	register(tab, CmdReprint, "orders.reprint", applyReprint)
	register(tab, CmdPrinterState, "orders.printerState", applyPrinterState)
}

var (
	printerIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	stationRe   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
)

// ---- commands ----

type putPrinterCmd struct {
	Printer store.Printer `json:"printer"`
}

func (c putPrinterCmd) valid() bool { return validPrinter(c.Printer) }

func validPrinter(p store.Printer) bool {
	if !printerIDRe.MatchString(p.PrinterID) || !validText(p.Name, 64, false) || len(p.Stations) > 32 {
		return false
	}
	host, port, err := net.SplitHostPort(p.Addr)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 || len(p.Addr) > 255 {
		return false
	}
	for _, s := range p.Stations {
		if !stationRe.MatchString(s) {
			return false
		}
	}
	return true
}

func applyPutPrinter(ctx *raftfsm.ApplyContext, tx *kv.Tx, c putPrinterCmd) ([]byte, error) {
	if err := store.UpsertPrinter(ctx.DB, c.Printer); err != nil {
		return nil, err
	}
	p, _, err := findPrinter(ctx.DB, c.Printer.PrinterID)
	if err != nil {
		return nil, err
	}
	return ok(p)
}

func findPrinter(q store.DB, id string) (store.Printer, bool, error) {
	ps, err := store.ListPrinters(q)
	for _, p := range ps {
		if p.PrinterID == id {
			return p, true, err
		}
	}
	return store.Printer{}, false, err
}

type printerIDCmd struct {
	PrinterID string `json:"printerId"`
}

func (c printerIDCmd) valid() bool { return printerIDRe.MatchString(c.PrinterID) }

func applyDeletePrinter(ctx *raftfsm.ApplyContext, tx *kv.Tx, c printerIDCmd) ([]byte, error) {
	found, err := store.DeletePrinter(ctx.DB, c.PrinterID)
	if err != nil {
		return nil, err
	}
	if !found {
		return reject(http.StatusNotFound, "PRINTER_NOT_FOUND")
	}
	return ok(map[string]any{"printerId": c.PrinterID, "deleted": true})
}

// Steps of printJobCmd.
const (
	printBegin = "begin"
	printDone  = "done"
)

type printJobCmd struct {
	JobID    int64  `json:"jobId"`
	Step     string `json:"step"`
	Attempts int64  `json:"attempts"` // begin: the count the sender read
}

func (c printJobCmd) valid() bool { return c.Step == printBegin || c.Step == printDone }

func applyPrintJob(ctx *raftfsm.ApplyContext, tx *kv.Tx, c printJobCmd) ([]byte, error) {
	j, found, err := store.GetPrintJob(ctx.DB, c.JobID)
	if err != nil {
		return nil, err
	}
	if !found {
		return reject(http.StatusNotFound, "NOT_FOUND") // printed already, or its printer deleted
	}
	if c.Step == printDone {
		if err := store.DeletePrintJob(ctx.DB, c.JobID); err != nil {
			return nil, err
		}
		return ok(map[string]int64{"jobId": c.JobID})
	}
	if j.Attempts != c.Attempts {
		return reject(http.StatusConflict, "INVALID_TRANSITION") // someone else began this attempt
	}
	if err := store.BeginPrintJob(ctx.DB, c.JobID); err != nil {
		return nil, err
	}
	return ok(map[string]int64{"jobId": c.JobID, "attempts": j.Attempts + 1})
}

type reprintCmd struct {
	OrderID int64 `json:"orderId"`
}

func applyReprint(ctx *raftfsm.ApplyContext, tx *kv.Tx, c reprintCmd) ([]byte, error) {
	o, found, err := reprintOrder(ctx, c.OrderID)
	if err != nil {
		return nil, err
	}
	if !found {
		return reject(http.StatusNotFound, "ORDER_NOT_FOUND")
	}
	n, err := queueTickets(ctx, o, escpos.KindReprint)
	if err != nil {
		return nil, err
	}
	return ok(map[string]any{"orderId": o.OrderID, "queued": n})
}

type printerStateCmd struct {
	PrinterID string  `json:"printerId"`
	Online    bool    `json:"online"`
	LastError *string `json:"lastError"`
}

func (c printerStateCmd) valid() bool { return printerIDRe.MatchString(c.PrinterID) }

func applyPrinterState(ctx *raftfsm.ApplyContext, tx *kv.Tx, c printerStateCmd) ([]byte, error) {
	if c.LastError != nil && len(*c.LastError) > 200 {
		e := (*c.LastError)[:200]
		c.LastError = &e
	}
	if err := store.SetPrinterState(ctx.DB, c.PrinterID, c.Online, c.LastError); err != nil {
		return nil, err
	}
	return ok(c)
}

// queueTickets queues o's ticket on every printer whose stations its lines
// touch, with that printer's lines only. Printers are read in id order and
// lines in order: the same rows on every node.
func queueTickets(ctx *raftfsm.ApplyContext, o store.Order, kind string) (int, error) {
	printers, err := store.PrinterStations(ctx.DB)
	if err != nil {
		return 0, err
	}
	return queueTicketsTo(ctx, printers, o, kind)
}

// queueTicketsTo is queueTickets with the printers already read (an
// order's Apply has them in the admission state).
func queueTicketsTo(ctx *raftfsm.ApplyContext, printers []store.Printer, o store.Order, kind string) (int, error) {
	n := 0
	for _, p := range printers {
		doc := escpos.Doc{Kind: kind, Number: ticketNumber(o), Table: o.TableID, AtMs: orderTimeMs(o, ctx.WallTime)}
		for _, it := range o.Items {
			if !slices.Contains(p.Stations, stationOf(it)) {
				continue
			}
			doc.Lines = append(doc.Lines, printedLine(it))
		}
		if len(doc.Lines) == 0 {
			continue
		}
		if err := store.InsertPrintJob(ctx.DB, p.PrinterID, o.OrderID, mustJSON(doc), ctx.WallTime); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// printedLine is an order line as a ticket prints it: name, quantity, the
// chosen options' and toppings' names, the guest's note.
func printedLine(it store.OrderItem) escpos.Line {
	l := escpos.Line{Name: it.Name, Quantity: it.Quantity}
	for _, t := range it.Toppings {
		l.Toppings = append(l.Toppings, t.Name)
	}
	for _, o := range it.Options {
		l.Options = append(l.Options, o.Name)
	}
	if it.Note != nil {
		l.Note = *it.Note
	}
	return l
}

// orderTimeMs is when o was placed, from its stored timestamp.
func orderTimeMs(o store.Order, fallback int64) int64 {
	if t, err := time.Parse(time.RFC3339Nano, o.CreatedAt); err == nil {
		return t.UnixMilli()
	}
	return fallback
}

// queueReceipts queues a closed bill's receipt on every receipts printer.
// From checkout version 3 its lines name their options and toppings (the
// guest's note is for the kitchen, not the bill).
func queueReceipts(ctx *raftfsm.ApplyContext, st checkoutState, payment string) error {
	printers, err := store.ListPrinters(ctx.DB)
	if err != nil {
		return err
	}
	doc := escpos.Doc{Kind: escpos.KindReceipt, Number: st.SessionID[:min(8, len(st.SessionID))], Table: st.TableID,
		AtMs: ctx.WallTime, Total: st.Total, Tax: st.Tax, Payment: payment}
	for _, o := range st.Orders {
		if o.Status == store.StatusCancelled {
			continue
		}
		for _, it := range o.Items {
			l := escpos.Line{Name: it.Name, Quantity: it.Quantity, Price: it.LineTotal}
			if ctx.Version >= 3 {
				// What the line's price is made of: a bill of "ramen ×1
				// 1,370円" alone does not show the extras it charged.
				full := printedLine(it)
				l.Options, l.Toppings = full.Options, full.Toppings
			}
			doc.Lines = append(doc.Lines, l)
		}
	}
	for _, p := range printers {
		if !p.Receipts {
			continue
		}
		if err := store.InsertPrintJob(ctx.DB, p.PrinterID, 0, mustJSON(doc), ctx.WallTime); err != nil {
			return err
		}
	}
	return nil
}

// ---- HTTP ----

func (s *Service) printerRoutes(staff *echo.Group) {
	staff.GET("/printers", s.listPrinters)
	staff.PUT("/printers/:printerId", s.putPrinter)
	staff.DELETE("/printers/:printerId", s.deletePrinter)
	staff.POST("/orders/:orderId/reprint", s.reprint)
}

func (s *Service) listPrinters(c echo.Context) error {
	if err := s.readReplica(c); err != nil {
		return s.failErr(c, err)
	}
	var ps []store.Printer
	if err := s.query(func(db store.DB) (err error) { ps, err = store.ListPrinters(db); return }); err != nil {
		return s.failErr(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"printers": ps})
}

func (s *Service) putPrinter(c echo.Context) error {
	id := c.Param("printerId")
	if !printerIDRe.MatchString(id) {
		return s.fail(c, http.StatusBadRequest, "INVALID_ID", 0, nil)
	}
	var in struct {
		PrinterID string   `json:"printerId"`
		Addr      string   `json:"addr"`
		Stations  []string `json:"stations"`
		Receipts  bool     `json:"receipts"`
		Name      string   `json:"name"`
	}
	if err := httpapi.DecodeBody(c, &in); err != nil {
		return httpapi.BadBody(c, err, "INVALID_REQUEST")
	}
	p := store.Printer{PrinterID: id, Addr: in.Addr, Stations: in.Stations, Receipts: in.Receipts, Name: in.Name}
	if p.Stations == nil {
		p.Stations = []string{}
	}
	if (in.PrinterID != "" && in.PrinterID != id) || !validPrinter(p) {
		return s.fail(c, http.StatusBadRequest, "INVALID_REQUEST", 0, nil)
	}
	r, err := s.propose(c.Request().Context(), CmdPutPrinter, putPrinterCmd{Printer: p}, true)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

func (s *Service) deletePrinter(c echo.Context) error {
	id := c.Param("printerId")
	if !printerIDRe.MatchString(id) {
		return s.fail(c, http.StatusBadRequest, "INVALID_ID", 0, nil)
	}
	r, err := s.propose(c.Request().Context(), CmdDeletePrinter, printerIDCmd{PrinterID: id}, false)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

func (s *Service) reprint(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("orderId"), 10, 64)
	if err != nil || id < 1 {
		return s.fail(c, http.StatusBadRequest, "INVALID_ID", 0, nil)
	}
	// Not idempotent: a forward retried after an unknown outcome could
	// queue a second marked copy, never a second new ticket.
	r, err := s.propose(c.Request().Context(), CmdReprint, reprintCmd{OrderID: id}, false)
	if err != nil {
		return s.failErr(c, err)
	}
	return s.respond(c, r)
}

// ---- the leader's sender ----

// Printer I/O bounds: a refusing, resetting or stalled printer costs at
// most this much before the job is retried.
var (
	printDialTimeout = 3 * time.Second
	printIOTimeout   = 10 * time.Second
	printPoll        = 300 * time.Millisecond
	printMinBackoff  = 200 * time.Millisecond
	printMaxBackoff  = 5 * time.Second
	printProbe       = 5 * time.Second
)

// printWorker runs on the leader: one sender per configured printer.
func (s *Service) printWorker(ctx context.Context) {
	senders := map[string]context.CancelFunc{}
	var running sync.WaitGroup
	defer func() {
		for _, stop := range senders {
			stop()
		}
		running.Wait() // a deposed leader sends nothing more
	}()
	t := time.NewTicker(printPoll)
	defer t.Stop()
	for {
		var ps []store.Printer
		if err := s.query(func(db store.DB) (err error) { ps, err = store.ListPrinters(db); return }); err == nil {
			live := map[string]bool{}
			for _, p := range ps {
				live[p.PrinterID] = true
				if _, started := senders[p.PrinterID]; !started {
					sctx, stop := context.WithCancel(ctx)
					senders[p.PrinterID] = stop
					running.Add(1)
					go func(id string) {
						defer running.Done()
						s.printerSender(sctx, id)
					}(p.PrinterID)
				}
			}
			for id, stop := range senders {
				if !live[id] {
					stop()
					delete(senders, id)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// printerSender prints one printer's queue in order until ctx ends.
func (s *Service) printerSender(ctx context.Context, id string) {
	failures := 0
	var lastProbe time.Time
	var reported *printerStateCmd
	report := func(online bool, err error) {
		st := printerStateCmd{PrinterID: id, Online: online}
		if err != nil {
			e := printErrText(err)
			st.LastError = &e
		}
		if reported != nil && reported.Online == st.Online && sameStr(reported.LastError, st.LastError) {
			return
		}
		if _, err := refused(s.propose(ctx, CmdPrinterState, st, false)); err == nil {
			reported = &st
		}
	}
	for ctx.Err() == nil {
		var p store.Printer
		var job store.PrintJob
		var found bool
		err := s.query(func(db store.DB) error {
			var perr error
			p, found, perr = findPrinter(db, id)
			if perr != nil || !found {
				return perr
			}
			job, found, perr = store.NextPrintJob(db, id)
			return perr
		})
		if err == nil && !found {
			if p.PrinterID != "" && time.Since(lastProbe) > printProbe {
				lastProbe = time.Now()
				perr := probe(ctx, p.Addr)
				report(perr == nil, perr)
			}
			backoff.Sleep(ctx, printPoll)
			continue
		}
		if err == nil {
			err = s.printOne(ctx, p, job)
		}
		if errors.Is(err, errLostRace) {
			continue // read the job again
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			report(false, err)
			backoff.Sleep(ctx, backoff.Full(failures, printMinBackoff, printMaxBackoff))
			continue
		}
		failures = 0
		report(true, nil)
	}
}

// errLostRace: another sender began this attempt; read the job again.
var errLostRace = errors.New("print job taken by another sender")

// printOne sends one job following the rule at the top of this file.
func (s *Service) printOne(ctx context.Context, p store.Printer, job store.PrintJob) error {
	var doc escpos.Doc
	if err := json.Unmarshal([]byte(job.Doc), &doc); err != nil {
		return fmt.Errorf("job %d: %w", job.JobID, err)
	}
	d := net.Dialer{Timeout: printDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", p.Addr)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	r, err := s.propose(ctx, CmdPrintJob, printJobCmd{JobID: job.JobID, Step: printBegin, Attempts: job.Attempts}, false)
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return errLostRace
	}
	data := append(escpos.Render(doc, job.Attempts > 0, s.zone()), escpos.StatusRequest...)
	conn.SetDeadline(time.Now().Add(printIOTimeout))
	if _, err := conn.Write(data); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	var status [1]byte
	if _, err := conn.Read(status[:]); err != nil {
		return fmt.Errorf("confirm: %w", err)
	}
	// Printed: keep trying to say so while this node leads, since a job
	// left begun prints again (as a copy) under the next sender.
	for {
		r, err := s.propose(ctx, CmdPrintJob, printJobCmd{JobID: job.JobID, Step: printDone}, false)
		if err == nil && (r.Status == http.StatusOK || r.Status == http.StatusNotFound) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		backoff.Sleep(ctx, printPoll)
	}
}

// probe checks an idle printer answers, so its status is current before
// the next order.
func probe(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: printDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return conn.Close()
}

// printErrText is a printer error as replicated: the stage and the kind
// of failure, without the ephemeral addresses, so a printer failing the
// same way does not write a new state to the log on every retry.
func printErrText(err error) string {
	stage, _, _ := strings.Cut(err.Error(), ":")
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return stage + ": connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF):
		return stage + ": connection reset"
	case errors.As(err, &ne) && ne.Timeout():
		return stage + ": timeout"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return stage + ": unreachable"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return stage + ": unknown host"
	}
	return stage + ": failed"
}
