package cloud

import (
	"context"
	"time"
)

// IdempotencyWindow is how long the response to a request made under an
// Idempotency-Key is replayed for a retry with the same key.
const IdempotencyWindow = 24 * time.Hour

// IdempotencyRecord is a POST request's response stored under its
// Idempotency-Key (docs/decisions.md, "Idempotency").
type IdempotencyRecord struct {
	Tenant      Tenant
	Key         string
	Fingerprint []byte // hash of method, path and body
	Method      string
	Path        string
	RequestID   string // the request that stored it
	CreatedAt   time.Time
	Response    StoredResponse
}

// StoredResponse is a response kept for replay.
type StoredResponse struct {
	Status int
	Header map[string]string
	Body   []byte
}

// A Reply carries the response of one request made under an
// Idempotency-Key to the store write that makes the request's action, so
// that the action and its replayable response commit in one transaction:
// at every instant either nothing happened or both are durable.
//
// The transport puts it in the request's context (WithReply) with the
// record to store and says, with Expect, how it renders its response from
// the object the action answers with. The service hands that object to
// the reply (respond) inside its write, before the store commits: for a
// create before the write, for an update inside the store's fn. Every
// store write transaction inserts what TakeReply returns before it commits
// and reports its commit with WriteCommitted.
//
// A Reply belongs to one request and is used by one goroutine at a time.
type Reply struct {
	rec     IdempotencyRecord
	render  func(obj any) (StoredResponse, bool, error)
	ready   bool // rec.Response is rendered
	stored  bool // a write committed it
	commits int  // write transactions committed for the request
	others  int  // of those, the ones the response did not ride with
}

// NewReply returns the reply slot of a request to store as rec.
func NewReply(rec IdempotencyRecord) *Reply { return &Reply{rec: rec} }

type replyKey struct{}

// WithReply returns ctx carrying r.
func WithReply(ctx context.Context, r *Reply) context.Context {
	return context.WithValue(ctx, replyKey{}, r)
}

func replyOf(ctx context.Context) *Reply {
	r, _ := ctx.Value(replyKey{}).(*Reply)
	return r
}

// Expect sets how the request's response is made from the object its
// action answers with. render answers false for an object it does not
// render (another write of the same request): that write then stores no
// response.
func (r *Reply) Expect(render func(obj any) (StoredResponse, bool, error)) { r.render = render }

// Set gives the reply its response directly: for a write whose response
// is known before it runs (and for tests of stores).
func (r *Reply) Set(resp StoredResponse) {
	if !r.stored {
		r.rec.Response, r.ready = resp, true
	}
}

// Response returns the response the action rendered, if it did.
func (r *Reply) Response() (StoredResponse, bool) { return r.rec.Response, r.ready }

// Stored reports whether a write transaction committed the response.
func (r *Reply) Stored() bool { return r.stored }

// Commits returns how many write transactions committed for the request,
// and how many of them committed without the response: writes a crash
// could separate from the stored response (a retry repeats a write made
// before it, or replays a response whose later write was lost).
func (r *Reply) Commits() (all, without int) { return r.commits, r.others }

// apart returns ctx for a write that is not the request's action, made
// apart from it: one that any request may be first to make and a retry
// finds made (the tenant's first pass-signing key, closing the periods
// that have ended). It carries no reply, so that write neither stores the
// response nor counts as a write of the request.
func apart(ctx context.Context) context.Context {
	return context.WithValue(ctx, replyKey{}, (*Reply)(nil))
}

// respond renders obj as the response of the request ctx carries, for
// the write under way to store. Services call it inside the write that
// makes the action, with the object they will return. It does nothing
// without a reply, once the response is stored, or for an object the
// transport does not render; its error aborts the write.
func respond(ctx context.Context, obj any) error {
	r := replyOf(ctx)
	if r == nil || r.render == nil || r.stored {
		return nil
	}
	resp, ok, err := r.render(obj)
	if err != nil || !ok {
		return err
	}
	r.rec.Response, r.ready = resp, true
	return nil
}

// TakeReply returns the record, with its response, that the write
// transaction ctx goes with must insert before it commits: nil when ctx
// carries no reply, when the response is not rendered yet or when an
// earlier write stored it. A key that a live record already holds aborts
// the write with an error wrapping ErrIdempotencyKeyUsed (records older
// than IdempotencyWindow are replaced). The store passes what it took to
// WriteCommitted once it has committed.
func TakeReply(ctx context.Context) *IdempotencyRecord {
	r := replyOf(ctx)
	if r == nil || !r.ready || r.stored {
		return nil
	}
	rec := r.rec
	return &rec
}

// WriteCommitted records that a write transaction for ctx's request
// committed, with took, what it took from TakeReply.
func WriteCommitted(ctx context.Context, took *IdempotencyRecord) {
	r := replyOf(ctx)
	if r == nil {
		return
	}
	r.commits++
	if took != nil {
		r.stored = true
	} else {
		r.others++
	}
}
