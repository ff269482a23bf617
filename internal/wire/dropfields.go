package wire

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// A field path of DropFields names a field by the JSON names of the fields
// leading to it, separated by dots: "metadata.managedFields",
// "status.conditions". A list on the way stands for each of its elements:
// "spec.containers.env" is the env of every container. A map field may end
// the path with one key in brackets, to drop that entry only:
// "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]".
// The fields of keptFields can never be dropped.

// dropNode is one field of a compiled projection: a field to drop, map
// entries to drop, or a message (or each message of a list) to descend into.
// A tree of them is built once per ListerWatcher and only read afterwards.
type dropNode struct {
	name  string           // the field's JSON name
	num   protowire.Number // its protobuf field number; 0 if unknown
	drop  bool             // drop the whole field
	keys  []string         // drop the map entries with these keys
	magic bool             // the bytes hold ProtobufMagic and then the message
	sub   []*dropNode      // fields to look at inside the message(s)
}

// fieldPath is one parsed path of DropFields.
type fieldPath struct {
	names  []string
	key    string // the map key in brackets, if any
	hasKey bool
}

// keptFields are the fields DropFields rejects, with why: without them the
// objects could not be decoded, cached, resumed from or checked, and a
// dropped one would fail silently (an empty cache that reports synced, a
// consistency check that sees no difference) rather than loudly.
var keptFields = []struct{ path, why string }{
	{"kind", "the decoders need it to know the type of a watched object (and in protobuf it is not a field of the object)"},
	{"apiVersion", "the decoders need it to know the type of a watched object (and in protobuf it is not a field of the object)"},
	{"metadata", "it holds the name, namespace, resourceVersion and uid the informer needs"},
	{"metadata.name", "the cache keys objects by namespace and name, and drops events of nameless objects"},
	{"metadata.namespace", "the cache keys objects by namespace and name"},
	{"metadata.resourceVersion", "the informer resumes its watches from it, and consistency checks compare it"},
	{"metadata.uid", "shards by UID assign objects by it, and it tells an object from one re-created under its name"},
}

// ValidateDropFields checks the syntax of paths, and that none of them
// drops a field of keptFields, without a type to check their names against
// (compileDropFields does that too, with a type): for options that reach a
// ListerWatcher only later, such as FactoryOptions.DropFields.
func ValidateDropFields(paths []string) error {
	for _, path := range paths {
		if _, err := parseFieldPath(path); err != nil {
			return err
		}
	}
	return nil
}

// parseFieldPath parses one path of DropFields, and rejects the fields of
// keptFields.
func parseFieldPath(path string) (fieldPath, error) {
	var p fieldPath
	rest := path
	if i := strings.IndexByte(rest, '['); i >= 0 {
		key, closed := strings.CutSuffix(rest[i+1:], "]")
		if !closed || key == "" || strings.ContainsAny(key, "[]") {
			return p, fmt.Errorf("field path %q: a map key goes in one pair of brackets at the end, not empty and without brackets inside, as in metadata.annotations[example.com/key]", path)
		}
		p.key, p.hasKey = key, true
		rest = rest[:i]
	}
	if rest == "" {
		return p, fmt.Errorf("field path %q: no field name", path)
	}
	p.names = strings.Split(rest, ".")
	for _, name := range p.names {
		if name == "" || strings.ContainsAny(name, "[]") {
			return p, fmt.Errorf("field path %q: field names are separated by single dots, as in status.conditions", path)
		}
	}
	// For unstructured objects, whose fields are all maps, a key in
	// brackets is one more field: metadata[uid] is metadata.uid.
	full := p.names
	if p.hasKey {
		full = append(slices.Clip(full), p.key)
	}
	for _, kept := range keptFields {
		if strings.Join(full, ".") == kept.path {
			return p, fmt.Errorf("field path %q: %s must never be dropped: %s", path, kept.path, kept.why)
		}
	}
	return p, nil
}

