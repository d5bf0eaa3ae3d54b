// Package asyncapitest reads the protocol's AsyncAPI document
// (sync/protocol's asyncapi.yaml) and checks MQTT messages against it: the
// topic against the channels' addresses and parameters, the payload against
// the JSON Schemas of the channel's messages. sync/protocol's tests use it
// to keep the document equal to the code, and sync/mqttsync's to check the
// traffic of the real halves.
//
// It may import the standard library, go.yaml.in/yaml/v3 and
// github.com/santhosh-tekuri/jsonschema/v6; not sync/protocol, whose own
// tests import it (they hand it protocol.AsyncAPI).
package asyncapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// resource is the URL the document is compiled under; references in it
// ("#/components/schemas/...") resolve within it.
const resource = "asyncapi.json"

// Document is a parsed AsyncAPI document.
type Document struct {
	// Root is the whole document as JSON values (maps, slices, strings,
	// json.Number, booleans, nil).
	Root     map[string]any
	Channels []*Channel
}

// Channel is one of the document's channels.
type Channel struct {
	Name    string
	Address string   // with {parameter} placeholders
	Params  []string // in the order they appear in Address
	// Enums holds the allowed values of the parameters that list them.
	Enums map[string][]string
	// Messages are the channel's messages, in the document's order.
	Messages []*Message
	// Operations are those on this channel.
	Operations []Operation
	re         *regexp.Regexp
}

// Message is one message of a channel.
type Message struct {
	Name string // the key in the channel's messages
	// Pointer is the JSON pointer of the message object in the document
	// (after following the channel's $ref).
	Pointer string
	// Payload is the compiled payload schema.
	Payload *jsonschema.Schema
	// PayloadRef is the payload's $ref ("#/components/schemas/Batch"), or
	// "" for an inline payload.
	PayloadRef string
	// Examples are the payloads of the message's examples.
	Examples []Example
}

// Example is one of a message's examples.
type Example struct {
	Name    string
	Payload any
}

// Operation is one operation of the document, with its MQTT binding.
type Operation struct {
	Name   string
	Action string // send or receive
	QoS    int
	Retain bool
}

// Parse reads a YAML (or JSON) AsyncAPI 3 document and compiles the
// payload schema of every message of every channel.
func Parse(doc []byte) (*Document, error) {
	var y any
	if err := yaml.Unmarshal(doc, &y); err != nil {
		return nil, fmt.Errorf("asyncapi: parse YAML: %w", err)
	}
	// Through JSON, so that values are what a JSON decoder gives (numbers
	// as json.Number, maps with string keys): what the validator expects.
	b, err := json.Marshal(y)
	if err != nil {
		return nil, fmt.Errorf("asyncapi: the document is not JSON data: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("asyncapi: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("asyncapi: the document is not an object")
	}
	if root["asyncapi"] != "3.0.0" {
		return nil, fmt.Errorf("asyncapi: version %v, want 3.0.0", root["asyncapi"])
	}
	c := jsonschema.NewCompiler()
	// AsyncAPI 3.0's schema object is a superset of JSON Schema draft 07.
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()  // date-time
	c.AssertContent() // base64
	if err := c.AddResource(resource, root); err != nil {
		return nil, fmt.Errorf("asyncapi: %w", err)
	}
	d := &Document{Root: root}
	channels, _ := root["channels"].(map[string]any)
	for _, name := range sortedKeys(channels) {
		ch, err := d.channel(c, name, asMap(channels[name]))
		if err != nil {
			return nil, err
		}
		d.Channels = append(d.Channels, ch)
	}
	if err := d.operations(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Document) channel(c *jsonschema.Compiler, name string, raw map[string]any) (*Channel, error) {
	addr, _ := raw["address"].(string)
	if addr == "" {
		return nil, fmt.Errorf("asyncapi: channel %s has no address", name)
	}
	ch := &Channel{Name: name, Address: addr, Enums: map[string][]string{}}
	var re strings.Builder
	re.WriteString("^")
	for i, seg := range strings.Split(addr, "/") {
		if i > 0 {
			re.WriteString("/")
		}
		if p, ok := strings.CutPrefix(seg, "{"); ok && strings.HasSuffix(p, "}") {
			p = strings.TrimSuffix(p, "}")
			ch.Params = append(ch.Params, p)
			re.WriteString("([^/+#]+)")
			continue
		}
		re.WriteString(regexp.QuoteMeta(seg))
	}
	re.WriteString("$")
	ch.re = regexp.MustCompile(re.String())
	params := asMap(raw["parameters"])
	for _, p := range ch.Params {
		def, _, err := d.Resolve(params[p])
		if err != nil || def == nil {
			return nil, fmt.Errorf("asyncapi: channel %s: parameter %s is not defined", name, p)
		}
		for _, e := range asSlice(def["enum"]) {
			ch.Enums[p] = append(ch.Enums[p], fmt.Sprint(e))
		}
	}
	msgs := asMap(raw["messages"])
	for _, key := range sortedKeys(msgs) {
		m, ptr, err := d.Resolve(msgs[key])
		if err != nil {
			return nil, fmt.Errorf("asyncapi: channel %s message %s: %w", name, key, err)
		}
		if ptr == "" {
			ptr = "/channels/" + name + "/messages/" + key
		}
		sch, err := c.Compile(resource + "#" + ptr + "/payload")
		if err != nil {
			return nil, fmt.Errorf("asyncapi: channel %s message %s: %w", name, key, err)
		}
		msg := &Message{Name: key, Pointer: ptr, Payload: sch}
		if p := asMap(m["payload"]); p != nil {
			msg.PayloadRef, _ = p["$ref"].(string)
		}
		for i, ex := range asSlice(m["examples"]) {
			e := asMap(ex)
			n, _ := e["name"].(string)
			if n == "" {
				n = fmt.Sprint(i)
			}
			msg.Examples = append(msg.Examples, Example{Name: n, Payload: e["payload"]})
		}
		ch.Messages = append(ch.Messages, msg)
	}
	return ch, nil
}

// operations attaches each operation to its channel.
func (d *Document) operations() error {
	ops := asMap(d.Root["operations"])
	for _, name := range sortedKeys(ops) {
		op := asMap(ops[name])
		_, ptr, err := d.Resolve(op["channel"])
		if err != nil {
			return fmt.Errorf("asyncapi: operation %s: %w", name, err)
		}
		ch := d.channelAt(ptr)
		if ch == nil {
			return fmt.Errorf("asyncapi: operation %s names no channel (%q)", name, ptr)
		}
		o := Operation{Name: name}
		o.Action, _ = op["action"].(string)
		mqtt := asMap(asMap(op["bindings"])["mqtt"])
		if q, ok := mqtt["qos"].(json.Number); ok {
			n, err := q.Int64()
			if err != nil {
				return fmt.Errorf("asyncapi: operation %s: qos %v", name, q)
			}
			o.QoS = int(n)
		}
		o.Retain, _ = mqtt["retain"].(bool)
		ch.Operations = append(ch.Operations, o)
	}
	return nil
}

func (d *Document) channelAt(ptr string) *Channel {
	for _, ch := range d.Channels {
		if ptr == "/channels/"+ch.Name {
			return ch
		}
	}
	return nil
}

// Resolve follows v's $ref, if it has one, within the document, and
// returns the object it names and the JSON pointer of that object ("" when
// v had no $ref).
func (d *Document) Resolve(v any) (map[string]any, string, error) {
	m := asMap(v)
	ref, ok := m["$ref"].(string)
	if !ok {
		return m, "", nil
	}
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, "", fmt.Errorf("reference %q is not within the document", ref)
	}
	var cur any = d.Root
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		cur = asMap(cur)[tok]
		if cur == nil {
			return nil, "", fmt.Errorf("reference %q names nothing", ref)
		}
	}
	out, ok := cur.(map[string]any)
	if !ok {
		return nil, "", fmt.Errorf("reference %q names no object", ref)
	}
	return out, ptr, nil
}

