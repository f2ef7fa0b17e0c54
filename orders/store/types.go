package store

import (
	"time"
)

// Order statuses.
const (
	StatusAccepted  = "ACCEPTED"
	StatusCooking   = "COOKING"
	StatusReady     = "READY"
	StatusServed    = "SERVED"
	StatusCancelled = "CANCELLED"
)

// Session statuses.
const (
	SessionActive = "ACTIVE"
	SessionClosed = "CLOSED"
)

// Topping is a topping as an item offers it.
type Topping struct {
	ToppingID string `json:"toppingId"`
	Name      string `json:"name"`
	NameEn    string `json:"nameEn,omitempty"`
	Price     int64  `json:"price"`
	SoldOut   bool   `json:"soldOut"`
}

// MenuItem is one item with the toppings it allows.
type MenuItem struct {
	MenuID    string    `json:"menuId"`
	Name      string    `json:"name"`
	NameEn    string    `json:"nameEn"`
	Category  string    `json:"category"`
	Price     int64     `json:"price"`
	Available bool      `json:"available"`
	SortOrder int64     `json:"sortOrder"`
	SoldOut   bool      `json:"soldOut"`
	Toppings  []Topping `json:"toppings"`

	MenuContent // names, description, allergens, picture (content.go)
	// Order lines (issue 16, lines.go): who prepares it, required choices.
	Station      string        `json:"station"`
	OptionGroups []OptionGroup `json:"optionGroups"`
}

// StockLevel is one tracked (or untracked: nil) sku.
type StockLevel struct {
	SKU      string `json:"sku"`
	Quantity *int64 `json:"quantity"`
}

// Session is a table session. The PIN is never serialized by accident.
type Session struct {
	SessionID string  `json:"sessionId"`
	TableID   string  `json:"tableId"`
	PIN       string  `json:"-"`
	Status    string  `json:"status"`
	OpenedAt  string  `json:"openedAt"`
	ClosedAt  *string `json:"closedAt"`
}

// ToppingRef is a topping on an order line, priced at order time.
type ToppingRef struct {
	ToppingID string `json:"toppingId"`
	Name      string `json:"name"`
	Price     int64  `json:"price"`
}

// OrderItem is one priced order line.
type OrderItem struct {
	MenuID    string       `json:"menuId"`
	Name      string       `json:"name"`
	Quantity  int          `json:"quantity"`
	Toppings  []ToppingRef `json:"toppings"`
	UnitPrice int64        `json:"unitPrice"`
	LineTotal int64        `json:"lineTotal"`

	// Order lines (issue 16, lines.go).
	Station string      `json:"station"`
	Options []OptionRef `json:"options"`
	Note    *string     `json:"note"`
}

// Order is the order object of API.md.
type Order struct {
	OrderID    int64       `json:"orderId"`
	SessionID  string      `json:"sessionId"`
	TableID    string      `json:"tableId"`
	Status     string      `json:"status"`
	Items      []OrderItem `json:"items"`
	TotalPrice int64       `json:"totalPrice"`
	CreatedAt  string      `json:"createdAt"`
	UpdatedAt  string      `json:"updatedAt"`
	RequestID  *string     `json:"requestId"`
	Source     string      `json:"source"`
	// TicketNo is the number called out, per business day (lines.go);
	// Bumped the stations that marked their lines done.
	TicketNo int64    `json:"ticketNo"`
	Bumped   []string `json:"bumped"`

	Seq      int64  `json:"-"`
	ClientID string `json:"-"`
}

// AuditEntry is one admission decision or staff override.
type AuditEntry struct {
	ID               int64   `json:"id"`
	RequestID        *string `json:"requestId"`
	ClientID         *string `json:"clientId"`
	SessionID        *string `json:"sessionId"`
	OrderID          *int64  `json:"orderId"`
	ReasonCode       string  `json:"reasonCode"`
	IdempotentReplay bool    `json:"idempotentReplay"`
	At               string  `json:"at"`
	Node             string  `json:"node"`
	Detail           string  `json:"detail,omitempty"`
}

// FormatTime renders a wall-clock millisecond stamp as RFC 3339 (UTC).
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
