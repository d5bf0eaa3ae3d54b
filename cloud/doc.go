// Package cloud is the domain of the cloud API: organisations and their
// credentials, sites, gates, people and teams, visits and bookings, the
// sites' edges and the facts and change feeds they exchange with the
// cloud, the rules that bind them, and the Store interface the storage
// engines implement.
//
// It may import shared/..., sync/protocol (the wire form of what a site's
// edge is sent and sends) and the standard library. It never imports a
// transport (echo) or a storage engine (SQL drivers): cloud/httpapi,
// cloud/sqlite and cloud/postgres depend on it, not the other way round.
package cloud
