package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Printer is a configured kitchen or receipt printer with the leader's
// last view of it (replicated).
type Printer struct {
	PrinterID string   `json:"printerId"`
	Name      string   `json:"name"`
	Addr      string   `json:"addr"`
	Stations  []string `json:"stations"`
	Receipts  bool     `json:"receipts"`
	Online    bool     `json:"online"`
	LastError *string  `json:"lastError"`
	Queued    int64    `json:"queued"`
}

// PrintJob is one document waiting for its printer.
type PrintJob struct {
	JobID     int64
	PrinterID string
	OrderID   int64
	Doc       string // escpos.Doc as JSON
	Attempts  int64
}

// UpsertPrinter saves a printer's settings, keeping its state.
func UpsertPrinter(tx DB, p Printer) error {
	st, err := json.Marshal(p.Stations)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO printers(printer_id, name, addr, stations, receipts) VALUES (?,?,?,?,?)
		ON CONFLICT(printer_id) DO UPDATE SET name = excluded.name, addr = excluded.addr,
		stations = excluded.stations, receipts = excluded.receipts`, p.PrinterID, p.Name, p.Addr, string(st), p.Receipts)
	if err != nil {
		return fmt.Errorf("save printer: %w", err)
	}
	return nil
}

// DeletePrinter removes a printer and its queue; false if unknown.
func DeletePrinter(tx DB, id string) (bool, error) {
	res, err := tx.Exec(`DELETE FROM printers WHERE printer_id = ?`, id)
	if err != nil {
		return false, fmt.Errorf("delete printer: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.Exec(`DELETE FROM print_jobs WHERE printer_id = ?`, id); err != nil {
		return false, fmt.Errorf("delete printer jobs: %w", err)
	}
	return n > 0, nil
}

// SetPrinterState records the leader's view of a printer.
func SetPrinterState(tx DB, id string, online bool, lastError *string) error {
	if _, err := tx.Exec(`UPDATE printers SET online = ?, last_error = ? WHERE printer_id = ?`, online, lastError, id); err != nil {
		return fmt.Errorf("set printer state: %w", err)
	}
	return nil
}

// ListPrinters returns every printer by id, with its queue length.
func ListPrinters(q DB) ([]Printer, error) {
	return queryAll(q, "list printers", scanPrinter, `SELECT p.printer_id, p.name, p.addr, p.stations, p.receipts, p.online, p.last_error,
		(SELECT count(*) FROM print_jobs j WHERE j.printer_id = p.printer_id)
		FROM printers p ORDER BY p.printer_id`)
}

func scanPrinter(sc rowScanner) (Printer, error) {
	var p Printer
	var st string
	var lastErr sql.NullString
	if err := sc.Scan(&p.PrinterID, &p.Name, &p.Addr, &st, &p.Receipts, &p.Online, &lastErr, &p.Queued); err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(st), &p.Stations); err != nil {
		return p, fmt.Errorf("printer %s stations: %w", p.PrinterID, err)
	}
	if lastErr.Valid {
		e := lastErr.String
		p.LastError = &e
	}
	return p, nil
}

// PrinterStations is every printer's id and stations by id: what queueing
// an order's tickets needs, without ListPrinters' count of each queue (a
// printer offline through a rush has thousands of jobs to count, on every
// order).
func PrinterStations(q DB) ([]Printer, error) {
	rows, err := q.Query(`SELECT printer_id, stations FROM printers ORDER BY printer_id`)
	if err != nil {
		return nil, fmt.Errorf("list printers: %w", err)
	}
	defer rows.Close()
	var out []Printer
	for rows.Next() {
		var p Printer
		var st string
		if err := rows.Scan(&p.PrinterID, &st); err != nil {
			return nil, fmt.Errorf("list printers: %w", err)
		}
		if err := json.Unmarshal([]byte(st), &p.Stations); err != nil {
			return nil, fmt.Errorf("printer %s stations: %w", p.PrinterID, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// InsertPrintJob queues a document for a printer (inside Apply, the row
// itself is queued: queue.go).
func InsertPrintJob(tx DB, printerID string, orderID int64, doc []byte, at int64) error {
	if err := printJobInsert.insert(tx, printerID, orderID, string(doc), at); err != nil {
		return fmt.Errorf("queue print job: %w", err)
	}
	return nil
}

// NextPrintJob is a printer's oldest job.
func NextPrintJob(q DB, printerID string) (PrintJob, bool, error) {
	var j PrintJob
	err := q.QueryRow(`SELECT job_id, printer_id, order_id, doc, attempts FROM print_jobs
		WHERE printer_id = ? ORDER BY job_id LIMIT 1`, printerID).Scan(&j.JobID, &j.PrinterID, &j.OrderID, &j.Doc, &j.Attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return j, false, nil
	}
	if err != nil {
		return j, false, fmt.Errorf("next print job: %w", err)
	}
	return j, true, nil
}

// GetPrintJob reads one job.
func GetPrintJob(q DB, jobID int64) (PrintJob, bool, error) {
	var j PrintJob
	err := q.QueryRow(`SELECT job_id, printer_id, order_id, doc, attempts FROM print_jobs WHERE job_id = ?`, jobID).
		Scan(&j.JobID, &j.PrinterID, &j.OrderID, &j.Doc, &j.Attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return j, false, nil
	}
	if err != nil {
		return j, false, fmt.Errorf("read print job: %w", err)
	}
	return j, true, nil
}

// BeginPrintJob counts a send begun.
func BeginPrintJob(tx DB, jobID int64) error {
	if _, err := tx.Exec(`UPDATE print_jobs SET attempts = attempts + 1 WHERE job_id = ?`, jobID); err != nil {
		return fmt.Errorf("begin print job: %w", err)
	}
	return nil
}

// DeletePrintJob removes a printed job.
func DeletePrintJob(tx DB, jobID int64) error {
	if _, err := tx.Exec(`DELETE FROM print_jobs WHERE job_id = ?`, jobID); err != nil {
		return fmt.Errorf("delete print job: %w", err)
	}
	return nil
}
