package kiosk

import (
	"strings"
	"sync"
	"testing"
)

// Wrong PINs sent at once are counted as they come, not after each is
// hashed: a burst of guesses on one device gets PINTries of them checked,
// not all.
func TestDevices_PINGuessesAtOnceAreCountedToo(t *testing.T) {
	h := newHarness(t)
	if err := h.devs.SetPIN("4821"); err != nil {
		t.Fatal(err)
	}
	const guesses = 4 * PINTries
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	checked := 0
	for i := range guesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := h.devs.CheckPIN("kiosk-1", "1"+strings.Repeat("0", 3)+string(rune('0'+i%10)), h.now); err == ErrBadPIN {
				mu.Lock()
				checked++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if checked > PINTries {
		t.Errorf("%d PIN guesses sent at once were checked; at most %d may be", checked, PINTries)
	}
}
