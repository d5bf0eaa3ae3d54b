package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// Page sizes and the cursor's length limit, from the spec.
const (
	defaultLimit   = 25
	maxLimit       = 100
	maxCursorLen   = 512
	cursorMACBytes = 16
)

// cursors seals list positions into opaque, tamper-evident strings. A
// cursor is bound to the tenant and the list's filters: used elsewhere it is
// rejected rather than silently returning another list's rows.
type cursors struct {
	key []byte
}

// seal returns the cursor for the position after p, for the list named by
// scope (tenant, operation and filters).
func (cs cursors) seal(p cloud.Position, scope string) string {
	buf := make([]byte, 8, 8+len(p.ID)+cursorMACBytes)
	binary.BigEndian.PutUint64(buf, uint64(p.CreatedAt.UnixMicro()))
	buf = append(buf, p.ID...)
	buf = append(buf, cs.mac(buf, scope)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// open checks a cursor and returns its position; ok is false for anything
// this server did not issue for this scope.
func (cs cursors) open(s, scope string) (cloud.Position, bool) {
	buf, ok := decodeCursor(s)
	if !ok || len(buf) < 8+cursorMACBytes {
		return cloud.Position{}, false
	}
	data, mac := buf[:len(buf)-cursorMACBytes], buf[len(buf)-cursorMACBytes:]
	if !hmac.Equal(mac, cs.mac(data, scope)) {
		return cloud.Position{}, false
	}
	return cloud.Position{
		CreatedAt: time.UnixMicro(int64(binary.BigEndian.Uint64(data[:8]))).UTC(),
		ID:        string(data[8:]),
	}, true
}

// decodeCursor reads base64url without padding, strictly: a cursor has one
// text form, the one seal wrote. The decoder alone would skip inserted
// line breaks and ignore the unused bits of the last character, so several
// texts would open as one cursor; encoding the bytes again and comparing
// refuses every text but the one.
func decodeCursor(s string) ([]byte, bool) {
	enc := base64.RawURLEncoding.Strict()
	buf, err := enc.DecodeString(s)
	if err != nil || enc.EncodeToString(buf) != s {
		return nil, false
	}
	return buf, true
}

func (cs cursors) mac(data []byte, scope string) []byte {
	h := hmac.New(sha256.New, cs.key)
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum(nil)[:cursorMACBytes]
}

// page reads limit and cursor from q for a list whose filters are scope.
func (s *Server) page(q *query, scope string) cloud.Page {
	p := cloud.Page{Limit: defaultLimit}
	if v, ok := q.get("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			q.errs.add("query.limit", "must be an integer from 1 to %d", maxLimit)
		} else {
			p.Limit = n
		}
	}
	if v, ok := q.get("cursor"); ok {
		if len(v) > maxCursorLen {
			q.errs.add("query.cursor", "must be at most %d characters", maxCursorLen)
		} else if pos, ok := s.cursors.open(v, scope); !ok {
			q.errs.add("query.cursor", "is not a cursor this list returned: pass next_cursor from the previous page unchanged, with the same filters")
		} else {
			p.After = &pos
		}
	}
	return p
}

// listResponse is the page envelope every list returns.
type listResponse[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

// pageOf builds the envelope; last gives the position of a row.
func pageOf[R any, T any](s *Server, rows []R, more bool, scope string, pos func(R) cloud.Position, render func(R) T) listResponse[T] {
	out := listResponse[T]{Data: make([]T, len(rows)), HasMore: more}
	for i, r := range rows {
		out.Data[i] = render(r)
	}
	if more && len(rows) > 0 {
		c := s.cursors.seal(pos(rows[len(rows)-1]), scope)
		out.NextCursor = &c
	}
	return out
}
