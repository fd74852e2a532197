package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// Bounds on the work a scenario may cause, counting alias expansion, so that
// an alias bomb or a self-referencing anchor fails instead of hanging.
const (
	maxNodes = 1 << 20
	maxDepth = 64
)

// parseError is an error in a scenario, located by file, line and the path
// of the offending key ("gpus[2].fields").
type parseError struct {
	file string
	line int
	path string
	msg  string
}

func (e *parseError) Error() string {
	if e.path == "" {
		return fmt.Sprintf("scenario %s:%d: %s", e.file, e.line, e.msg)
	}
	return fmt.Sprintf("scenario %s:%d: %s: %s", e.file, e.line, e.path, e.msg)
}

// decoder walks yaml.Node trees, so that every error can say where it is.
type decoder struct {
	file    string
	catalog *fields.Catalog
}

func (d *decoder) errf(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &parseError{file: d.file, line: line, path: path, msg: fmt.Sprintf(format, args...)}
}

// document parses data into its single root node.
func (d *decoder) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(validUTF8(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &parseError{file: d.file, line: 1, msg: "empty scenario"}
		}
		return nil, d.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, d.yamlError(err)
		}
		return nil, d.errf(&extra, "", "more than one YAML document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &parseError{file: d.file, line: 1, msg: "empty scenario"}
	}
	root := doc.Content[0]
	if !(&sizeCheck{}).walk(root, 0) {
		return nil, d.errf(root, "", "scenario too large or too deeply nested (aliases count as copies)")
	}
	return root, nil
}

// validUTF8 replaces each run of bytes that is not UTF-8 with U+FFFD, so
// that a scenario with Latin-1 text or a stray byte loads, as every other
// string input of the exporter does, instead of failing in the YAML reader
// ("invalid leading UTF-8 octet"); the YAML reader never returns such
// bytes, so every string of a scenario is UTF-8. UTF-16 files, which the
// reader decodes itself, are recognised by their byte order mark.
func validUTF8(data []byte) []byte {
	if utf8.Valid(data) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return data
	}
	return bytes.ToValidUTF8(data, []byte("\uFFFD"))
}

// yamlError turns "yaml: line 3: …" into a file:line error.
func (d *decoder) yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if line, convErr := strconv.Atoi(num); convErr == nil {
				return &parseError{file: d.file, line: line, msg: text}
			}
		}
	}
	return &parseError{file: d.file, line: 1, msg: msg}
}

type sizeCheck struct{ nodes int }

func (c *sizeCheck) walk(n *yaml.Node, depth int) bool {
	if n == nil {
		return true
	}
	c.nodes++
	if c.nodes > maxNodes || depth > maxDepth {
		return false
	}
	if n.Kind == yaml.AliasNode {
		return c.walk(n.Alias, depth+1)
	}
	for _, child := range n.Content {
		if !c.walk(child, depth+1) {
			return false
		}
	}
	return true
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	default:
		return "an unexpected node"
	}
}

func keyPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// entry is one key/value pair of a mapping.
type entry struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

// entries returns the pairs of a mapping in document order, with YAML merge
// keys (<<) expanded; keys written out override merged ones.
func (d *decoder) entries(n *yaml.Node, path string) ([]entry, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, path, "want a mapping, got %s", describe(n))
	}
	var own, merged []entry
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			src, err := d.mergeSources(v, path)
			if err != nil {
				return nil, err
			}
			merged = append(merged, src...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, d.errf(k, path, "keys must be plain strings, got %s", describe(k))
		}
		if seen[k.Value] {
			return nil, d.errf(k, path, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		own = append(own, entry{key: k.Value, keyNode: k, val: v})
	}
	for _, e := range merged {
		if !seen[e.key] {
			seen[e.key] = true
			own = append(own, e)
		}
	}
	return own, nil
}

func (d *decoder) mergeSources(v *yaml.Node, path string) ([]entry, error) {
	v = resolve(v)
	switch v.Kind {
	case yaml.MappingNode:
		return d.entries(v, path)
	case yaml.SequenceNode:
		var out []entry
		for _, item := range v.Content {
			e, err := d.entries(item, path)
			if err != nil {
				return nil, err
			}
			out = append(out, e...)
		}
		return out, nil
	default:
		return nil, d.errf(v, path, "merge key << needs a mapping or a list of mappings, got %s", describe(v))
	}
}

// object is a mapping whose keys were checked against the known ones.
type object struct {
	d       *decoder
	node    *yaml.Node
	path    string
	entries []entry
	byKey   map[string]*entry
}

