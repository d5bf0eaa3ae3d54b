package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRotating: the log on the data partition is bounded at logLimit per
// file, with one older file (svc-edge.log.1), and across a rotation no
// write is lost or split: the older file followed by the current one is
// exactly the tail of what was written, each write wholly in one of them.
// A new writer on the same file (init started again after a reboot)
// counts what is already in it.
func TestRotating(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc-edge.log")
	r := &rotating{path: path, limit: logLimit}
	var all bytes.Buffer // everything written, in order
	var writes []int     // the offset in all where each write starts
	write := func(w *rotating, n int) {
		t.Helper()
		// Lines of uneven lengths (80 to 208 bytes), as svc-edge's logs are.
		line := fmt.Sprintf("%08d time=2026-11-26T10:00:00Z level=INFO msg=scan gate_id=gate_1 %s\n", n, bytes.Repeat([]byte{'x'}, n%129))
		writes = append(writes, all.Len())
		all.WriteString(line)
		if m, err := w.Write([]byte(line)); m != len(line) || err != nil {
			t.Fatalf("Write: %d, %v", m, err)
		}
	}
	n := 0
	for all.Len() < 3*logLimit+logLimit/2 { // three rotations, and half a file
		write(r, n)
		n++
	}
	check := func() {
		t.Helper()
		cur, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(path + ".1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path + ".2"); err == nil {
			t.Errorf("%s.2 exists: one older file is kept", path)
		}
		for _, f := range []struct {
			name string
			b    []byte
		}{{path, cur}, {path + ".1", old}} {
			if len(f.b) > logLimit {
				t.Errorf("%s is %d bytes, over the limit of %d", f.name, len(f.b), logLimit)
			}
		}
		// The older file was rotated only when the next write did not
		// fit: it is within one line (at most 208 bytes) of the limit.
		if len(old) <= logLimit-208 {
			t.Errorf("%s.1 is %d bytes: rotated early (limit %d)", path, len(old), logLimit)
		}
		kept := append(append([]byte(nil), old...), cur...)
		if !bytes.HasSuffix(all.Bytes(), kept) {
			t.Fatalf("%s.1 and %s are not the tail of what was written (%d bytes kept)", path, path, len(kept))
		}
		// Each file starts where a write started: none was split.
		start := all.Len() - len(kept)
		for _, off := range []int{start, start + len(old)} {
			i := 0
			for i < len(writes) && writes[i] < off {
				i++
			}
			if i == len(writes) || writes[i] != off {
				t.Errorf("a file starts at byte %d of the output, inside a write", off)
			}
		}
	}
	check()

	// init started again: a new writer appends to the file and counts
	// its size, so it rotates at the limit, not a limit later.
	r.f.Close()
	r2 := &rotating{path: path, limit: logLimit}
	for range logLimit / 80 {
		write(r2, n)
		n++
	}
	check()
}

// TestRotating_SyncsWithinTheDelay: a power cut, an appliance's usual end,
// loses at most logSyncDelay of the log: a write arranges one fsync that
// delay later, and the writes before it runs arrange no more (one fsync a
// delay, however busy the gate), and a write after it arranges the next.
func TestRotating_SyncsWithinTheDelay(t *testing.T) {
	var due []func()
	var delays []time.Duration
	r := &rotating{path: filepath.Join(t.TempDir(), "svc-edge.log"), limit: logLimit,
		after: func(d time.Duration, fn func()) { delays, due = append(delays, d), append(due, fn) }}
	line := []byte("time=2026-11-26T10:00:00Z level=INFO msg=scan gate_id=gate_1\n")
	for range 100 {
		r.Write(line)
	}
	if len(due) != 1 || delays[0] != logSyncDelay {
		t.Fatalf("100 writes arranged %d fsyncs (delays %v), want one after %v", len(due), delays, logSyncDelay)
	}
	due[0]()
	if r.syncs != 1 {
		t.Fatalf("the arranged fsync did %d syncs, want 1", r.syncs)
	}
	r.Write(line)
	if len(due) != 2 {
		t.Fatalf("a write after the fsync arranged %d in all, want 2", len(due))
	}
	due[1]()
	if r.syncs != 2 {
		t.Fatalf("syncs = %d, want 2", r.syncs)
	}
}