// Schema returns components.schemas[name], or nil.
func (d *Document) Schema(name string) map[string]any {
	return asMap(asMap(asMap(d.Root["components"])["schemas"])[name])
}

// Match returns the channel whose address topic matches, and the values of
// its parameters. A parameter with an enum must hold one of its values.
func (d *Document) Match(topic string) (*Channel, map[string]string, error) {
	for _, ch := range d.Channels {
		m := ch.re.FindStringSubmatch(topic)
		if m == nil {
			continue
		}
		params := make(map[string]string, len(ch.Params))
		for i, p := range ch.Params {
			params[p] = m[i+1]
			if enum, ok := ch.Enums[p]; ok && !slices.Contains(enum, m[i+1]) {
				return nil, nil, fmt.Errorf("topic %s: parameter %s %q is not one of %v", topic, p, m[i+1], enum)
			}
		}
		return ch, params, nil
	}
	return nil, nil, fmt.Errorf("topic %s matches no channel of the document", topic)
}

// Check validates one message: its topic must match a channel, and its
// payload exactly one of that channel's messages. It returns both.
func (d *Document) Check(topic string, payload []byte) (*Channel, *Message, error) {
	ch, _, err := d.Match(topic)
	if err != nil {
		return nil, nil, err
	}
	m, err := ch.Check(payload)
	return ch, m, err
}

// Check validates a payload against the channel's messages and returns the
// one message it is. Payloads of two messages of a channel never overlap
// (a reply's kind tells them apart), so matching two is an error too.
func (ch *Channel) Check(payload []byte) (*Message, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("channel %s: the payload is not JSON: %w", ch.Name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("channel %s: data after the payload", ch.Name)
	}
	return ch.CheckValue(v)
}

// CheckValue is Check for a payload already decoded (with json.Number for
// numbers).
func (ch *Channel) CheckValue(v any) (*Message, error) {
	var matched []*Message
	var errs []error
	for _, m := range ch.Messages {
		if err := m.Payload.Validate(v); err != nil {
			errs = append(errs, fmt.Errorf("not a %s: %w", m.Name, err))
			continue
		}
		matched = append(matched, m)
	}
	switch len(matched) {
	case 1:
		return matched[0], nil
	case 0:
		return nil, fmt.Errorf("channel %s: the payload is none of its messages:\n%w", ch.Name, errors.Join(errs...))
	}
	return nil, fmt.Errorf("channel %s: the payload is more than one of its messages (%s, %s)", ch.Name, matched[0].Name, matched[1].Name)
}

// Operation returns the channel's operation with the given action (send or
// receive), and whether there is one.
func (ch *Channel) Operation(action string) (Operation, bool) {
	for _, o := range ch.Operations {
		if o.Action == action {
			return o, true
		}
	}
	return Operation{}, false
}

// Topic fills the channel's address with values, one per parameter.
func (ch *Channel) Topic(values map[string]string) string {
	t := ch.Address
	for _, p := range ch.Params {
		t = strings.Replace(t, "{"+p+"}", values[p], 1)
	}
	return t
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
