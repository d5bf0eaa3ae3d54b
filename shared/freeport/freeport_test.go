package freeport

import (
	"fmt"
	"net"
	"testing"
)

// TestPick_BelowEphemeralRangeDistinctAndFree: the ports are below the
// kernel's ephemeral range, never handed out twice, and bindable.
func TestPick_BelowEphemeralRangeDistinctAndFree(t *testing.T) {
	hi := high()
	seen := map[int]bool{}
	for range 200 {
		p := Port(t)
		if p < low || p > hi {
			t.Fatalf("port %d outside [%d, %d]", p, low, hi)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	ln, err := net.Listen("tcp", Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// TestPick_SkipsAPortInUse: a port something listens on is not handed out.
func TestPick_SkipsAPortInUse(t *testing.T) {
	p, err := Run(3)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	mu.Lock()
	delete(handed, p)
	delete(handed, p+1)
	delete(handed, p+2)
	mu.Unlock()
	ports, err := pickIn(p, p+2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range ports {
		if q == p+1 {
			t.Fatalf("port %d handed out while in use", q)
		}
	}
	if _, err := pickIn(p, p+2, 1); err == nil {
		t.Fatal("a third port handed out of a range with two free")
	}
}

// TestRun_Consecutive: a run's ports are all free and all distinct from
// earlier picks.
func TestRun_Consecutive(t *testing.T) {
	p, err := Run(4)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+i))
		if err != nil {
			t.Fatalf("port %d of the run: %v", p+i, err)
		}
		ln.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 4 {
		if !handed[p+i] {
			t.Fatalf("port %d of the run not recorded", p+i)
		}
	}
}
