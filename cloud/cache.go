package cloud

import (
	"sync"
	"time"

	"github.com/svc-vms/svc/shared/form"
)

// Parsing a form and loading a time zone are pure but not cheap (a form
// parse was a fifth of the server's CPU under load, as every visit shown
// is redacted by its type's form). Both are cached by their input, which
// is small and bounded by the forms and zones in use.

// maxCached bounds each cache; past it the cache starts again empty.
const maxCached = 4096

type cache[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

func (c *cache[V]) get(key string, make func() (V, error)) (V, error) {
	c.mu.RLock()
	v, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := make()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[string]V{}
	}
	c.m[key] = v
	c.mu.Unlock()
	return v, nil
}

// getBytes is get with the key as bytes: a key found is looked up without
// copying it into a string (parseForm's key is the schema, some KB, on
// every visit made or shown).
func (c *cache[V]) getBytes(key []byte, make func() (V, error)) (V, error) {
	c.mu.RLock()
	v, ok := c.m[string(key)]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	return c.get(string(key), make)
}

var (
	forms = &cache[*form.Form]{}
	zones = &cache[*time.Location]{}
)

// parseForm is form.Parse, cached by the schema's bytes. A parsed form is
// never changed after parsing, so sharing it is safe.
func parseForm(schema []byte) (*form.Form, error) {
	return forms.getBytes(schema, func() (*form.Form, error) { return form.Parse(schema) })
}

// loadLocation is time.LoadLocation, cached by name.
func loadLocation(name string) (*time.Location, error) {
	return zones.get(name, func() (*time.Location, error) { return time.LoadLocation(name) })
}
