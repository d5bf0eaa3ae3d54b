// Package protocol is the wire format between a site's edge appliance and
// the cloud over MQTT: topics, messages and their strict decoding. Both
// halves (sync/mqttsync's edge and cloud sides) use it, so they cannot
// disagree on a field.
//
// It may import shared/ packages and the standard library only: no MQTT
// client, no storage.
//
// # Topics
//
// Every topic of a site sits under
//
//	svc/v1/{mode}/{org_id}/sites/{site_id}/
//
// and the broker lets an edge touch its own site's topics only, and of the
// per-edge ones only its own: an edge cannot publish facts in another's name.
//
//	changes                  cloud → edge  Batch: the site's change feed, in sequence order (QoS 1)
//	edges/{edge_id}/facts    edge → cloud  Fact: something that happened at a gate (QoS 1)
//	edges/{edge_id}/resync   edge → cloud  ResyncRequest: send me what follows sequence N
//	edges/{edge_id}/replies  cloud → edge  Reply: fact acknowledgements, resync answers (QoS 1)
//	edges/{edge_id}/status   edge → cloud  Status: retained; the last will says offline
//
// Cloud processes share the inbound topics with MQTT shared subscriptions
// (SharedFacts, SharedResync, SharedStatus), so each fact reaches one of
// them.
//
// # Messages
//
// Messages are JSON objects with "v": 1. Decoding is strict: a message
// larger than MaxMessage, of another version, with unknown fields, or
// failing validation is an error, and the receiver logs and drops it.
// Times are RFC 3339 in UTC with microseconds at most, except Key.RetireAt
// and Person.PassIssuedAt, which are whole Unix seconds like the pass
// tokens they are compared with (docs/decisions.md, "The MQTT protocol as
// AsyncAPI (issue 19)").
//
// # The AsyncAPI document
//
// asyncapi.yaml (AsyncAPI), beside this file, describes the protocol for
// integrators: every topic, message and field with its type, unit and
// bounds, QoS and retain, the last will and the brokers. asyncapi_test.go
// keeps it equal to this package's code, and sync/mqttsync's tests check
// the traffic of the two halves against it.
//
// # Guarantees
//
// The change feed has one monotonic sequence per site, written by the cloud
// in the same transaction as the change. An edge applies changes in order,
// and on a gap (or at start) asks for everything after the last sequence it
// applied; the cloud answers with the changes or, when that is cheaper, a
// snapshot in chunks. Facts carry a TypeID and a per-edge counter; the edge
// deletes one from its outbox only when a Reply acknowledges it, and the
// cloud applies each fact ID once.
//
// A pass-verification Key may carry retire_at: from that Unix second the
// edge stops accepting the key by its own clock (a rotated key keeps
// verifying until the passes it signed have expired).
//
// An edge's online Status carries badge_key, the public half of the
// appliance's own walk-in badge key; the cloud certifies it for the
// edge's site only, and sends it on that site's feed alone as a Key of
// kind walk_in_badge naming the site (retired when the edge is revoked).
// An edge verifies badges with such keys only, and passes with the
// organisation's keys only.
//
// A change or a snapshot may carry an edge's hardware (EdgeHardware): the
// document of shared/hardware, decoded and checked by that package's code
// (the cloud's API checks it with the same), naming the one edge of the
// site that drives it; null hardware says the cloud holds none.
//
// # Transport
//
// Plain MQTT (tcp://, ws://) carries passwords and messages in clear: it is
// allowed only within one machine (Loopback). Between machines, edges and
// cloud processes use MQTT over TLS and verify the broker's certificate.
package protocol
