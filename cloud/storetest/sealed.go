package storetest

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/shared/ids"
)

// SealingDB is raw access to one database, for what the Store interface
// cannot show: how its secrets lie at rest.
type SealingDB struct {
	// Open opens a Store on the database with keys; each Store is closed
	// before the next is opened.
	Open func(t testing.TB, keys *kek.Ring) (Resealer, error)
	// Value reads one value; the query uses ? placeholders.
	Value func(t testing.TB, query string, args ...any) []byte
	// Exec runs a statement; the query uses ? placeholders.
	Exec func(t testing.TB, query string, args ...any)
}

// Resealer is a Store that says how many secrets it sealed when it opened.
type Resealer interface {
	cloud.Store
	Resealed() int
	Close() error
}

// RunSealing checks that a store keeps every secret of
// storedoc.SealedColumns sealed with its KEK, bound to its row; that a
// database from before sealing has its plain secrets sealed once, when it
// opens; and that a ring with a new KEK first re-seals everything under it,
// after which the old KEK is not needed.
func RunSealing(t *testing.T, db SealingDB) {
	k1, k2 := kek.Generate(), kek.Generate()
	ring := func(keys ...[]byte) *kek.Ring {
		r, err := kek.New(keys...)
		require.NoError(t, err)
		return r
	}
	open := func(keys *kek.Ring) Resealer {
		t.Helper()
		s, err := db.Open(t, keys)
		require.NoError(t, err)
		return s
	}
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	tn := cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeLive}
	_, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	pk := cloud.PassKey{ID: "0badcafe", Tenant: tn, Private: priv, CreatedAt: now}
	ep := cloud.WebhookEndpoint{ID: ids.New("we"), Tenant: tn, URL: "https://hooks.example.com/svc", EventTypes: []string{"*"},
		Secret: "whsec_dGhlIGN1cnJlbnQgc2VjcmV0IG9mIHRoZSBlbmRwb2ludA==", PrevSecret: "whsec_dGhlIHByZXZpb3VzIHNlY3JldA==",
		PrevUntil: ptr(now.Add(time.Hour)), CreatedAt: now, UpdatedAt: now}
	server := []byte("a server secret of 32 bytes.....")
	// A POST /webhook-endpoints answer, kept for replay: it shows the
	// endpoint's secret.
	idem := cloud.IdempotencyRecord{Tenant: tn, Key: "5f0c6b8e-3c1a-4f4e-9d55-2b8f7c1e0a42", Fingerprint: []byte{1, 2, 3},
		Method: "POST", Path: "/v1/webhook-endpoints", RequestID: ids.New(ids.Request), CreatedAt: now,
		Response: cloud.StoredResponse{Status: 201, Header: map[string]string{}, Body: []byte(`{"secret":"` + ep.Secret + `"}`)}}

	// Each sealed column of the rows made here: its select, and the
	// plaintext it must never hold at rest.
	type cell struct {
		col   storedoc.SealedColumn
		where string
		key   []any
		plain []byte
	}
	cells := []cell{
		{storedoc.PassKeyPrivate, `org_id = ? AND mode = ? AND id = ?`, []any{tn.OrgID, string(tn.Mode), pk.ID}, priv},
		{storedoc.WebhookSecret, `id = ?`, []any{ep.ID}, []byte(ep.Secret)},
		{storedoc.WebhookPrevSecret, `id = ?`, []any{ep.ID}, []byte(ep.PrevSecret)},
		{storedoc.ServerSecret, `name = ?`, []any{"sealing-test"}, server},
		{storedoc.IdempotencyBody, `org_id = ? AND mode = ? AND key = ?`, []any{tn.OrgID, string(tn.Mode), idem.Key}, idem.Response.Body},
	}
	require.Len(t, cells, len(storedoc.SealedColumns), "every sealed column is checked")
	value := func(c cell) []byte {
		return db.Value(t, fmt.Sprintf(`SELECT %s FROM %s WHERE %s`, c.col.Column, c.col.Table, c.where), c.key...)
	}
	requireSealed := func(under []byte) {
		t.Helper()
		for _, c := range cells {
			v := value(c)
			require.True(t, bytes.HasPrefix(v, []byte(kek.Prefix+kek.ID(under)+".")), "%s.%s is sealed under %s: %q",
				c.col.Table, c.col.Column, kek.ID(under), v)
			require.False(t, bytes.Contains(v, c.plain), "%s.%s holds no plaintext", c.col.Table, c.col.Column)
		}
	}
	requireReads := func(s cloud.Store) {
		t.Helper()
		keys, err := s.PassKeys(ctx, tn)
		require.NoError(t, err)
		require.Len(t, keys, 1)
		require.Equal(t, []byte(priv), keys[0].Private)
		got, err := s.WebhookEndpoint(ctx, tn, ep.ID)
		require.NoError(t, err)
		require.Equal(t, ep.Secret, got.Secret)
		require.Equal(t, ep.PrevSecret, got.PrevSecret)
		v, err := s.Secret(ctx, "sealing-test", func() []byte { return []byte("another value") })
		require.NoError(t, err)
		require.Equal(t, server, v)
		rec, err := s.IdempotencyRecord(ctx, tn, idem.Key, now.Add(-time.Hour))
		require.NoError(t, err)
		require.Equal(t, idem.Response.Body, rec.Response.Body)
	}

	s := open(ring(k1))
	require.Zero(t, s.Resealed(), "a new database has nothing to seal")
	require.NoError(t, s.CreatePassKey(ctx, pk))
	require.NoError(t, s.CreateWebhookEndpoint(ctx, ep))
	_, err = s.Secret(ctx, "sealing-test", func() []byte { return server })
	require.NoError(t, err)
	require.NoError(t, s.PutIdempotencyRecord(ctx, idem))
	requireReads(s)
	requireSealed(k1)
	require.NoError(t, s.Close())

	// A database from before sealing: the same rows in plain text.
	for _, c := range cells {
		db.Exec(t, fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s`, c.col.Table, c.col.Column, c.where), append([]any{c.col.Arg(c.plain)}, c.key...)...)
	}
	s = open(ring(k1))
	require.Equal(t, len(cells), s.Resealed(), "opening seals the plain values")
	requireSealed(k1)
	requireReads(s)
	require.NoError(t, s.Close())
	s = open(ring(k1))
	require.Zero(t, s.Resealed(), "once")
	require.NoError(t, s.Close())

	// A new KEK first, the old one after it: everything moves to the new.
	s = open(ring(k2, k1))
	require.Equal(t, len(cells), s.Resealed())
	requireSealed(k2)
	require.NoError(t, s.Close())
	s = open(ring(k2))
	require.Zero(t, s.Resealed())
	requireReads(s)
	require.NoError(t, s.Close())

	_, err = db.Open(t, ring(kek.Generate()))
	require.ErrorIs(t, err, kek.ErrUnknownKEK, "a store does not start without the KEK its secrets are under")

	// A sealed value copied to another row or column does not open.
	db.Exec(t, `UPDATE webhook_endpoints SET prev_secret = secret WHERE id = ?`, ep.ID)
	_, err = db.Open(t, ring(k2))
	require.ErrorIs(t, err, kek.ErrOpen, "the secret copied to prev_secret")
}
