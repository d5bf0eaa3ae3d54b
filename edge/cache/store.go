package cache

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/svc-vms/svc/sync/protocol"
)

// Buckets of the file. Values are JSON of the protocol types, so what the
// cache stores is exactly what the wire carries and decodes as strictly.
var (
	bucketMeta   = []byte("meta")   // the names below
	bucketVisits = []byte("visits") // visit ID → protocol.Visit
	bucketGates  = []byte("gates")  // gate ID → protocol.Gate
	bucketKeys   = []byte("keys")   // key ID → protocol.Key
	bucketOutbox = []byte("outbox") // counter, 8 bytes big-endian → outboxRow
	bucketFacts  = []byte("facts")  // fact ID → counter, 8 bytes big-endian: Ack's index
)

// Keys of the meta bucket.
var (
	metaSchema   = []byte("schema")    // schemaVersion
	metaEdgeID   = []byte("edge_id")   // the edge the file belongs to
	metaSeq      = []byte("seq")       // last change applied, 8 bytes big-endian
	metaCounter  = []byte("counter")   // last fact counter assigned, 8 bytes big-endian
	metaSyncedAt = []byte("synced_at") // RFC 3339 text
	metaSettings = []byte("settings")  // protocol.Settings
)

const schemaVersion = "1"

// outboxRow is a fact waiting for the cloud's acknowledgement, with the
// visits Record changed along with it: while the row exists those visits'
// local state outranks the cloud's (the conflict rule, doc.go).
type outboxRow struct {
	Fact   json.RawMessage `json:"fact"`             // protocol.Encode of the fact
	Visits []string        `json:"visits,omitempty"` // visit IDs
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func readU64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%d bytes, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// epoch stands in for a change's time where the cache wraps an object in
// a one-change batch; the protocol only checks that seq is not 0.
var epoch = time.Unix(0, 0).UTC()

// check validates one object the way the wire does. The protocol exports
// its checks only through Encode, so the object travels as a one-change
// batch.
func check(c protocol.Change) error {
	c.Seq, c.At = 1, epoch
	_, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{c}})
	return err
}

// decodeObject reads one stored object strictly and validates it, by
// decoding it inside a one-change batch: one pass of the protocol's own
// decoder, unknown fields refused.
func decodeObject(field string, raw []byte) (*protocol.Change, error) {
	const head = `{"v":1,"changes":[{"seq":1,"at":"1970-01-01T00:00:00Z","`
	b := make([]byte, 0, len(head)+len(field)+len(raw)+8)
	b = append(b, head...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = append(b, raw...)
	b = append(b, "}]}"...)
	var batch protocol.Batch
	if err := protocol.Decode(b, &batch); err != nil {
		return nil, err
	}
	if len(batch.Changes) != 1 {
		return nil, errors.New("not one object")
	}
	return &batch.Changes[0], nil
}

func decodeVisit(raw []byte) (protocol.Visit, error) {
	c, err := decodeObject("visit", raw)
	if err != nil {
		return protocol.Visit{}, err
	}
	if c.Visit == nil {
		return protocol.Visit{}, errors.New("not a visit")
	}
	return *c.Visit, nil
}

func decodeGate(raw []byte) (protocol.Gate, error) {
	c, err := decodeObject("gate", raw)
	if err != nil {
		return protocol.Gate{}, err
	}
	if c.Gate == nil {
		return protocol.Gate{}, errors.New("not a gate")
	}
	return *c.Gate, nil
}

func decodeKey(raw []byte) (protocol.Key, error) {
	c, err := decodeObject("key", raw)
	if err != nil {
		return protocol.Key{}, err
	}
	if c.Key == nil {
		return protocol.Key{}, errors.New("not a key")
	}
	return *c.Key, nil
}

func decodeSettings(raw []byte) (protocol.Settings, error) {
	c, err := decodeObject("settings", raw)
	if err != nil {
		return protocol.Settings{}, err
	}
	if c.Settings == nil {
		return protocol.Settings{}, errors.New("not settings")
	}
	return *c.Settings, nil
}

// decodeRow reads an outbox row and its fact strictly.
func decodeRow(raw []byte) (outboxRow, protocol.Fact, error) {
	var row outboxRow
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&row); err != nil {
		return row, protocol.Fact{}, err
	}
	var f protocol.Fact
	if err := protocol.Decode(row.Fact, &f); err != nil {
		return row, f, err
	}
	return row, f, nil
}

func corrupt(bucket []byte, key []byte, err error) error {
	k := string(key)
	if bytes.Equal(bucket, bucketOutbox) && len(key) == 8 {
		k = strconv.FormatUint(binary.BigEndian.Uint64(key), 10)
	}
	return &CorruptError{Bucket: string(bucket), Key: k, Err: err}
}
