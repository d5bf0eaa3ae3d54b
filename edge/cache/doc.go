// Package cache is the site appliance's durable state, in one bbolt file,
// and the in-memory View of it that gates decide from.
//
// It may import the standard library, go.etcd.io/bbolt, edge/durable,
// sync/protocol and shared/ packages.
//
// # What the file holds
//
// The site snapshot the cloud sends (visits, gates, settings, the
// organisation's pass-verification keys and its people), the last change
// sequence applied, the per-edge fact counter, the outbox: facts not yet
// acknowledged, in counter order, the cloud's latest version of each visit
// such a fact names (see Conflicts), and each person's last punch at this
// edge (the punch fact as recorded, written in the transaction that puts
// it in the outbox, kept after its acknowledgement and across snapshots:
// the gates decide a gate used both ways and the repeat rule from it).
// People and punches are the protocol's JSON; a file of schema 2 from a
// build before them gains their empty buckets when opened. The hardware
// the cloud sent for this edge (issue 17: its gates' readers, relays and
// door sensors, which the appliance drives in place of its configuration
// file's) is a key of the meta bucket, protocol.EdgeHardware's JSON, so it
// needed no new schema: a build older than it reads the file unchanged,
// and a release on trial (KeepSchema) opens a file that holds it. Its
// changes close the channel HardwareChanged returns. Visits are in a compact binary form (codec.go: a
// version byte, then the fields), decoded and then validated as strictly
// as a message off the wire; the other values are the protocol's JSON,
// decoded as strictly. The outbox is keyed by the counter, 8 bytes
// big-endian, so a cursor walks it in order. Open reads every value back
// and refuses the file with a *CorruptError naming the bucket and key of a
// value that does not decode, validate or agree with the rest: a damaged
// file is a reason to stop, not to drop data silently.
//
// # A damaged file
//
// Only a path with no file is a new cache: Open builds a new file under a
// temporary name and links it into place, so an empty or short file at
// the path is damage, not a cache being made. bbolt trusts its file: it
// faults (SIGBUS) reading a map past the end of a truncated file, fails
// assertions on a damaged page, and, rebuilding its free list at open,
// panics in a goroutine no caller can recover. So Open first reads the
// whole file itself (boltfile.go), with every offset checked, under the
// file's lock: both meta pages, the file's size against the pages in use,
// and every page reachable from the root, with what bbolt's Tx.Check
// checks and what bbolt assumes. Then it reads every value (above) and
// only then writes, and only what a file of an older build lacks, so a
// damaged file is never written to. Either failure is a *DamagedError
// naming the file (ErrDamaged). Each transaction after that runs with
// faults on the map turned into panics and panics into errors (protect):
// a file that goes bad under a running cache stops it with the same
// *DamagedError from then on, and Damaged tells the appliance to stop.
// Check reads a file as Open would without writing; Reset moves it aside
// and recovers what it can of its outbox into a new file (salvage.go).
//
// A file of schema 1, from builds that stored visits as JSON, is migrated
// by Open in one transaction (migrate.go) before it is read: whole, or not
// at all when a value does not decode.
//
// # Memory
//
// Open reads every page of the file through bbolt's map, and a snapshot or
// a batch of changes reads many, but the gate path never reads the file.
// After each of them the cache tells the kernel it no longer needs the
// pages it touched (madvise MADV_DONTNEED on the read-only shared map:
// clean page cache, faulted back in if read again), so the file does not
// stay in the process's resident memory. Open does the same every few
// thousand visits while it reads, so its peak holds little of the file.
//
// # Durability
//
// Each write is one bbolt transaction, committed with fsync before it
// returns: Apply for a run of the change feed, ReplaceSnapshot for a whole
// snapshot, Ack, MarkSynced. Record, for what a gate did (the visits it
// changed and its fact together: a crash leaves both or neither), appends
// the same puts and deletes as one frame to a journal beside the file
// (journal.go) and fdatasyncs it before it returns; the journal goes into
// the file every 1024 records, in the transaction of any other write, and
// before the outbox is read, and Open replays what the file lacks. A
// release on trial (Options.KeepSchema) writes records straight to the
// file, in a transaction each. Record marks
// the visit of a walk_in or desk_check_in fact at_desk (checked in at no
// gate), so an entry gate lets it in once (gate: the entered fact).
//
// # The View
//
// The gate path never reads bbolt. It reads a *View: immutable, built from
// the file at Open and rebuilt after every committed write, published with
// an atomic pointer swap, so a decision reads one consistent state without
// locks. Writers are serialised, so Views appear in commit order.
//
// Visits are packed (a 64-byte entry without pointers keyed by the
// visit's 16-byte UUID, times as Unix microseconds, hosts, teams and gates
// shared and named by an index, the visitor's text by where it starts in
// the View's chunks, what few visits have in a trie of its own) in a
// persistent hash trie (trie.go): 32-way interior nodes over leaves of up to about
// 8 KB of entries, keyed by a hash of the UUID. A write copies the path to
// each leaf it changes (for 100,000 visits a leaf of about 3 entries and
// three interior nodes) and shares every other node with the View before,
// so its cost follows the change, not the number of visits: a scan's
// Record or an acknowledgement of 100 facts copies a few KB a visit, where
// the 256 map shards before it copied about n/256 entries per shard
// touched, and a batch touching most shards all n. Nodes an edit has
// copied are its own and written in place, so a batch that touches a leaf
// twice copies it once. A lookup is a hash and four pointer hops. People,
// last punches and the kiosk's indexes are tries too.
//
// # Conflicts between the cloud and the gate
//
// A visit that a Record changed is pending until the cloud acknowledges
// every outbox fact recorded with it. While it is pending, a change of the
// visit from the cloud (in Apply or in a snapshot) is taken with four local
// exceptions:
//
//   - status stays local, unless the cloud's is cancelled, denied or
//     no_show: an ending from the cloud always wins for future decisions;
//   - uses is the larger of the two, so a single-use pass stays used;
//   - checked_in_at and checked_out_at stay local, and so do gate_id and
//     at_desk (how the visitor came in), so the cloud's "checked in at
//     the desk" sent before it saw the gate's entered fact cannot let the
//     pass through the entrance twice;
//   - reentered_as stays local when set.
//
// Everything else (expected times, pass rules, revoked, names) is the
// cloud's. So the cloud's "expected" sent before it saw a local check-in
// cannot undo the check-in, and a cancellation or revocation applies at
// once. A pending visit that a snapshot lacks (a re-entry made here while
// offline) is kept.
//
// The merge only holds while the facts wait. The sync's edge half
// (sync/mqttsync) removes a fact only once the cache has applied the feed
// up to the acknowledgement's Seq, the cloud's feed head after the commit
// that applied the fact, so the cloud's change of each visit the fact
// made has arrived while the visit was still pending and was merged (an
// acknowledgement from a cloud that sends no Seq is taken at once, and
// the change then usually, not always, came first). So the cache also keeps,
// for each pending visit, the cloud's latest version of it as received
// (bucket "cloud", visit ID → protocol.Visit, written in the transaction of
// the Apply or snapshot that brought it, checked at Open like the other
// buckets: a pending visit's, filed under its ID). When an Ack removes the
// last waiting fact that names the visit, the same transaction replaces the
// visit with that version, whole, and deletes it. Only versions received
// while the visit is pending count: one received before the Record would
// undo the gate's change, and a later Record of a visit still pending keeps
// the version received so far. A visit with no cloud version received
// since it became pending stays as the gate left it, and the cloud's next
// change of it is taken whole. Either way the cache converges on the
// cloud's visit, because the cloud emits a change of every visit a fact it
// applies touches, flagged ones included. The View holds only the merged
// visit; stored versions exist for pending visits only, which are few.
//
// # Pruning
//
// The change feed has no removal of a visit, so without help the file
// would grow with every visit the site ever had until the next snapshot.
// Prune removes visits whose pass ended before a given time
// (expected_until plus window.after; for a walk-in without
// expected_until, the end of its check-in day in the site's zone) and
// that no waiting fact names, in one transaction; the appliance calls it
// daily with a cutoff a week back. A pruned visit's token decides alone
// from then on (as for a visit the edge has never seen), and its claims
// end when the visit did when the pass was issued, so it is refused as
// expired. The exception is a visit the cloud shortened by more than the
// cutoff's distance after issuing its pass without revoking it: its old
// token would decide on its old end. A visit with no end (no
// expected_until and not checked in) is never pruned, so its cancellation
// is never forgotten. Host names and gate lists interned for pruned visits
// stay until the next snapshot; the chunks of their visitors' text go once
// no visit uses them (sweepText).
package cache
