// Command baseline serves a bare echo handler returning a fixed body: the
// yardstick the API's own figures are divided by in docs/performance.md.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/labstack/echo/v4"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18099", "address to listen on")
	flag.Parse()
	body := []byte(`{"data":[],"next_cursor":null,"has_more":false}`)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/v1/teams", func(c echo.Context) error { return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body) })
	e.POST("/v1/teams", func(c echo.Context) error { return c.Blob(http.StatusCreated, echo.MIMEApplicationJSON, body) })
	if err := e.Start(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}
