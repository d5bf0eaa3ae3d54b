// Package mqttsync is the two MQTT halves of the edge–cloud sync: Edge, run
// by a site's appliance over its cache, and Cloud, run by the cloud service
// over its store. The wire format is sync/protocol's; each half defines the
// store interface it needs (EdgeStore, CloudStore), which the appliance and
// the cloud implement.
//
// It may import the standard library, github.com/eclipse/paho.mqtt.golang
// (MQTT 3.1.1), sync/protocol and shared/ packages; never edge/ or cloud/.
//
// # Connections
//
// Each half owns its connection: it dials with paho's auto-reconnect off,
// retries with exponential backoff and jitter for as long as Run's context
// lasts, and on every connection subscribes again (a restarted broker may
// have lost the session) and starts over from its stores. paho callbacks
// only queue the message for a goroutine that owns a context; they never
// block (paho issue 427: a blocked callback stops the client reading, so
// acknowledgements and pings stall). Malformed messages (bad JSON, another
// version, unknown fields, a failed check, a topic not the half's) are
// logged, counted and dropped, never applied.
//
// # The edge half
//
// The edge connects with its edge ID as client ID and a persistent session
// (clean session off), so QoS 1 messages queued while it was away arrive,
// and leaves a retained last will on its status topic saying offline (with
// the sequence and outbox depth it had when it connected). On every
// connection it publishes a retained online status (again every
// StatusEvery, and once more when the connection's first resync is
// answered if the cache moved since), asks for the changes after its
// sequence, and publishes its outbox afresh.
//
// The change feed: a Batch that follows the cache's sequence is applied;
// changes at or below it are skipped; one that starts past Seq()+1 is a gap,
// and the edge sends a ResyncRequest{After: Seq()}. One request is
// outstanding at a time; unanswered for ResyncTimeout, it is asked again.
// A changes reply is applied and, when More, followed by another request; a
// snapshot's parts are gathered by request ID and, once all Parts are
// there, replace the cache. While a snapshot arrives, feed batches are left
// to the resync that follows it. Every ResyncEvery the edge asks even
// without a gap; the completed answer is its proof of being current, and
// the time it asked is what MarkSynced records (at most every
// SyncedEvery), so the offline limit counts from the last moment the cache
// was known complete.
//
// Facts: the outbox is published in counter order at QoS 1 to the edge's
// facts topic, at most Window unacknowledged at once; a fact leaves the
// outbox only when the cloud's ack Reply names it and the cache has
// applied the feed up to the Reply's Seq (the cloud's feed head after the
// commit that applied it: protocol.Fact.AckSeq asks for it), so the
// cloud's change of a visit the fact made is in the cache before the
// cache stops merging the visit's local state. A fact unacknowledged
// for AckTimeout, and every fact in flight when a connection ends, is
// published again; the cloud applies each ID once, so redelivery is
// harmless.
//
// # The cloud half
//
// Cloud processes read the inbound topics through shared subscriptions
// (protocol.SharedFacts, SharedResync, SharedStatus), so several of them
// divide the messages. Mochi and Mosquitto 2 both honour $share filters
// from MQTT 3.1.1 clients. They differ on retained messages: Mosquitto
// (2.0.11 at least) sends a new shared subscription the retained statuses,
// mochi does not (as MQTT 5 prescribes), so on mochi a cloud process that
// starts after an edge's last will fired does not learn of it from the
// broker; the cloud should also judge an edge by the age of its last online
// status, which edges refresh every StatusEvery. The cloud connects with a
// clean session: a persistent one would keep a stopped process's share of
// the group, which brokers go on feeding (mochi picks a member without
// regard to whether it is connected); what a stopped process misses comes
// again, since edges republish facts and ask again for resyncs.
//
// Facts are applied through CloudStore.ApplyFacts in arrival order, the
// waiting ones of a site together (up to FactBatch): those that arrive
// while a batch is applied go into the next (group commit). A batch's
// facts are acknowledged once its ApplyFacts has returned (committed),
// per edge, by a sender of their own, which sends what gathered while it
// was sending together (or, with AckEvery set, AckEvery after the first
// waiting acknowledgement, or at protocol.MaxAcks), with the site's feed
// head read after the commit for the facts that asked for it. The edge
// half applies runs of feed batches that follow on as one Apply, then the
// acknowledgements its feed has reached in one Ack. A fact rejected (ErrRejected) or failing is not
// acknowledged: the edge keeps it and publishes it again. A batch that
// fails as a whole is tried again fact by fact, so one fact that cannot
// be applied does not hold up the others.
// A resync is answered with up to MaxChanges changes (More when the feed
// goes on), or with a snapshot in parts when the edge is new (after 0), more
// than SnapshotAfter changes behind, ahead of the feed (a restored cloud
// database), or behind what the feed keeps. The publisher calls
// PublishFeeds on Notify and every PollEvery, at most once per
// PublishEvery (Notify calls meanwhile are coalesced), and publishes each site's run
// as Batches at QoS 1, returning an error (so the cursor stays) unless the
// broker acknowledged them all. Messages are split to stay within
// protocol.MaxChanges, MaxSnapshot and MaxMessage.
package mqttsync
