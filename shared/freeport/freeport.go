// Package freeport picks TCP ports on 127.0.0.1 for a process about to be
// started that will listen on them.
//
// A port found by listening on port 0 comes from the kernel's ephemeral
// range, the same range it hands to outgoing connections and to every other
// listener on port 0; between the pick and the child's bind, any of them
// may take it (a CI run lost a gate reader's port this way). Ports here
// come from below that range instead, where only another picker like this
// one could collide, and a port is never handed out twice in one process.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// low is the bottom of the range picked from: above the well-known and
// registered ports of the services on the machine (PostgreSQL 5432,
// Mosquitto 1883, Redis 6379, RabbitMQ 5672/15672, NATS 4222/8222,
// MariaDB 3306).
const low = 20000

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// high is the top of the range: just below the kernel's ephemeral range, or
// 32767 when that cannot be read.
func high() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32767
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32767
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n-1 < low+1000 {
		return 32767
	}
	return n - 1
}

// Pick returns n distinct ports that are free on 127.0.0.1 now and that no
// earlier Pick in this process returned.
func Pick(n int) ([]int, error) {
	return pickIn(low, high(), n)
}

// pickIn is Pick from the ports lo..hi.
func pickIn(lo, hi, n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("freeport: no free port found below the ephemeral range")
		}
		p := lo + rand.IntN(hi-lo+1)
		if handed[p] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		_ = ln.Close()
		handed[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// Run returns a port p with p..p+n-1 all free now and none handed out
// before: for a process that listens on consecutive ports.
func Run(n int) (int, error) {
	mu.Lock()
	defer mu.Unlock()
	hi := high()
outer:
	for range 1000 {
		p := low + rand.IntN(hi-low+2-n)
		for i := range n {
			if handed[p+i] {
				continue outer
			}
		}
		var lns []net.Listener
		ok := true
		for i := range n {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+i))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			_ = ln.Close()
		}
		if !ok {
			continue
		}
		for i := range n {
			handed[p+i] = true
		}
		return p, nil
	}
	return 0, fmt.Errorf("freeport: no run of %d free ports found below the ephemeral range", n)
}

// Port is Pick(1) for a test, which it fails when no port is found.
func Port(t testing.TB) int {
	t.Helper()
	ps, err := Pick(1)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

// Addr is "127.0.0.1:" and Port(t).
func Addr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", Port(t))
}
