package edge

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// selfTestToken is what SelfTest's test decision decides on: no pass, so
// every gate refuses it (invalid_token) without recording a fact.
const selfTestToken = "P1:SELFTEST"

// brokerPoll is how often SelfTest looks whether the broker connected.
const brokerPoll = 100 * time.Millisecond

// SelfTest is the health check of a release started on trial (edge/update):
// the cache is open, reads and takes writes; every relay passes its
// self-test (driven inactive and read back, never opened); every gate
// makes a decision on a test token from the cache (without recording it);
// and the sync half connects to the broker, waited for until ctx ends. It
// returns the first failure, naming it. Freshness is not checked: an
// appliance that has been offline must still be able to update.
func (a *App) SelfTest(ctx context.Context) error {
	s := a.running.Load()
	if s == nil {
		return errors.New("self-test: the appliance is not running")
	}
	if _, _, err := s.cache.OutboxStats(); err != nil {
		return fmt.Errorf("self-test: cache: %w", err)
	}
	if err := s.cache.WriteFailure(); err != nil {
		return fmt.Errorf("self-test: cache: %w", err)
	}
	if err := a.testHardware(s); err != nil {
		return err
	}
	if s.syncer == nil || a.d.Connected == nil {
		return nil
	}
	t := time.NewTicker(brokerPoll)
	defer t.Stop()
	for !a.d.Connected() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("self-test: the broker did not connect: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// testHardware self-tests the relays and gates driven now; a hardware
// change waits for it.
func (a *App) testHardware(s *site) error {
	s.hwMu.RLock()
	defer s.hwMu.RUnlock()
	for _, r := range s.hw.relays {
		if err := r.SelfTest(); err != nil {
			return fmt.Errorf("self-test: %w", err)
		}
	}
	for id, g := range s.hw.gates {
		if err := testDecision(func() string { return string(g.Decide(selfTestToken, a.d.Now()).Kind) }); err != nil {
			return fmt.Errorf("self-test: gate %s: %w", id, err)
		}
	}
	return nil
}

// testDecision runs decide, turning a panic into an error: a release whose
// decision code fails must fail its health check.
func testDecision(decide func() string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the test decision panicked: %v", p)
		}
	}()
	if kind := decide(); kind == "" {
		return errors.New("the test decision made no decision")
	}
	return nil
}
