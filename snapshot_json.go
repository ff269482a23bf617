package informer

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"

	sigsjson "sigs.k8s.io/json"
)

// The JSON records of a snapshot, for the objects without protobuf (CRD
// Go types, unstructured objects): a restored object must equal the one
// decoded from the wire. The ListerWatchers decode JSON as client-go does
// (sigs.k8s.io/json: case-sensitive, and a number held in an interface
// value, as in unstructured objects and the map[string]any or any fields
// of CRD Go types, is an int64 if its text has no "." and fits, a float64
// otherwise). So records are decoded the same way, and encoded with
// encoding/json, whose text decodes back to every value the wire can give
// but one: a float64 with an integral value held in an interface (the
// wire's 2.0 or -0.0), which encoding/json writes as 2 or -0, an int64 to
// the decoder. Such floats are written with a fraction (markedFloat), on a
// copy of the object, since the cached one is shared. One change is left:
// a negative zero in a float field marked omitempty is omitted, as zero
// is, and restored as zero (equal to it by ==), as it would be if the
// object were written back to the server.

// decodeJSONRecord decodes rec into obj as the ListerWatchers decode the
// JSON of a T.
func decodeJSONRecord(rec []byte, obj any) error {
	return sigsjson.UnmarshalCaseSensitivePreserveInts(rec, obj)
}

// encodeJSONRecord returns obj's JSON record: encoding/json's encoding of
// obj, or of a copy whose integral floats held in interfaces are marked
// (see above), if it has any.
func encodeJSONRecord[T Object](obj T) (rec []byte, err error) {
	v := reflect.ValueOf(obj)
	if !holdsInterfaces(v.Type()) || !walkFloats(v, false) {
		return json.Marshal(obj)
	}
	defer func() {
		// DeepCopyObject panics on a value decoding never makes (such as
		// an int a transform put into an unstructured object).
		if r := recover(); r != nil {
			rec, err = nil, fmt.Errorf("copying the object to encode it: %v", r)
		}
	}()
	cp := obj.DeepCopyObject()
	walkFloats(reflect.ValueOf(cp), true)
	return json.Marshal(cp)
}

// markedFloat is a float64 that encodes with a fraction: 2 as 2.0, -0 as
// -0.0, so that it decodes as a float64 again.
type markedFloat float64

// MarshalJSON implements json.Marshaler.
func (f markedFloat) MarshalJSON() ([]byte, error) {
	return append(strconv.AppendFloat(nil, float64(f), 'f', -1, 64), ".0"...), nil
}

// needsMark tells whether encoding/json writes f, held in an interface,
// as text that decodes to an int64: an integral value written without an
// exponent (encoding/json uses one from 1e21 on).
func needsMark(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) < 1e21
}

