package edge

import (
	"fmt"
	"syscall"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/sync/protocol"
)

// Health returns what the appliance's online status tells the cloud's
// fleet (issue 17): its cache's counts, and the bytes free on the file
// system of dir, its data partition, for unprivileged writers.
func Health(c *cache.Cache, dir string) func() (protocol.CacheCounts, uint64, error) {
	return func() (protocol.CacheCounts, uint64, error) {
		n := c.View().Counts()
		counts := protocol.CacheCounts{Visits: n.Visits, People: n.People, Gates: n.Gates, Keys: n.Keys}
		var fs syscall.Statfs_t
		if err := syscall.Statfs(dir, &fs); err != nil {
			return counts, 0, fmt.Errorf("disk free of %s: %w", dir, err)
		}
		return counts, uint64(fs.Bavail) * uint64(fs.Bsize), nil
	}
}
