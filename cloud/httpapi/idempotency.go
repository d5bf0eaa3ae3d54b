package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/problem"
)

const (
	// idempotencyWindow is how long a key's response is replayed.
	idempotencyWindow = 24 * time.Hour
	// idempotencyStale is how long a request may hold its key before
	// another may take it over: the process handling it died.
	idempotencyStale = 2 * time.Minute
)

// replayedHeaders are the response headers stored with a response and sent
// again on a replay. Rate-limit headers are not: they describe the retry.
var replayedHeaders = []string{echo.HeaderContentType, echo.HeaderLocation, headerRequestID}

// validUUID reports whether s is a UUID in its 8-4-4-4-12 hex form.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// fingerprint identifies a request for the reuse check: the API key that
// sent it, method, path with query, and the body with insignificant
// whitespace removed. A response is replayed only to the key it answered:
// another key of the organisation (a publishable key in a browser) sending
// the same Idempotency-Key and body is told the key is reused, and never
// sees what a secret key was answered.
func fingerprint(keyID string, r *http.Request, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(keyID))
	h.Write([]byte{0})
	h.Write([]byte(r.Method))
	h.Write([]byte{0})
	h.Write([]byte(r.URL.RequestURI()))
	h.Write([]byte{0})
	var compact bytes.Buffer
	if json.Compact(&compact, body) == nil {
		h.Write(compact.Bytes())
	} else {
		h.Write(body)
	}
	return h.Sum(nil)
}

// capture tees a response so it can be stored.
type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *capture) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *capture) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// idempotent applies the Idempotency-Key rules to a POST operation.
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Header.Get(headerIdempotencyKey)
		switch {
		case key == "":
			return invalid("header."+headerIdempotencyKey, "is required on every POST: send a UUID generated for this request")
		case !validUUID(key):
			return invalid("header."+headerIdempotencyKey, "must be a UUID such as 5f0c6b8e-3c1a-4f4e-9d55-2b8f7c1e0a42")
		}
		key = strings.ToLower(key)
		raw, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
		if err != nil {
			return newError(problem.BadRequest, "The body could not be read: %v.", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(raw))

		t := tenant(c)
		now := s.now()
		rec := cloud.IdempotencyRecord{Tenant: t, Key: key, Owner: newOwner(), Fingerprint: fingerprint(principal(c).Key.ID, req, raw),
			Method: req.Method, Path: req.URL.Path, CreatedAt: now}
		ctx := req.Context()
		// What follows the handler must finish even if the client went away.
		after := context.WithoutCancel(ctx)
		held, err := s.svc.Store().ClaimIdempotencyKey(ctx, rec, now.Add(-idempotencyStale), now.Add(-idempotencyWindow))
		if err != nil {
			return err
		}
		if held != nil {
			return s.replay(c, held, rec)
		}

		done := false
		defer func() {
			if !done { // a panic: let the request be retried with the key
				_ = s.svc.Store().ReleaseIdempotencyKey(after, t, key, rec.Owner)
			}
		}()
		w := &capture{ResponseWriter: c.Response().Writer}
		c.Response().Writer = w
		if err := next(c); err != nil {
			c.Error(err)
		}
		c.Response().Writer = w.ResponseWriter
		done = true

		switch w.status {
		case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable:
			err = s.svc.Store().ReleaseIdempotencyKey(after, t, key, rec.Owner)
		default:
			resp := cloud.StoredResponse{Status: w.status, Header: map[string]string{}, Body: w.body.Bytes()}
			for _, h := range replayedHeaders {
				if v := c.Response().Header().Get(h); v != "" {
					resp.Header[h] = v
				}
			}
			err = s.svc.Store().CompleteIdempotencyKey(after, t, key, rec.Owner, resp)
		}
		if err != nil {
			s.log.Error("store idempotent response", "err", err, "request_id", requestID(c))
		}
		return nil
	}
}

// replay answers a request whose key is already held.
func (s *Server) replay(c echo.Context, held *cloud.IdempotencyRecord, rec cloud.IdempotencyRecord) error {
	if !bytes.Equal(held.Fingerprint, rec.Fingerprint) {
		return newError(problem.IdempotencyKeyReused, "This Idempotency-Key was used in the last 24 hours for %s %s with a different request or API key; use a new key.", held.Method, held.Path)
	}
	if !held.Done {
		return newError(problem.Conflict, "A request with this Idempotency-Key is still being processed; retry it shortly with the same key.")
	}
	h := c.Response().Header()
	for k, v := range held.Response.Header {
		h.Set(k, v)
	}
	h.Set(headerReplayed, "true")
	c.Response().WriteHeader(held.Response.Status)
	_, err := c.Response().Write(held.Response.Body)
	return err
}

func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
