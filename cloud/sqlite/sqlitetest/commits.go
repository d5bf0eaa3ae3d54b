// Package sqlitetest holds helpers for tests of the SQLite store.
package sqlitetest

import (
	"strings"
	"sync"
	"sync/atomic"

	msqlite "modernc.org/sqlite"
)

// commits counts the commits of write transactions on each SQLite file a
// test binary opens, by path: a connection hook registers a commit hook on
// every connection the driver opens.
var commits = struct {
	once sync.Once
	mu   sync.Mutex
	n    map[string]*atomic.Int64
}{n: map[string]*atomic.Int64{}}

// CommitCounter returns a counter of the commits of write transactions on
// the connections opened, from now on, to the file at path.
func CommitCounter(path string) *atomic.Int64 {
	commits.once.Do(func() {
		msqlite.RegisterConnectionHook(func(conn msqlite.ExecQuerierContext, dsn string) error {
			commits.mu.Lock()
			var c *atomic.Int64
			for p, n := range commits.n {
				if strings.Contains(dsn, p) {
					c = n
				}
			}
			commits.mu.Unlock()
			if h, ok := conn.(msqlite.HookRegisterer); ok && c != nil {
				h.RegisterCommitHook(func() int32 { c.Add(1); return 0 })
			}
			return nil
		})
	})
	commits.mu.Lock()
	defer commits.mu.Unlock()
	c := &atomic.Int64{}
	commits.n[path] = c
	return c
}