func (d *decoder) object(n *yaml.Node, path string, known ...string) (*object, error) {
	es, err := d.entries(n, path)
	if err != nil {
		return nil, err
	}
	o := &object{d: d, node: resolve(n), path: path, entries: es, byKey: make(map[string]*entry, len(es))}
	for i := range es {
		e := &es[i]
		ok := false
		for _, k := range known {
			if e.key == k {
				ok = true
				break
			}
		}
		if !ok {
			return nil, d.errf(e.keyNode, path, "unknown key %q (want one of %s)", e.key, strings.Join(known, ", "))
		}
		o.byKey[e.key] = e
	}
	return o, nil
}

func (o *object) has(key string) bool { return o.byKey[key] != nil }

// require fails unless every key is present.
func (o *object) require(keys ...string) error {
	for _, k := range keys {
		if !o.has(k) {
			return o.d.errf(o.node, o.path, "missing key %q", k)
		}
	}
	return nil
}

// at returns the value node of key and its path; nil when absent.
func (o *object) at(key string) (*yaml.Node, string) {
	e := o.byKey[key]
	if e == nil {
		return nil, ""
	}
	return e.val, keyPath(o.path, key)
}

func (o *object) str(key string) (string, error) {
	n, p := o.at(key)
	if n == nil {
		return "", nil
	}
	return o.d.str(n, p)
}

func (o *object) num(key string, def float64) (float64, error) {
	n, p := o.at(key)
	if n == nil {
		return def, nil
	}
	return o.d.num(n, p)
}

func (o *object) integer(key string, lo, hi int64) (int64, error) {
	n, p := o.at(key)
	if n == nil {
		return 0, nil
	}
	return o.d.integer(n, p, lo, hi)
}

func (o *object) boolean(key string) (bool, error) {
	n, p := o.at(key)
	if n == nil {
		return false, nil
	}
	return o.d.boolean(n, p)
}

// truth reads a flag that may only be written as true (outage: true).
func (o *object) truth(key string) (bool, error) {
	n, p := o.at(key)
	if n == nil {
		return false, nil
	}
	v, err := o.d.boolean(n, p)
	if err == nil && !v {
		err = o.d.errf(n, p, "may only be true (leave it out instead)")
	}
	return v, err
}

func (o *object) duration(key string, allowNegative bool) (time.Duration, error) {
	n, p := o.at(key)
	if n == nil {
		return 0, nil
	}
	return o.d.duration(n, p, allowNegative)
}

func (d *decoder) scalar(n *yaml.Node, path, want string) (*yaml.Node, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return nil, d.errf(n, path, "want %s, got %s", want, describe(n))
	}
	return n, nil
}

func (d *decoder) str(n *yaml.Node, path string) (string, error) {
	n, err := d.scalar(n, path, "a string")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(n.Value) == "" {
		return "", d.errf(n, path, "must not be empty")
	}
	return n.Value, nil
}

func (d *decoder) num(n *yaml.Node, path string) (float64, error) {
	n, err := d.scalar(n, path, "a number")
	if err != nil {
		return 0, err
	}
	var v float64
	if tag := n.ShortTag(); tag != "!!int" && tag != "!!float" {
		return 0, d.errf(n, path, "want a number, got %s", describe(n))
	}
	if err := n.Decode(&v); err != nil {
		return 0, d.errf(n, path, "want a number, got %s", describe(n))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, d.errf(n, path, "want a finite number, got %s", describe(n))
	}
	return v, nil
}

func (d *decoder) integer(n *yaml.Node, path string, lo, hi int64) (int64, error) {
	n, err := d.scalar(n, path, "an integer")
	if err != nil {
		return 0, err
	}
	var v int64
	if n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, d.errf(n, path, "want an integer, got %s", describe(n))
	}
	if v < lo || v > hi {
		return 0, d.errf(n, path, "%d is out of range [%d, %d]", v, lo, hi)
	}
	return v, nil
}

func (d *decoder) boolean(n *yaml.Node, path string) (bool, error) {
	n, err := d.scalar(n, path, "true or false")
	if err != nil {
		return false, err
	}
	var v bool
	if n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		return false, d.errf(n, path, "want true or false, got %s", describe(n))
	}
	return v, nil
}

func (d *decoder) duration(n *yaml.Node, path string, allowNegative bool) (time.Duration, error) {
	n, err := d.scalar(n, path, "a duration")
	if err != nil {
		return 0, err
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return 0, d.errf(n, path, "invalid duration %q (want e.g. 30s, 5m, 1h30m)", n.Value)
	}
	if v < 0 && !allowNegative {
		return 0, d.errf(n, path, "duration %s is negative", n.Value)
	}
	return v, nil
}

// list returns the items of a sequence.
func (d *decoder) list(n *yaml.Node, path string) ([]*yaml.Node, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, d.errf(n, path, "want a list, got %s", describe(n))
	}
	return n.Content, nil
}
