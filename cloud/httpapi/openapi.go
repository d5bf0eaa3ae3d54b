package httpapi

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// OpenAPI is the API's published contract, served at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openAPI(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=300")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, OpenAPI)
}
