package kiosk

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
)

//go:embed i18n/*.json
var catalogueFiles embed.FS

// Catalogue is one language's messages, keyed by message ID. Every text the
// kiosk shows comes from a catalogue: templates hold keys, never words.
type Catalogue struct {
	Lang string // BCP 47 tag, as the file is named: en, fr
	Name string // the language's own name, shown on the language switch
	msgs map[string]string
}

// T returns the message for key, formatted with args as fmt.Sprintf does
// when given any. A key the catalogue lacks shows as the key in brackets,
// so a missing text is visible on screen and in tests, never blank.
func (c *Catalogue) T(key string, args ...any) string {
	m, ok := c.msgs[key]
	if !ok {
		return "[" + key + "]"
	}
	if len(args) > 0 {
		return fmt.Sprintf(m, args...)
	}
	return m
}

// Has reports whether the catalogue holds key.
func (c *Catalogue) Has(key string) bool { _, ok := c.msgs[key]; return ok }

// Keys returns the catalogue's keys, sorted.
func (c *Catalogue) Keys() []string { return slices.Sorted(maps.Keys(c.msgs)) }

// Catalogues are the languages the kiosk speaks.
type Catalogues map[string]*Catalogue

// LoadCatalogues reads the embedded message catalogues. Every catalogue
// must hold exactly the English catalogue's keys: a language missing a
// text, or holding one nobody uses, is an error at start, not a blank on a
// tablet.
func LoadCatalogues() (Catalogues, error) {
	return loadCatalogues(catalogueFiles, "i18n")
}

func loadCatalogues(fsys fs.FS, dir string) (Catalogues, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := Catalogues{}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("kiosk: catalogue %s: %w", name, err)
		}
		var msgs map[string]string
		if err := json.Unmarshal(b, &msgs); err != nil {
			return nil, fmt.Errorf("kiosk: catalogue %s: %w", name, err)
		}
		lang := strings.TrimSuffix(path.Base(name), ".json")
		c := &Catalogue{Lang: lang, Name: msgs["language.name"], msgs: msgs}
		if c.Name == "" {
			return nil, fmt.Errorf("kiosk: catalogue %s has no language.name", name)
		}
		out[lang] = c
	}
	en, ok := out["en"]
	if !ok {
		return nil, fmt.Errorf("kiosk: no English catalogue in %s", dir)
	}
	for lang, c := range out {
		for _, k := range en.Keys() {
			if !c.Has(k) {
				return nil, fmt.Errorf("kiosk: catalogue %s lacks %q", lang, k)
			}
		}
		for _, k := range c.Keys() {
			if !en.Has(k) {
				return nil, fmt.Errorf("kiosk: catalogue %s holds %q, which English does not", lang, k)
			}
		}
	}
	return out, nil
}
