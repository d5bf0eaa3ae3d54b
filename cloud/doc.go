// Package cloud is the domain of the cloud API: organisations and their
// credentials, sites, gates, people and teams, the rules that bind them, and
// the Store interface the storage engines implement.
//
// It may import shared/... and the standard library. It never imports a
// transport (echo) or a storage engine (SQL drivers): cloud/httpapi,
// cloud/sqlite and cloud/postgres depend on it, not the other way round.
package cloud
