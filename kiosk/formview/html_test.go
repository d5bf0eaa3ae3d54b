package formview_test

import (
	"html/template"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// dom is rendered HTML, parsed as a browser would.
type dom struct {
	root *html.Node
	byID map[string]*html.Node
}

func parseDOM(tb testing.TB, h template.HTML) *dom {
	tb.Helper()
	root, err := html.Parse(strings.NewReader(string(h)))
	require.NoError(tb, err)
	d := &dom{root: root, byID: map[string]*html.Node{}}
	for n := range root.Descendants() {
		if id, ok := attr(n, "id"); ok {
			if _, dup := d.byID[id]; dup {
				tb.Fatalf("two elements with id %q", id)
			}
			d.byID[id] = n
		}
	}
	return d
}

func attr(n *html.Node, name string) (string, bool) {
	if n == nil || n.Type != html.ElementNode {
		return "", false
	}
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func has(n *html.Node, name string) bool {
	_, ok := attr(n, name)
	return ok
}

func get(n *html.Node, name string) string {
	v, _ := attr(n, name)
	return v
}

// all returns the elements matching keep, in document order.
func (d *dom) all(keep func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for n := range d.root.Descendants() {
		if n.Type == html.ElementNode && keep(n) {
			out = append(out, n)
		}
	}
	return out
}

func (d *dom) tag(name string) []*html.Node {
	return d.all(func(n *html.Node) bool { return n.Data == name })
}

// question returns the wrapper of question key, or nil.
func (d *dom) question(key string) *html.Node {
	qs := d.all(func(n *html.Node) bool { return get(n, "data-q") == key })
	if len(qs) == 0 {
		return nil
	}
	return qs[0]
}

func (d *dom) keys() []string {
	var keys []string
	for _, n := range d.all(func(n *html.Node) bool { return has(n, "data-q") }) {
		keys = append(keys, get(n, "data-q"))
	}
	return keys
}

// text is n's text content with spaces folded.
func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// spoken is n's text as a screen reader reads it: without what is
// aria-hidden.
func spoken(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if get(n, "aria-hidden") == "true" {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// within returns the descendants of n matching keep.
func within(n *html.Node, keep func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n == nil {
		return nil
	}
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func byName(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return get(n, "name") == name }
}

// isControl reports whether n is a form control a person operates.
func isControl(n *html.Node) bool {
	switch n.Data {
	case "select", "textarea":
		return true
	case "input":
		return get(n, "type") != "hidden"
	}
	return false
}

// checkAccessible fails unless every control has a <label for> with text,
// every radio group and fieldset a legend, and every aria-describedby
// names elements that exist.
func checkAccessible(t *testing.T, d *dom) {
	t.Helper()
	labels := map[string]string{}
	for _, l := range d.tag("label") {
		labels[get(l, "for")] = text(l)
	}
	for _, c := range d.all(isControl) {
		id := get(c, "id")
		if id == "" || labels[id] == "" {
			t.Errorf("control %s name=%q has no label with text (id %q)", c.Data, get(c, "name"), id)
		}
	}
	for _, fs := range d.tag("fieldset") {
		legends := within(fs, func(n *html.Node) bool { return n.Data == "legend" })
		if len(legends) == 0 || text(legends[0]) == "" {
			t.Errorf("fieldset without a legend: %s", text(fs))
		}
	}
	for _, n := range d.all(func(n *html.Node) bool { return has(n, "aria-describedby") }) {
		for _, id := range strings.Fields(get(n, "aria-describedby")) {
			if d.byID[id] == nil {
				t.Errorf("aria-describedby names %q, which is not in the page", id)
			}
		}
	}
	for _, n := range d.all(func(n *html.Node) bool { return has(n, "aria-controls") }) {
		if d.byID[get(n, "aria-controls")] == nil {
			t.Errorf("aria-controls names %q, which is not in the page", get(n, "aria-controls"))
		}
	}
}

// describedBy returns the IDs n's aria-describedby names.
func describedBy(n *html.Node) []string { return strings.Fields(get(n, "aria-describedby")) }

func describes(n *html.Node, id string) bool { return slices.Contains(describedBy(n), id) }
