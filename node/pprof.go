package node

import (
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"
)

// initPprof serves Go's profiler under /debug/pprof/ to staff and loopback
// callers only (staffOnly, like /metrics): a profile of a node under load
// is how the closed-loop bench finds where the time goes, and a guest must
// not be able to make a box spend CPU profiling itself.
func (n *Node) initPprof() {
	g := n.echo.Group("/debug/pprof", n.staffOnly)
	g.GET("/", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
	g.GET("/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	g.GET("/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	g.GET("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.GET("/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	g.GET("/:name", func(c echo.Context) error {
		pprof.Handler(c.Param("name")).ServeHTTP(c.Response(), c.Request())
		return nil
	})
}
