package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/problem"
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

// capture holds a response back until the middleware has settled what is
// stored under the request's key: a response lost to a concurrent request
// with the same key is replaced by that one's.
type capture struct {
	http.ResponseWriter
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *capture) Header() http.Header { return w.header }

func (w *capture) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *capture) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

func (w *capture) Flush() {}

// send writes the held response to the client.
func (w *capture) send() {
	h := w.ResponseWriter.Header()
	for k, v := range w.header {
		h[k] = v
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	h.Set(echo.HeaderContentLength, strconv.Itoa(w.body.Len()))
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(w.body.Bytes())
}

// stored returns the response as it is stored for replay.
func (w *capture) stored() cloud.StoredResponse {
	resp := cloud.StoredResponse{Status: w.status, Header: map[string]string{}, Body: bytes.Clone(w.body.Bytes())}
	for _, h := range replayedHeaders {
		if v := w.header.Get(h); v != "" {
			resp.Header[h] = v
		}
	}
	return resp
}

// inflight holds the keys of the requests this process is running, so a
// retry that reaches it while the first is still running gets 409
// conflict. A retry reaching another process runs; the unique key settles
// which one acts (docs/decisions.md, "Idempotency").
type inflight struct {
	mu   sync.Mutex
	keys map[inflightKey]struct{}
}

type inflightKey struct {
	t   cloud.Tenant
	key string
}

func (f *inflight) hold(t cloud.Tenant, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = map[inflightKey]struct{}{}
	}
	k := inflightKey{t, key}
	if _, held := f.keys[k]; held {
		return false
	}
	f.keys[k] = struct{}{}
	return true
}

func (f *inflight) release(t cloud.Tenant, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, inflightKey{t, key})
}

// unstored are the statuses whose responses are not stored: the same
// request may do better on a retry.
func unstored(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusInternalServerError || status == http.StatusServiceUnavailable
}

// idempotent applies the Idempotency-Key rules to a POST operation: a
// stored response is replayed; otherwise the operation runs with a
// cloud.Reply in its context, and its action's write transaction stores
// the response with the action (answer). A response no write stored (an
// error decided before acting, or one that rolled the action back) is
// stored in a transaction of its own, unless it is one of the unstored
// statuses.
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
		rec := cloud.IdempotencyRecord{Tenant: t, Key: key, Fingerprint: fingerprint(principal(c).Key.ID, req, raw),
			Method: req.Method, Path: req.URL.Path, RequestID: requestID(c), CreatedAt: now}
		if !s.held.hold(t, key) {
			noted(c).idempotency = "in_flight"
			return newError(problem.Conflict, "A request with this Idempotency-Key is still being processed; retry it shortly with the same key.")
		}
		defer s.held.release(t, key)
		store := s.svc.Store()
		ctx := req.Context()
		stored, err := store.IdempotencyRecord(ctx, t, key, now.Add(-cloud.IdempotencyWindow))
		switch {
		case err == nil:
			return s.replay(c, stored, rec)
		case !errors.Is(err, cloud.ErrNotFound):
			return err
		}

		reply := cloud.NewReply(rec)
		ctx = cloud.WithReply(ctx, reply)
		cloud.Fail(ctx, cloud.FailBeforeAction)
		c.SetRequest(req.WithContext(ctx))
		c.Set(ctxReply, reply)
		res := c.Response()
		w := &capture{ResponseWriter: res.Writer, header: res.Header().Clone()}
		res.Writer = w
		err = next(c)
		if err != nil && !errors.Is(err, cloud.ErrIdempotencyKeyUsed) && !reply.Stored() {
			c.Error(err)
		}
		res.Writer = w.ResponseWriter
		// What follows must finish even if the client went away, within
		// a deadline of its own.
		after, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()

		switch {
		case reply.Stored():
			if err != nil {
				// The action and its response are durable: that response
				// is the answer, now and on every retry.
				s.log.Error("after the action committed", "err", err, "request_id", requestID(c))
				return s.replayOwn(c, reply)
			}
		case errors.Is(err, cloud.ErrIdempotencyKeyUsed):
			// Another request with this key (in another process) stored
			// its response first; this one's action rolled back.
			return s.replayStored(after, c, rec)
		case unstored(w.status):
		default:
			if all, _ := reply.Commits(); all > 0 {
				s.log.Error("a write committed without the response stored with it", "writes", all,
					"status", w.status, "method", req.Method, "path", c.Path(), "request_id", requestID(c))
			}
			rec.Response = w.stored()
			switch err := store.PutIdempotencyRecord(after, rec); {
			case errors.Is(err, cloud.ErrIdempotencyKeyUsed):
				return s.replayStored(after, c, rec)
			case err != nil:
				s.log.Error("store idempotent response", "err", err, "request_id", requestID(c))
			}
		}
		if all, others := reply.Commits(); others > 0 {
			// The operations docs/decisions.md lists as two transactions.
			s.log.Debug("writes committed apart from the stored response", "writes", all, "apart", others,
				"method", req.Method, "path", c.Path(), "request_id", requestID(c))
		}
		w.send()
		if cloud.Failpoint != nil {
			if f, ok := w.ResponseWriter.(http.Flusher); ok {
				f.Flush() // so the client has the response when the failpoint stops the process
			}
			cloud.Fail(ctx, cloud.FailResponded)
		}
		return nil
	}
}

