package cache

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// migrateJSON turns a schema 1 file into schema 2 in the caller's
// transaction: it rewrites the visits and the cloud's versions of pending
// visits from the protocol's JSON into the binary form and sets the
// schema. Each value is decoded as strictly as Open decodes: one that does
// not decode, or is filed under another visit's ID, stops the migration
// with a *CorruptError naming it, and the transaction leaves the file as
// it was. The bucket is rebuilt in key order into full pages, as a
// snapshot writes it. The JSON pages become free pages that later writes
// reuse; bbolt never shrinks a file.
func migrateJSON(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketVisits, bucketCloud} {
		if err := migrateBucket(tx, name); err != nil {
			return fmt.Errorf("migrate schema %s to %s: %w", schemaJSON, schemaVersion, err)
		}
	}
	return tx.Bucket(bucketMeta).Put(metaSchema, []byte(schemaVersion))
}

func migrateBucket(tx *bolt.Tx, name []byte) error {
	type kv struct{ k, v []byte }
	var rows []kv
	err := tx.Bucket(name).ForEach(func(k, raw []byte) error {
		v, err := decodeVisitJSON(raw)
		if err == nil && v.ID != string(k) {
			err = fmt.Errorf("holds visit %s", v.ID)
		}
		var b []byte
		if err == nil {
			v = normalize(v)
			b, err = encodeVisit(&v)
		}
		if err != nil {
			return corrupt(name, k, err)
		}
		rows = append(rows, kv{slices.Clone(k), b})
		if len(rows)%dropEvery == 0 {
			_ = dropPages(tx) // nothing allocated yet; see loadVisits
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tx.DeleteBucket(name); err != nil {
		return fmt.Errorf("empty bucket %s: %w", name, err)
	}
	_ = dropPages(tx) // freeing the JSON pages read every one of them again
	b, err := tx.CreateBucket(name)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	b.FillPercent = 0.9 // rows come in key order, from the cursor
	for _, r := range rows {
		if err := b.Put(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

// migrateKiosk turns a file of schema 1 (after migrateJSON) or 2 into
// schema 3 in the caller's transaction: the buckets of teams and visit
// types exist already (init creates them), and its visits lack what the
// reception kiosk shows, so the feed sequence goes back to 0 and the
// edge's next resync asks for the whole feed, which the cloud answers
// with a snapshot that replaces every visit. The outbox, the counter and
// the last punches stay.
func migrateKiosk(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(metaSeq, u64(0)); err != nil {
		return fmt.Errorf("migrate to schema %s: %w", schemaVersion, err)
	}
	return meta.Put(metaSchema, []byte(schemaVersion))
}
