package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/svc-vms/svc/cloud"
)

// Reads ahead (cloud.Store.ReadAhead; docs/decisions.md, "PostgreSQL:
// BEGIN and COMMIT in the statements' round trips (issue 20)"): the reads
// that plan a visit, made in one batch at the start of the Atomic call
// instead of one round trip each. Each read named keeps its answer (row
// or error) in the call's pipeTx until the read is asked, once; any other
// statement of the call first drops them all, so a read never answers
// from before a write.

type aheadKind uint8

const (
	aheadSite aheadKind = iota
	aheadPeople
	aheadVisitType
	aheadVisitor
)

// aheadKey names one read: its kind, tenant and arguments.
type aheadKey struct {
	kind      aheadKind
	org, mode string
	args      string
}

func keyAhead(kind aheadKind, t cloud.Tenant, args ...string) aheadKey {
	return aheadKey{kind: kind, org: t.OrgID, mode: string(t.Mode), args: strings.Join(args, "\x00")}
}

type aheadRead struct {
	v   any
	err error
}

// oneRow makes the reader of a read by key's row as its Store method
// returns it: ErrNotFound for no row, other errors as "get <what>: err".
func oneRow[V any](scan func(scanner, cloud.Tenant) (V, error), t cloud.Tenant, what string) func(pgx.Row) (V, error) {
	return func(row pgx.Row) (V, error) {
		v, err := scan(row, t)
		if errors.Is(err, pgx.ErrNoRows) {
			var zero V
			return zero, cloud.ErrNotFound
		}
		if err != nil {
			var zero V
			return zero, fmt.Errorf("%s: %w", what, err)
		}
		return v, nil
	}
}

// queueAhead queues one read of ReadAhead's batch, keeping its answer in
// got under k.
func queueAhead[V any](b *pgx.Batch, got map[aheadKey]aheadRead, k aheadKey, read func(pgx.Row) (V, error), sql string, args ...any) {
	b.Queue(sql, args...).QueryRow(func(row pgx.Row) error {
		v, err := read(rowc{row}) // pgx hands the batch's own row: classify as db does
		got[k] = aheadRead{v, err}
		return nil // the read's answer, not the batch's failure
	})
}

// readByKey is a store method's read of one row by its ID or key: the
// answer read ahead when there is one, else qByKey's row read by read.
func readByKey[V any](ctx context.Context, s *Store, kind aheadKind, t cloud.Tenant, key, qByKey string,
	read func(cloud.Tenant) func(pgx.Row) (V, error)) (V, error) {
	if v, err, ok := takeAhead[V](s.bound(ctx), kind, t, key); ok {
		return v, err
	}
	return read(t)(s.pool.QueryRow(ctx, qByKey, t.OrgID, string(t.Mode), key))
}

// takeAhead returns, and forgets, the answer read ahead for this read in
// the Atomic call b, if there is one.
func takeAhead[V any](b *boundTx, kind aheadKind, t cloud.Tenant, args ...string) (V, error, bool) {
	var zero V
	if b == nil || b.tx.ahead == nil {
		return zero, nil, false
	}
	k := keyAhead(kind, t, args...)
	r, ok := b.tx.ahead[k]
	if !ok {
		return zero, nil, false
	}
	delete(b.tx.ahead, k)
	if r.err != nil {
		return zero, r.err, true
	}
	return r.v.(V), nil, true
}

// ReadAhead implements cloud.Store: the reads named, in one round trip
// (with BEGIN in front when they are the call's first statement).
func (s *Store) ReadAhead(ctx context.Context, t cloud.Tenant, r cloud.ReadsAhead) {
	b := s.bound(ctx)
	if b == nil {
		return
	}
	var batch pgx.Batch
	got := map[aheadKey]aheadRead{}
	var keys []aheadKey
	add := func(k aheadKey) aheadKey { keys = append(keys, k); return k }
	mode := string(t.Mode)
	if r.Site != "" {
		queueAhead(&batch, got, add(keyAhead(aheadSite, t, r.Site)), siteRead(t), qSite, t.OrgID, mode, r.Site)
	}
	if len(r.People) > 0 {
		k, read := add(keyAhead(aheadPeople, t, r.People...)), peopleRead(t)
		batch.Queue(qPeople, t.OrgID, mode, r.People).Query(func(rows pgx.Rows) error {
			v, err := read(rowsc{rows})
			got[k] = aheadRead{v, err}
			return nil
		})
	}
	if r.VisitType != "" {
		queueAhead(&batch, got, add(keyAhead(aheadVisitType, t, r.VisitType)), visitTypeRead(t), qVisitType, t.OrgID, mode, r.VisitType)
	}
	if q, arg, ok := findVisitor(r.VisitorEmail, r.VisitorPhone); ok {
		queueAhead(&batch, got, add(keyAhead(aheadVisitor, t, r.VisitorEmail, r.VisitorPhone)), findVisitorRead(t), q, t.OrgID, mode, arg)
	}
	if batch.Len() == 0 {
		return
	}
	if err := b.tx.SendBatch(ctx, &batch).Close(); err != nil {
		// The reads not answered get the batch's error, as they would
		// have on their own once the transaction failed.
		for _, k := range keys {
			if _, ok := got[k]; !ok {
				got[k] = aheadRead{err: classify(err)}
			}
		}
	}
	b.tx.ahead = got
}
