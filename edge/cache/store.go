package cache

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/svc-vms/svc/sync/protocol"
)

// Buckets of the file. Visits are in the binary form of codec.go; the
// other values are JSON of the protocol types, decoded as strictly as the
// wire's.
var (
	bucketMeta   = []byte("meta")   // the names below
	bucketVisits = []byte("visits") // visit ID → encodeVisit
	bucketGates  = []byte("gates")  // gate ID → protocol.Gate
	bucketKeys   = []byte("keys")   // key ID → protocol.Key
	bucketOutbox = []byte("outbox") // counter, 8 bytes big-endian → outboxRow
	bucketFacts  = []byte("facts")  // fact ID → counter, 8 bytes big-endian: Ack's index
	bucketCloud  = []byte("cloud")  // visit ID → encodeVisit: the cloud's latest version of a pending visit, as received
	// Buckets a file of schema 2 gains when this build opens it (they
	// start empty: the people arrive with the feed or a snapshot).
	bucketPeople  = []byte("people")  // person ID → protocol.Person
	bucketPunches = []byte("punches") // person ID → protocol.Encode of the last punch fact recorded here
	// Buckets of schema 3, for the reception kiosk.
	bucketTeams = []byte("teams")       // team ID → protocol.Team
	bucketTypes = []byte("visit_types") // key → protocol.VisitType
)

// Keys of the meta bucket.
var (
	metaSchema   = []byte("schema")    // schemaVersion
	metaEdgeID   = []byte("edge_id")   // the edge the file belongs to
	metaSeq      = []byte("seq")       // last change applied, 8 bytes big-endian
	metaCounter  = []byte("counter")   // last fact counter assigned, 8 bytes big-endian
	metaSyncedAt = []byte("synced_at") // RFC 3339 text
	metaSettings = []byte("settings")  // protocol.Settings
	// metaHardware is the hardware the cloud sent for this edge, as
	// protocol.EdgeHardware (issue 17); absent when it sent none. A key of
	// the meta bucket, not a bucket: a build older than it reads the file
	// unchanged (it ignores the key), so it needed no schema of its own.
	metaHardware = []byte("hardware")
)

// schemaVersion is the form of the file this build writes. Schema 1 held
// visits as JSON; Open migrates such a file to 2 (migrate.go). A build
// that reads only 1 refuses a file of 2 by its schema, not by a visit.
//
// Schema 3 (issue 16) adds the buckets of teams and visit types and stores
// visits as visitV2, with what the reception kiosk shows. A file of schema
// 1 or 2 lacks that for every visit it holds, so Open sets its feed
// sequence back to 0 as it migrates (migrateKiosk): the edge then asks for
// the whole feed, and gets a snapshot, which brings everything.
const (
	schemaVersion = "3"
	schemaBinary  = "2"
	schemaJSON    = "1"
)

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

// check validates the one object a change holds the way the wire does.
func check(c protocol.Change) error {
	n := 0
	for _, set := range []bool{c.Visit != nil, c.Gate != nil, c.Settings != nil, c.Key != nil, c.Person != nil, c.Team != nil, c.VisitType != nil,
		c.Hardware != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("%w: a change holds %d objects; it holds exactly one", protocol.ErrInvalid, n)
	}
	switch {
	case c.Visit != nil:
		return protocol.Validate(c.Visit)
	case c.Gate != nil:
		return protocol.Validate(c.Gate)
	case c.Settings != nil:
		return protocol.Validate(c.Settings)
	case c.Key != nil:
		return protocol.Validate(c.Key)
	case c.Person != nil:
		return protocol.Validate(c.Person)
	case c.Team != nil:
		return protocol.Validate(c.Team)
	case c.VisitType != nil:
		return protocol.Validate(c.VisitType)
	case c.Hardware != nil:
		return protocol.Validate(c.Hardware)
	}
	return fmt.Errorf("%w: a change holds no object", protocol.ErrInvalid)
}

// decodeVisitJSON reads a visit in the form of schema 1 files.
func decodeVisitJSON(raw []byte) (v protocol.Visit, err error) {
	return v, protocol.DecodeObject(raw, &v)
}

func decodeGate(raw []byte) (g protocol.Gate, err error) {
	return g, protocol.DecodeObject(raw, &g)
}

func decodeKey(raw []byte) (k protocol.Key, err error) {
	return k, protocol.DecodeObject(raw, &k)
}

func decodePerson(raw []byte) (p protocol.Person, err error) {
	return p, protocol.DecodeObject(raw, &p)
}

func decodeSettings(raw []byte) (s protocol.Settings, err error) {
	return s, protocol.DecodeObject(raw, &s)
}

// decodeRow reads an outbox row and its fact strictly.
func decodeRow(raw []byte) (outboxRow, protocol.Fact, error) {
	var row outboxRow
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&row); err != nil {
		return row, protocol.Fact{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return row, protocol.Fact{}, errors.New("data after the row")
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