// walkFloats reports whether v holds, in an interface value that
// encoding/json encodes (exported fields, map values, elements, pointed-to
// values), a float64 that needs a mark; with mark, it replaces each by a
// markedFloat, which v must allow (a copy of the object, through a
// pointer, so that what it holds is settable).
func walkFloats(v reflect.Value, mark bool) bool {
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && holdsInterfaces(v.Type().Elem()) && walkFloats(v.Elem(), mark)
	case reflect.Interface:
		if v.IsNil() || !v.CanInterface() {
			return false // an unexported field, which encoding/json skips
		}
		if f, ok := v.Interface().(float64); ok {
			if !needsMark(f) {
				return false
			}
			if mark && v.CanSet() {
				v.Set(reflect.ValueOf(markedFloat(f)))
			}
			return true
		}
		if mark && v.CanSet() {
			// The JSON values decoding makes are found and changed in
			// place; anything else a transform put there, through a
			// settable copy set back.
			v.Set(reflect.ValueOf(markAny(v.Interface())))
			return true
		}
		return anyHasFloats(v.Interface())
	case reflect.Struct:
		found := false
		for i := range v.NumField() {
			if f := v.Type().Field(i); (f.IsExported() || f.Anonymous) && holdsInterfaces(f.Type) && walkFloats(v.Field(i), mark) {
				found = true
				if !mark {
					return true
				}
			}
		}
		return found
	case reflect.Slice, reflect.Array:
		if !holdsInterfaces(v.Type().Elem()) {
			return false
		}
		if l, ok := jsonValue[[]any](v); ok {
			return mark && markAny(l) != nil || !mark && anyHasFloats(l)
		}
		found := false
		for i := range v.Len() {
			if walkFloats(v.Index(i), mark) {
				found = true
				if !mark {
					return true
				}
			}
		}
		return found
	case reflect.Map:
		if !holdsInterfaces(v.Type().Elem()) || !v.CanInterface() {
			return false
		}
		if m, ok := jsonValue[map[string]any](v); ok {
			// Unstructured content: walked (and marked in place) without
			// reflection.
			return mark && markAny(m) != nil || !mark && anyHasFloats(m)
		}
		found := false
		for iter := v.MapRange(); iter.Next(); {
			// Map values cannot be set in place: each is walked in a
			// settable copy, set back when marked.
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			if walkFloats(e, mark) {
				found = true
				if !mark {
					return true
				}
				v.SetMapIndex(iter.Key(), e)
			}
		}
		return found
	}
	return false
}

// jsonValue returns v's value if v is of type V (the map[string]any and
// []any of decoded JSON) and may be read.
func jsonValue[V map[string]any | []any](v reflect.Value) (V, bool) {
	if v.Type() != reflect.TypeFor[V]() || !v.CanInterface() {
		return nil, false
	}
	x, _ := v.Interface().(V)
	return x, true
}

// anyHasFloats is walkFloats for a value held in an interface, without
// marking: the JSON values decoding makes by a type switch, others by
// reflection.
func anyHasFloats(x any) bool {
	switch x := x.(type) {
	case nil, string, bool, int64:
		return false
	case float64:
		return needsMark(x)
	case map[string]any:
		for _, e := range x {
			if anyHasFloats(e) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range x {
			if anyHasFloats(e) {
				return true
			}
		}
		return false
	}
	v := reflect.ValueOf(x)
	return holdsInterfaces(v.Type()) && walkFloats(v, false)
}

// markAny returns x with the floats that need a mark marked: in place in
// the maps and slices decoding makes, which x's owner (a copy) owns.
func markAny(x any) any {
	switch x := x.(type) {
	case float64:
		if needsMark(x) {
			return markedFloat(x)
		}
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = markAny(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = markAny(e)
		}
		return x
	case nil, string, bool, int64:
		return x
	}
	v := reflect.ValueOf(x)
	if !holdsInterfaces(v.Type()) {
		return x
	}
	cp := reflect.New(v.Type()).Elem()
	cp.Set(v)
	walkFloats(cp, true)
	return cp.Interface()
}

// interfaceHolders caches holdsInterfaces by type.
var interfaceHolders sync.Map // reflect.Type -> bool

// holdsInterfaces tells whether a value of type t may hold an interface
// value that encoding/json encodes: t is an interface type, or one of its
// exported fields, elements or pointed-to types is or holds one.
func holdsInterfaces(t reflect.Type) bool {
	if held, ok := interfaceHolders.Load(t); ok {
		return held.(bool)
	}
	// The search from t is complete (every type reachable from t is
	// visited), so its answer can be cached; the visited set ends cycles.
	held := reachesInterface(t, map[reflect.Type]bool{})
	interfaceHolders.Store(t, held)
	return held
}

// reachesInterface is holdsInterfaces's search, not visiting visited.
func reachesInterface(t reflect.Type, visited map[reflect.Type]bool) bool {
	if visited[t] {
		return false
	}
	visited[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return reachesInterface(t.Elem(), visited)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && reachesInterface(f.Type, visited) {
				return true
			}
		}
	}
	return false
}
