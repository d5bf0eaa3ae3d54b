package storedoc

import (
	"fmt"
	"strings"

	"github.com/svc-vms/svc/cloud/kek"
)

// SealedColumn is a column whose values the stores keep sealed with the
// key-encryption key (cloud/kek): secrets the cloud must read back to use
// (to sign passes, webhook deliveries, pass links, cursors), as opposed to
// API keys and edge passwords, of which only a hash is kept.
type SealedColumn struct {
	Table, Column string
	// Keys are the columns that name a row, in the order AD takes them.
	Keys []string
	// Text is true for a text column, false for a byte column.
	Text bool
	// Nullable columns hold NULL for no value, which is not sealed.
	Nullable bool
}

// AD is the additional data that binds a sealed value to its row and
// column: a value copied to another row or column does not open.
func (c SealedColumn) AD(key ...string) string {
	return c.Table + "." + c.Column + ":" + strings.Join(key, ":")
}

// The sealed columns, by table.
var (
	// PassKeyPrivate is a pass-signing key's Ed25519 private key, keyed
	// by organisation, mode and key ID.
	PassKeyPrivate = SealedColumn{Table: "pass_keys", Column: "private", Keys: []string{"org_id", "mode", "id"}}
	// WebhookSecret and WebhookPrevSecret are an endpoint's signing
	// secrets (whsec_...), keyed by endpoint ID.
	WebhookSecret     = SealedColumn{Table: "webhook_endpoints", Column: "secret", Keys: []string{"id"}, Text: true}
	WebhookPrevSecret = SealedColumn{Table: "webhook_endpoints", Column: "prev_secret", Keys: []string{"id"}, Text: true, Nullable: true}
	// ServerSecret is a named server secret (pass-link key, cursor key,
	// the cloud's broker password).
	ServerSecret = SealedColumn{Table: "secrets", Column: "value", Keys: []string{"name"}}
	// IdempotencyBody is a POST's stored response, replayed for 24 hours:
	// it may hold a secret shown once (a webhook endpoint's whsec_, a
	// rotated one), so it is sealed like one. Keyed by organisation, mode
	// and Idempotency-Key.
	IdempotencyBody = SealedColumn{Table: "idempotency_keys", Column: "body", Keys: []string{"org_id", "mode", "key"}}
)

// SealedColumns are every sealed column: what a store re-seals when it
// opens (plain values from before sealing, or values under an older KEK).
var SealedColumns = []SealedColumn{PassKeyPrivate, WebhookSecret, WebhookPrevSecret, ServerSecret, IdempotencyBody}

// Seal returns v sealed for the row named by key.
func (c SealedColumn) Seal(r *kek.Ring, v []byte, key ...string) []byte {
	return r.Seal(c.AD(key...), v)
}

// SealString is Seal for a text column.
func (c SealedColumn) SealString(r *kek.Ring, v string, key ...string) string {
	return string(c.Seal(r, []byte(v), key...))
}

// Open returns the plaintext of the row's sealed value, or an error naming
// the row and wrapping kek's when it does not open.
func (c SealedColumn) Open(r *kek.Ring, v []byte, key ...string) ([]byte, error) {
	plain, err := r.Open(c.AD(key...), v)
	if err != nil {
		return nil, c.rowError(err, key)
	}
	return plain, nil
}

// OpenString is Open for a text column.
func (c SealedColumn) OpenString(r *kek.Ring, v string, key ...string) (string, error) {
	b, err := c.Open(r, []byte(v), key...)
	return string(b), err
}

// Reseal is kek.Ring.Reseal for the row, with an error naming it.
func (c SealedColumn) Reseal(r *kek.Ring, v []byte, key ...string) ([]byte, bool, error) {
	out, changed, err := r.Reseal(c.AD(key...), v)
	if err != nil {
		return nil, false, c.rowError(err, key)
	}
	return out, changed, nil
}

func (c SealedColumn) rowError(err error, key []string) error {
	return fmt.Errorf("%s.%s of %s: %w", c.Table, c.Column, strings.Join(key, " "), err)
}

// Arg is a sealed value as its column takes it: text or bytes (a STRICT
// SQLite table, or a PostgreSQL parameter's type, refuses the other).
func (c SealedColumn) Arg(v []byte) any {
	if c.Text {
		return string(v)
	}
	return v
}