// replayOwn sends the response the request's own action stored.
func (s *Server) replayOwn(c echo.Context, reply *cloud.Reply) error {
	resp, _ := reply.Response()
	return writeStored(c, resp)
}

// replayStored answers with the record another request stored under the
// key meanwhile.
func (s *Server) replayStored(ctx context.Context, c echo.Context, rec cloud.IdempotencyRecord) error {
	held, err := s.svc.Store().IdempotencyRecord(ctx, rec.Tenant, rec.Key, rec.CreatedAt.Add(-cloud.IdempotencyWindow))
	if err != nil {
		return fmt.Errorf("replay the response stored meanwhile: %w", err)
	}
	return s.replay(c, held, rec)
}

// replay answers a request whose key holds a stored response.
func (s *Server) replay(c echo.Context, held cloud.IdempotencyRecord, rec cloud.IdempotencyRecord) error {
	if !bytes.Equal(held.Fingerprint, rec.Fingerprint) {
		noted(c).idempotency = "key_reused"
		return newError(problem.IdempotencyKeyReused, "This Idempotency-Key was used in the last 24 hours for %s %s with a different request or API key; use a new key.", held.Method, held.Path)
	}
	c.Response().Header().Set(headerReplayed, "true")
	noted(c).idempotency = "replayed"
	return writeStored(c, held.Response)
}

// writeStored sends a stored response.
func writeStored(c echo.Context, resp cloud.StoredResponse) error {
	h := c.Response().Header()
	for k, v := range resp.Header {
		h.Set(k, v)
	}
	c.Response().WriteHeader(resp.Status)
	_, err := c.Response().Write(resp.Body)
	return err
}

// answer sets, for the request's reply, how the operation's response is
// made from the object its action answers with (status, Location, body),
// so that the action's write transaction stores it with the action, and
// returns the function that sends it: byte for byte the response the
// action rendered for its transaction, or, when it rendered none (no
// Idempotency-Key, or a path that does not answer through the reply), the
// one rendered then.
func answer[O any](c echo.Context, make func(O) (status int, location string, body any)) func(O) error {
	rid := requestID(c)
	render := func(o O) (cloud.StoredResponse, error) {
		status, location, body := make(o)
		b, err := json.Marshal(body)
		if err != nil {
			return cloud.StoredResponse{}, fmt.Errorf("render response: %w", err)
		}
		h := map[string]string{echo.HeaderContentType: echo.MIMEApplicationJSON, headerRequestID: rid}
		if location != "" {
			h[echo.HeaderLocation] = location
		}
		// As echo's c.JSON encodes it: a newline after the value.
		return cloud.StoredResponse{Status: status, Header: h, Body: append(b, '\n')}, nil
	}
	reply, _ := c.Get(ctxReply).(*cloud.Reply)
	if reply != nil {
		reply.Expect(func(obj any) (cloud.StoredResponse, bool, error) {
			o, ok := obj.(O)
			if !ok {
				return cloud.StoredResponse{}, false, nil
			}
			resp, err := render(o)
			return resp, err == nil, err
		})
	}
	return func(o O) error {
		if reply != nil && reply.Stored() {
			resp, _ := reply.Response()
			return writeStored(c, resp)
		}
		resp, err := render(o)
		if err != nil {
			return err
		}
		return writeStored(c, resp)
	}
}

// answerOK and answerCreated are the usual shapes of answer's make: 200
// with the object, and 201 with its Location.
func answerOK[O, J any](render func(O) J) func(O) (int, string, any) {
	return func(o O) (int, string, any) { return http.StatusOK, "", render(o) }
}

func answerCreated[O, J any](location func(O) string, render func(O) J) func(O) (int, string, any) {
	return func(o O) (int, string, any) { return http.StatusCreated, location(o), render(o) }
}
