package orders

import (
	"reflect"

	"github.com/labstack/echo/v4"

	"masterorder/orders/staffauth"
	"masterorder/orders/store"
)

// kitchenCalls are the staff API calls a kitchen token may make (method
// and route); every other staff call needs a manager token and answers
// 403 FORBIDDEN_ROLE. A route added later is manager-only until it is
// listed here: a stolen kitchen tablet must not reach backups, membership
// or prices.
var kitchenCalls = map[string]bool{
	"GET /api/kitchen/orders":            true,
	"GET /api/kitchen/stream":            true,
	"POST /api/kitchen/stream-ticket":    true,
	"PATCH /api/staff/orders/:orderId":   true, // bump, recall, cancel
	"GET /api/staff/menu":                true,
	"GET /api/staff/stock":               true,
	"PUT /api/staff/menu/:menuId":        true, // sold-out toggle only: putMenu checks
	"PUT /api/staff/stock/:sku":          true, // sold out / back only: putStock checks
	"POST /api/staff/logout":             true,
	"GET /api/staff/calls":               true,
	"POST /api/staff/calls/:callId/done": true,
	"GET /api/staff/printers":            true, // the kitchen's printer-offline banner (read only)
}

// roleGuard runs after the staff middleware: a kitchen token passes only
// on kitchenCalls.
func roleGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if staffauth.RoleFrom(c) != staffauth.RoleManager && !kitchenCalls[c.Request().Method+" "+c.Path()] {
			return staffauth.Forbid(c)
		}
		return next(c)
	}
}

// isKitchen reports a kitchen token (handlers that kitchen may call in a
// narrower form than a manager).
func isKitchen(c echo.Context) bool { return staffauth.RoleFrom(c) == staffauth.RoleKitchen }

// sameExceptAvailable reports that next changes nothing of cur but
// Available (what a kitchen sold-out toggle sends back).
func sameExceptAvailable(cur, next store.MenuItem) bool {
	cur.Available, cur.SoldOut = next.Available, next.SoldOut
	if len(cur.Toppings) == 0 && len(next.Toppings) == 0 {
		cur.Toppings = next.Toppings
	}
	return reflect.DeepEqual(cur, next)
}