// compileDropFields builds the projection tree of paths for the Go type typ
// (a pointer to a struct), checking every name against typ's JSON field
// names and finding the protobuf field numbers in its struct tags. A nil
// typ (unstructured objects) checks only the syntax. withProtobuf requires
// every field on a path to have a protobuf number, for a ListerWatcher that
// asks for protobuf. It returns nil for no paths.
func compileDropFields(paths []string, typ reflect.Type, withProtobuf bool) (*dropNode, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	root := &dropNode{}
	for _, path := range paths {
		p, err := parseFieldPath(path)
		if err != nil {
			return nil, err
		}
		node := root
		t := typ
		for i, name := range p.names {
			var num protowire.Number
			if typ != nil {
				field, inlined, ok := jsonField(t, name)
				if !ok {
					return nil, fmt.Errorf("field path %q: %v has no field %q%s", path, t, name, knownFields(t))
				}
				num = protobufNumber(field)
				if inlined {
					// Its number is one in the embedded struct's message,
					// which protobuf nests in t's as a field of its own
					// (Volume's VolumeSource): in t's message the number
					// names another field.
					if withProtobuf {
						return nil, fmt.Errorf("field path %q: %v.%s is inlined from an embedded struct, which protobuf encodes as a field of its own: drop it from JSON (ContentTypeJSON)", path, t, field.Name)
					}
					num = 0
				}
				if withProtobuf && num == 0 {
					return nil, fmt.Errorf("field path %q: %v.%s has no protobuf field number, and protobuf is asked for", path, t, field.Name)
				}
				last := i == len(p.names)-1
				ft := field.Type
				for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
					ft = ft.Elem()
				}
				switch {
				case last && p.hasKey:
					if ft.Kind() != reflect.Map || ft.Key().Kind() != reflect.String {
						return nil, fmt.Errorf("field path %q: %v.%s is not a map with string keys", path, t, field.Name)
					}
				case !last && ft.Kind() != reflect.Struct:
					return nil, fmt.Errorf("field path %q: %v.%s has no fields to name", path, t, field.Name)
				}
				t = ft
			}
			node = node.child(name, num)
			if node.drop {
				break // a shorter path drops it all already
			}
		}
		switch {
		case node.drop:
		case p.hasKey:
			if !slices.Contains(node.keys, p.key) {
				node.keys = append(node.keys, p.key)
			}
		default:
			node.drop, node.keys, node.sub = true, nil, nil
		}
	}
	return root, nil
}

// child returns n's child named name, adding it if needed.
func (n *dropNode) child(name string, num protowire.Number) *dropNode {
	for _, c := range n.sub {
		if c.name == name {
			return c
		}
	}
	c := &dropNode{name: name, num: num}
	n.sub = append(n.sub, c)
	return c
}

// byNumber returns n's child with protobuf field number num, or nil.
func (n *dropNode) byNumber(num protowire.Number) *dropNode {
	for _, c := range n.sub {
		if c.num == num {
			return c
		}
	}
	return nil
}

// byName returns n's child with JSON name name, or nil.
func (n *dropNode) byName(name []byte) *dropNode {
	for _, c := range n.sub {
		if c.name == string(name) {
			return c
		}
	}
	return nil
}

// jsonField finds the field of struct type t whose JSON name is name,
// looking into inlined embedded structs; inlined says it was found in one.
func jsonField(t reflect.Type, name string) (field reflect.StructField, inlined, ok bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tagName, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tagName == "-" && opts == "" {
			continue
		}
		if f.Anonymous && tagName == "" && f.Type.Kind() == reflect.Struct {
			// Inlined, as encoding/json does with embedded structs.
			if inner, _, ok := jsonField(f.Type, name); ok {
				return inner, true, true
			}
			continue
		}
		if tagName == "" {
			tagName = f.Name
		}
		if tagName == name && f.IsExported() {
			return f, false, true
		}
	}
	return reflect.StructField{}, false, false
}

// knownFields lists the JSON names of t's fields for an error message.
func knownFields(t reflect.Type) string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
				walk(f.Type)
			case name != "" && name != "-":
				names = append(names, name)
			}
		}
	}
	walk(t)
	if len(names) == 0 {
		return ""
	}
	return " (it has " + strings.Join(names, ", ") + ")"
}

// protobufNumber returns the field number of a generated protobuf struct
// field from its tag (`protobuf:"bytes,12,rep,name=annotations"`), or 0.
func protobufNumber(f reflect.StructField) protowire.Number {
	parts := strings.Split(f.Tag.Get("protobuf"), ",")
	if len(parts) < 2 {
		return 0
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 {
		return 0
	}
	return protowire.Number(n)
}

// itemsNumber returns the protobuf field number of the Items field of the
// list type listType (a pointer to a struct), or 0.
func itemsNumber(listType reflect.Type) protowire.Number {
	for listType.Kind() == reflect.Pointer {
		listType = listType.Elem()
	}
	if f, ok := listType.FieldByName("Items"); ok {
		return protobufNumber(f)
	}
	return 0
}
