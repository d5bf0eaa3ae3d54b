package main

// defaultGCPercent is serve's GOGC unless the environment sets one. The
// server's live heap is small (statements, caches, connections' buffers)
// and its garbage is steady, some 70 KB a POST /v1/visits: at the
// runtime's 100 the collector ran every few hundred requests. At 400 the
// heap may grow to five times the live heap between collections, and
// POST /v1/visits took 10-19% less of the server's CPU per request
// (docs/performance.md, "POST /v1/visits, CPU per request, second pass").
// An operator short of memory sets GOGC (or GOMEMLIMIT) as for any Go
// program. The appliance makes the other choice (svc-edge's
// defaultGCPercent, 10 once its cache is open): its memory is the target
// there. Set in serve by gcpercent.Default.
const defaultGCPercent = 400
