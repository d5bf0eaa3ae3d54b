package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	qrcode "github.com/skip2/go-qrcode"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Personal passes (docs/decisions.md, "Personal passes and punches at
// gates"): the pass an employee clocks in and out with at the gates.

type personPassJSON struct {
	PersonID string `json:"person_id"`
	Token    string `json:"token"`
	IssuedAt string `json:"issued_at"`
}

func renderPersonPass(personID, token string, issuedAt time.Time) personPassJSON {
	return personPassJSON{PersonID: personID, Token: token, IssuedAt: ts(issuedAt)}
}

// personPass serves the token of the person's current pass. It is a
// credential that opens gates, so no cache keeps it.
func (s *Server) personPass(c echo.Context) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	tok, at, err := s.svc.PersonPass(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, renderPersonPass(id, tok, at))
}

// personPassPNG serves the person's current pass as a QR code, as
// passPNG does a visit's.
func (s *Server) personPassPNG(c echo.Context) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	tok, _, err := s.svc.PersonPass(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	png, err := qrcode.Encode(tok, qrcode.Medium, 512)
	if err != nil {
		return fmt.Errorf("encode pass of %s: %w", id, err)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.Blob(http.StatusOK, "image/png", png)
}

// reissuePersonPass replaces the person's pass with a new one and returns
// it; the old one stops working at each site once its edge has the
// change.
func (s *Server) reissuePersonPass(c echo.Context) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	if _, err := decode(c, true, func(*body) struct{} { return struct{}{} }, func(context.Context, struct{}) error { return nil }); err != nil {
		return err
	}
	// No Cache-Control: a POST's answer is not cached, and a replay under
	// its Idempotency-Key would not carry the header.
	send := answer(c, answerOK(func(p cloud.PersonPass) personPassJSON { return renderPersonPass(p.PersonID, p.Token, p.IssuedAt) }))
	tok, issued, err := s.svc.ReissuePersonPass(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	return send(cloud.PersonPass{PersonID: id, Token: tok, IssuedAt: issued})
}
