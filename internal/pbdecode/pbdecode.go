// Package pbdecode writes the informer's protobuf decoder of the built-in
// types of roots (decode_gen.go in internal/wire; hack/pbdecode is
// its command): one function per struct type reachable from a root, found by
// reflection over the Go types and their protobuf struct tags, that
// decodes as the type's gogo-generated Unmarshal does but takes every
// string and byte slice from the informer's intern table instead of
// allocating it (but those of the types with hand-written methods, decoded
// by them: resource.Quantity, metav1.Time), and shares the sub-objects of
// share_core.go's list between objects (share_decode.go); beside each, the
// type's refFields, what each of its fields is to the decoder (a string,
// a message, or something else), which the records of references of
// snapshot files follow (refcode.go); and the dispatch from an object's
// type to its root's decoder and refFields. It is a library so
// that a test of internal/wire can regenerate the file in memory and
// fail if the checked-in one is stale.
package pbdecode

import (
	"bytes"
	"fmt"
	"go/format"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// aliases are the import names of the packages the decoder names types
// of; a type of any other package stops the generator, so that a new
// package gets a deliberate name.
var aliases = map[string]string{
	"k8s.io/api/core/v1":                     "corev1",
	"k8s.io/api/apps/v1":                     "appsv1",
	"k8s.io/api/batch/v1":                    "batchv1",
	"k8s.io/api/discovery/v1":                "discoveryv1",
	"k8s.io/api/scheduling/v1alpha3":         "schedulingv1alpha3",
	"k8s.io/apimachinery/pkg/apis/meta/v1":   "metav1",
	"k8s.io/apimachinery/pkg/api/resource":   "resource",
	"k8s.io/apimachinery/pkg/util/intstr":    "intstr",
	"k8s.io/apimachinery/pkg/types":          "types",
	"k8s.io/apimachinery/pkg/runtime":        "runtime",
	"k8s.io/apimachinery/pkg/runtime/schema": "schema",
	"fmt":                                    "fmt",
	"maps":                                   "maps",
	"unsafe":                                 "unsafe",
}

// A resource.Quantity is decoded by InternTable.quantity, which calls its
// Unmarshal but for records of references (refcode.go), whose quantities
// it reuses.

// sameShape lists the types whose Unmarshal is written by hand (not in a
// generated.pb.go) but follows the generated code's rules, so that the
// decoder decodes them itself and interns their contents. Every other
// hand-written one (resource.Quantity, metav1.Time, metav1.MicroTime) is
// decoded by calling its Unmarshal.
var sameShape = map[reflect.Type]bool{
	// fieldsv1.go: one bytes field, Raw, set by SetRawBytes to a copy
	// (empty and not nil for an empty field, as generated code gives).
	reflect.TypeFor[metav1.FieldsV1](): true,
}

// sharePoints are the fields whose values the decoder shares between
// pods at decode time (share_decode.go), keyed by their message's ident
// and their name, with the podShares set holding them: share_core.go's
// list.
var sharePoints = map[string]string{
	"Metav1ObjectMeta.Labels":             "stringMaps",
	"Metav1ObjectMeta.Annotations":        "stringMaps",
	"Metav1ObjectMeta.OwnerReferences":    "ownerRefs",
	"Metav1ObjectMeta.Finalizers":         "strs",
	"Corev1PodSpec.NodeSelector":          "stringMaps",
	"Corev1PodSpec.ImagePullSecrets":      "pullSecrets",
	"Corev1PodSpec.Tolerations":           "tolerations",
	"Corev1PodSpec.SecurityContext":       "podSecurity",
	"Corev1VolumeSource.ConfigMap":        "configMapVols",
	"Corev1VolumeSource.Secret":           "secretVols",
	"Corev1VolumeSource.EmptyDir":         "emptyDirVols",
	"Corev1VolumeSource.DownwardAPI":      "downwardVols",
	"Corev1VolumeSource.Projected":        "projectedVols",
	"Corev1Container.Command":             "strs",
	"Corev1Container.Args":                "strs",
	"Corev1Container.Ports":               "ports",
	"Corev1Container.EnvFrom":             "envFrom",
	"Corev1Container.Env":                 "env",
	"Corev1Container.ResizePolicy":        "resizePolicy",
	"Corev1Container.VolumeMounts":        "mounts",
	"Corev1Container.LivenessProbe":       "probes",
	"Corev1Container.ReadinessProbe":      "probes",
	"Corev1Container.StartupProbe":        "probes",
	"Corev1Container.Lifecycle":           "lifecycles",
	"Corev1Container.SecurityContext":     "securityCtx",
	"Corev1ResourceRequirements.Limits":   "resourceLists",
	"Corev1ResourceRequirements.Requests": "resourceLists",
}

// roots are the types the decoder decodes, each an object type then its
// list type: the built-in types that dominate informers' memory. Adding
// one here is all it takes to decode it interned.
var roots = []reflect.Type{
	reflect.TypeFor[corev1.Pod](), reflect.TypeFor[corev1.PodList](),
	reflect.TypeFor[corev1.Node](), reflect.TypeFor[corev1.NodeList](),
	reflect.TypeFor[corev1.Service](), reflect.TypeFor[corev1.ServiceList](),
	reflect.TypeFor[corev1.ConfigMap](), reflect.TypeFor[corev1.ConfigMapList](),
	reflect.TypeFor[corev1.Secret](), reflect.TypeFor[corev1.SecretList](),
	reflect.TypeFor[corev1.Namespace](), reflect.TypeFor[corev1.NamespaceList](),
	reflect.TypeFor[discoveryv1.EndpointSlice](), reflect.TypeFor[discoveryv1.EndpointSliceList](),
	reflect.TypeFor[appsv1.Deployment](), reflect.TypeFor[appsv1.DeploymentList](),
	reflect.TypeFor[appsv1.ReplicaSet](), reflect.TypeFor[appsv1.ReplicaSetList](),
	reflect.TypeFor[appsv1.StatefulSet](), reflect.TypeFor[appsv1.StatefulSetList](),
	reflect.TypeFor[appsv1.DaemonSet](), reflect.TypeFor[appsv1.DaemonSetList](),
	reflect.TypeFor[batchv1.Job](), reflect.TypeFor[batchv1.JobList](),
}

// Roots returns the types the decoder decodes (see roots), so that a test
// can check it tests each.
func Roots() []reflect.Type {
	return slices.Clone(roots)
}

// RootName returns the name of the decoder's entry point for root:
// unmarshal and the type's name, or, if roots holds another type of that
// name, then Of and its package's alias (unmarshalEventOfEventsv1): not
// ident, which names the message's decoder.
func RootName(root reflect.Type) string {
	for _, r := range roots {
		if r != root && r.Name() == root.Name() {
			alias := aliases[root.PkgPath()]
			return "unmarshal" + root.Name() + "Of" + strings.ToUpper(alias[:1]) + alias[1:]
		}
	}
	return "unmarshal" + root.Name()
}

// Generate returns the source of the decoder, gofmt-ed.
func Generate() ([]byte, error) {
	g := &generator{seen: map[reflect.Type]bool{}, imports: map[string]bool{}, maps: map[reflect.Type]bool{}, shared: map[string]bool{}}
	var body bytes.Buffer
	g.w = &body
	g.dispatch()
	for _, root := range roots {
		g.queue = append(g.queue, root)
		g.seen[root] = true
		g.p("// %s decodes data into m as m.Reset(); m.Unmarshal(data) does,", RootName(root))
		g.p("// taking every string and byte slice from t (see InternTable.strFrom)")
		g.p("// and, if t.shareSubObjects, sharing sub-objects with other objects")
		g.p("// decoded through t (see share_decode.go): none of m's points into")
		g.p("// data. The caller holds t.mu.")
		g.p("func %s(t *InternTable, data []byte, m *%s) error {", RootName(root), g.typeName(root))
		g.p("*m = %s{}", g.typeName(root))
		g.p("if err := %s(t, data, m); err != nil {", g.funcName(root))
		g.p("return fmt.Errorf(\"proto: %%w\", err)")
		g.p("}")
		g.p("return nil")
		g.p("}")
		g.p("")
	}
	g.imports["fmt"] = true
	for len(g.queue) > 0 {
		typ := g.queue[0]
		g.queue = g.queue[1:]
		if err := g.message(typ); err != nil {
			return nil, err
		}
	}
	var mapTypes []reflect.Type
	for m := range g.maps {
		mapTypes = append(mapTypes, m)
	}
	sort.Slice(mapTypes, func(i, j int) bool { return g.mapFuncName(mapTypes[i]) < g.mapFuncName(mapTypes[j]) })
	for _, m := range mapTypes {
		if err := g.mapEntry(m); err != nil {
			return nil, err
		}
	}
	for point := range sharePoints {
		if !g.shared[point] {
			return nil, fmt.Errorf("share point %s: no such field of a message", point)
		}
	}
	var out bytes.Buffer
	fmt.Fprintln(&out, "// Code generated by hack/pbdecode (internal/pbdecode); DO NOT EDIT.")
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "package wire")
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "import (")
	var paths []string
	for p := range g.imports {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if alias := aliases[p]; alias != path.Base(p) {
			fmt.Fprintf(&out, "%s ", alias)
		}
		fmt.Fprintf(&out, "%q\n", p)
	}
	fmt.Fprintln(&out, ")")
	out.Write(body.Bytes())
	src, err := format.Source(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the decoder: %w\n%s", err, out.Bytes())
	}
	return src, nil
}

// dispatch writes unmarshalInterned and decodesInternedType, which
// choose the decoder of roots by an object's type.
func (g *generator) dispatch() {
	g.p("// unmarshalInterned decodes data into msg through t, holding t.mu, if")
	g.p("// msg's type has an interning decoder (see Unmarshal), and reports")
	g.p("// whether it did. refs, if not nil, is the form of data's strings")
	g.p("// other than the wire's (see refcode.go), set on t while it decodes.")
	g.p("func unmarshalInterned(t *InternTable, refs *refMode, data []byte, msg ProtobufMessage) (handled bool, err error) {")
	g.p("switch m := msg.(type) {")
	for _, root := range roots {
		g.p("case *%s:", g.typeName(root))
		g.p("t.lockWith(refs)")
		g.p("defer t.unlock()")
		g.p("return true, %s(t, data, m)", RootName(root))
	}
	g.p("}")
	g.p("return false, nil")
	g.p("}")
	g.p("")
	g.p("// refFieldsOf returns the fields of msg's type to the records of")
	g.p("// references (refcode.go), or nil if it has no interning decoder.")
	g.p("func refFieldsOf(msg ProtobufMessage) refFields {")
	g.p("switch msg.(type) {")
	for _, root := range roots {
		g.p("case *%s:", g.typeName(root))
		g.p("return %s", refFieldsName(root))
	}
	g.p("}")
	g.p("return nil")
	g.p("}")
	g.p("")
	g.p("// decodesInternedType reports whether obj's type has an interning")
	g.p("// decoder (see unmarshalInterned).")
	g.p("func decodesInternedType(obj any) bool {")
	g.p("switch obj.(type) {")
	var cases []string
	for _, root := range roots {
		cases = append(cases, "*"+g.typeName(root))
	}
	g.p("case %s:", strings.Join(cases, ", "))
	g.p("return true")
	g.p("}")
	g.p("return false")
	g.p("}")
	g.p("")
}

type generator struct {
	w       *bytes.Buffer
	queue   []reflect.Type        // message types to write
	seen    map[reflect.Type]bool // message types queued or written
	maps    map[reflect.Type]bool // map types whose entry decoder is needed
	imports map[string]bool       // package paths named
	counted map[string]int        // index in counts of the message's fields counted
	keep    map[string]int        // index in keep of the message's share points
	shared  map[string]bool       // share points written
}

func (g *generator) p(format string, args ...any) {
	fmt.Fprintf(g.w, format, args...)
	g.w.WriteByte('\n')
}

// typeName returns the Go expression of t in the generated file.
func (g *generator) typeName(t reflect.Type) string {
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name()
		}
		alias, ok := aliases[t.PkgPath()]
		if !ok {
			panic(fmt.Sprintf("pbdecode: no import name for package %s (type %s): add one to aliases", t.PkgPath(), t))
		}
		g.imports[t.PkgPath()] = true
		return alias + "." + t.Name()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + g.typeName(t.Elem())
	case reflect.Slice:
		return "[]" + g.typeName(t.Elem())
	case reflect.Map:
		return "map[" + g.typeName(t.Key()) + "]" + g.typeName(t.Elem())
	}
	panic(fmt.Sprintf("pbdecode: unnamed type %s", t))
}

// ident returns t's name as part of an identifier: its package's alias,
// capitalized, then its name.
func ident(t reflect.Type) string {
	alias := aliases[t.PkgPath()]
	return strings.ToUpper(alias[:1]) + alias[1:] + t.Name()
}

func (g *generator) funcName(t reflect.Type) string {
	return "unmarshal" + ident(t)
}

func (g *generator) mapFuncName(t reflect.Type) string {
	if t.Name() != "" {
		return "unmarshal" + ident(t) + "Entry"
	}
	name := func(t reflect.Type) string {
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return "Bytes"
		}
		if t.PkgPath() == "" {
			return strings.ToUpper(t.Name()[:1]) + t.Name()[1:]
		}
		return ident(t)
	}
	return "unmarshalMap" + name(t.Key()) + "To" + name(t.Elem()) + "Entry"
}

// handWritten reports whether t's Unmarshal is written by hand (not in a
// generated.pb.go) and not listed in sameShape.
func handWritten(t reflect.Type) bool {
	m, ok := reflect.PointerTo(t).MethodByName("Unmarshal")
	if !ok {
		panic(fmt.Sprintf("pbdecode: %s has no Unmarshal method", t))
	}
	pc := m.Func.Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	if filepath.Base(file) == "generated.pb.go" {
		return false
	}
	return !sameShape[t]
}

// tag is a parsed protobuf struct tag.
type tag struct {
	wire string // varint, bytes
	num  int
	name string
}

func parseTag(s string) (tag, error) {
	parts := strings.Split(s, ",")
	if len(parts) < 3 {
		return tag{}, fmt.Errorf("protobuf tag %q", s)
	}
	num, err := strconv.Atoi(parts[1])
	if err != nil {
		return tag{}, fmt.Errorf("protobuf tag %q: %w", s, err)
	}
	tg := tag{wire: parts[0], num: num}
	for _, p := range parts[3:] {
		if name, ok := strings.CutPrefix(p, "name="); ok {
			tg.name = name
		}
	}
	return tg, nil
}

// message queues t, a message type, for writing, and returns the
// expression decoding b into the message at pointer expression ptr.
func (g *generator) decodeMessage(t reflect.Type, b, ptr string) string {
	if t == reflect.TypeFor[resource.Quantity]() {
		g.typeName(t) // imports its package
		return fmt.Sprintf("t.quantity(%s, %s)", ptr, b)
	}
	if handWritten(t) {
		g.typeName(t) // imports its package
		return fmt.Sprintf("%s.Unmarshal(%s)", strings.TrimPrefix(ptr, "&"), b)
	}
	if !g.seen[t] {
		g.seen[t] = true
		g.queue = append(g.queue, t)
	}
	return fmt.Sprintf("%s(t, %s, %s)", g.funcName(t), b, ptr)
}

func isVarint(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// varint returns the expression converting v, a uint64 read as a varint,
// to t, as gogo's code does (truncating to 32 bits for 32-bit types).
func (g *generator) varint(t reflect.Type, v string) string {
	if t.Kind() == reflect.Bool {
		if t.Name() == "bool" {
			return v + " != 0"
		}
		return g.typeName(t) + "(" + v + " != 0)"
	}
	return g.typeName(t) + "(" + v + ")"
}

// str returns the expression of the string data[s:e] as type t.
func (g *generator) str(t reflect.Type) string {
	if t.Name() == "string" && t.PkgPath() == "" {
		return "t.strFrom(data[s:e])"
	}
	return g.typeName(t) + "(t.strFrom(data[s:e]))"
}

// message writes the decoder of message type t.
func (g *generator) message(t reflect.Type) error {
	name := t.Name()
	g.p("")
	g.p("func %s(t *InternTable, data []byte, m *%s) error {", g.funcName(t), g.typeName(t))
	// The repeated fields of messages and strings get their slice's
	// capacity from pbCountFields (see there).
	// Share points are counted too: a value is shared only if its bytes
	// hold every occurrence of its field.
	g.counted, g.keep = map[string]int{}, map[string]int{}
	var tags []string
	var points []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		s, ok := f.Tag.Lookup("protobuf")
		if !ok {
			continue
		}
		_, point := sharePoints[ident(t)+"."+f.Name]
		if point {
			g.keep[f.Name] = len(points)
			points = append(points, f)
		}
		if elem := f.Type.Kind() == reflect.Slice && (f.Type.Elem().Kind() == reflect.Struct || f.Type.Elem().Kind() == reflect.String); elem || point {
			tg, err := parseTag(s)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", t, f.Name, err)
			}
			g.counted[f.Name] = len(tags)
			tags = append(tags, fmt.Sprintf("%d<<3 | 2", tg.num))
		}
	}
	if len(tags) > 0 {
		g.p("var counts [%d]int", len(tags))
		g.p("counted := false")
	}
	if len(points) > 0 {
		g.p("// keep holds the share points to keep as canonical once decoded;")
		g.p("// owned, those created (or copied) by this call, hence not canonical.")
		g.p("var keep [%d]rawRun", len(points))
		g.p("var owned [%d]bool", len(points))
	}
	g.p("for i := 0; i < len(data); {")
	// A one-byte tag, length or varint is read here, anything else by
	// the functions of protowire.go: they are too large to inline,
	// and calling them for every field cost 10%% of the time.
	g.p("num, typ, next := int32(data[i]>>3), int(data[i]&7), i+1")
	g.p("if data[i] >= 0x80 || typ == 4 || num == 0 {")
	g.p("var err error")
	g.p("if num, typ, next, err = pbTag(data, i, %q); err != nil { return err }", name)
	g.p("}")
	g.p("switch num {")
	nums := map[int]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		s, ok := f.Tag.Lookup("protobuf")
		if !ok {
			if f.IsExported() && !f.Anonymous {
				return fmt.Errorf("%s.%s: no protobuf tag", t, f.Name)
			}
			continue // TypeMeta: not in the encoding
		}
		tg, err := parseTag(s)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t, f.Name, err)
		}
		if prev, dup := nums[tg.num]; dup {
			return fmt.Errorf("%s: fields %s and %s both numbered %d", t, prev, f.Name, tg.num)
		}
		nums[tg.num] = f.Name
		g.p("case %d: // %s", tg.num, tg.name)
		if err := g.field(t, f, tg); err != nil {
			return fmt.Errorf("%s.%s: %w", t, f.Name, err)
		}
	}
	g.p("default:")
	if len(nums) == 0 {
		// A message without fields (scheduling/v1alpha3's
		// WorkloadPodGroupBasicSchedulingPolicy): every field is unknown.
		g.p("_ = next")
	}
	g.p("var err error")
	g.p("if i, err = pbSkip(data, i, len(data)); err != nil { return pbField(%q, \"unknown field\", err) }", name)
	g.p("}")
	g.p("}")
	for _, f := range points {
		g.keepPoint(t, f)
	}
	g.p("return nil")
	g.p("}")
	if err := g.refFields(t); err != nil {
		return err
	}
	if len(tags) > 0 {
		g.p("")
		g.p("// %s are the tags of %s's repeated fields of messages and strings.", g.tagsName(t), name)
		g.p("var %s = [...]uint64{%s}", g.tagsName(t), strings.Join(tags, ", "))
	}
	return nil
}

func (g *generator) tagsName(t reflect.Type) string {
	return "pbTags" + ident(t)
}

// count writes the statement counting the fields of the message t (once
// per call) from data[i:] on.
func (g *generator) count(t reflect.Type) {
	g.p("if !counted { pbCountFields(data, i, %s[:], counts[:]); counted = true }", g.tagsName(t))
}

// presize writes the statement giving the slice of field f, of message
// t, its capacity before its first element, or, if f is a share point,
// the canonical list its bytes were decoded to (see share_decode.go).
func (g *generator) presize(t reflect.Type, f reflect.StructField) {
	field := "m." + f.Name
	if _, ok := g.sharePoint(t, f); ok {
		g.guardPoint(f)
	}
	g.p("if %s == nil {", field)
	g.count(t)
	if set, ok := g.sharePoint(t, f); ok {
		q := g.keep[f.Name]
		g.p("if t.shareSubObjects {")
		g.p("if n, end := pbRun(data, i, next); counts[%d] == n {", g.counted[f.Name])
		g.p("c, cn, h := sharedRaw(t, &t.raw.%s, data[i:end])", set)
		g.p("if c != nil { %s = unsafe.Slice(c, cn); i = end; continue }", field)
		g.p("keep[%d] = rawRun{s: i, e: end, h: h, ok: true}", q)
		g.p("}")
		g.p("}")
		g.imports["unsafe"] = true
	}
	g.p("%s = make(%s, 0, counts[%d])", field, g.typeName(f.Type), g.counted[f.Name])
	g.p("}")
}

// sharePoint reports whether field f of message t is a share point, and
// its set.
func (g *generator) sharePoint(t reflect.Type, f reflect.StructField) (string, bool) {
	key := ident(t) + "." + f.Name
	set, ok := sharePoints[key]
	if ok {
		g.shared[key] = true
	}
	return set, ok
}

// keepPoint writes the statement keeping share point f of message t as
// canonical if keep says so.
func (g *generator) keepPoint(t reflect.Type, f reflect.StructField) {
	set, _ := g.sharePoint(t, f)
	field, q := "m."+f.Name, g.keep[f.Name]
	g.p("if keep[%d].ok {", q)
	switch f.Type.Kind() {
	case reflect.Pointer:
		g.p("keepRaw(t, &t.raw.%s, data, keep[%d], %s, 0, nil)", set, q, field)
	case reflect.Slice:
		g.p("%s = %s[:len(%s):len(%s)]", field, field, field, field)
		g.p("keepRaw(t, &t.raw.%s, data, keep[%d], &%s[0], len(%s), nil)", set, q, field, field)
	case reflect.Map:
		g.p("keepRaw(t, &t.raw.%s, data, keep[%d], mapPointer(%s), 0, pbEntriesWithin)", set, q, field)
	}
	g.p("}")
}

// guardPoint writes the statement dropping share point f from keep if
// this occurrence of it comes after the bytes it was to be kept for
// (pbCountFields, which stops at a group, missed it): the value then
// holds more than those bytes decode to.
func (g *generator) guardPoint(f reflect.StructField) {
	q := g.keep[f.Name]
	g.p("if keep[%d].ok && i >= keep[%d].e { keep[%d].ok = false }", q, q, q)
}

// ownPoint writes the statements making share point f of message t
// (a pointer or map) its own before it is written to: created if nil,
// else copied if this call did not create it, since it may be canonical
// (merged into from a second occurrence); a nil one is first looked up
// among the canonical values by raw, its bytes, which start at start.
func (g *generator) ownPoint(t reflect.Type, f reflect.StructField, set, pre, raw, start, end, create, clone string) {
	field, q := "m."+f.Name, g.keep[f.Name]
	g.guardPoint(f)
	g.p("if %s == nil {", field)
	g.count(t)
	if pre != "" {
		g.p("%s", pre)
	}
	g.p("if t.shareSubObjects && %s {", raw)
	g.p("c, _, h := sharedRaw(t, &t.raw.%s, data[%s:%s])", set, start, end)
	if f.Type.Kind() == reflect.Map {
		g.p("if c != nil { %s = mapAt[%s](c); i = %s; continue }", field, g.typeName(f.Type), end)
	} else {
		g.p("if c != nil { %s = c; i = %s; continue }", field, end)
	}
	g.p("keep[%d] = rawRun{s: %s, e: %s, h: h, ok: true}", q, start, end)
	g.p("}")
	g.p("%s = %s", field, create)
	g.p("owned[%d] = true", q)
	g.p("} else if !owned[%d] {", q)
	g.p("%s = %s", field, clone)
	g.p("owned[%d] = true", q)
	g.p("}")
}

// field writes the case decoding field f of message t, whose tag is at
// data[i:next] with wire type typ.
func (g *generator) field(t reflect.Type, f reflect.StructField, tg tag) error {
	msg, fld := t.Name(), tg.name
	wantWire := func(w int) {
		g.p("if typ != %d { return pbWrongType(%q, %q, typ) }", w, msg, fld)
	}
	fail := fmt.Sprintf("return pbField(%q, %q, err)", msg, fld)
	readLen := func() { g.readLen(fail) }
	// The wire type follows from the Go type, as in generated.proto and
	// hence the generated code; the tag's may differ (PodSpec.Priority's,
	// an int32, says bytes). Only varint and length-delimited fields
	// exist in these types: any other encoding stops the generator.
	check := func(string) error {
		if tg.wire != "varint" && tg.wire != "bytes" {
			return fmt.Errorf("unsupported encoding %s", tg.wire)
		}
		return nil
	}
	ft := f.Type
	field := "m." + f.Name
	switch {
	case ft.Kind() == reflect.String:
		if err := check("bytes"); err != nil {
			return err
		}
		wantWire(2)
		readLen()
		g.p("%s = %s", field, g.str(ft))
		g.p("i = e")
	case isVarint(ft.Kind()):
		if err := check("varint"); err != nil {
			return err
		}
		wantWire(0)
		g.readVarint(fail)
		g.p("%s = %s", field, g.varint(ft, "v"))
		g.p("i = e")
	case ft.Kind() == reflect.Struct:
		if err := check("bytes"); err != nil {
			return err
		}
		wantWire(2)
		readLen()
		g.p("if err := %s; err != nil { %s }", g.decodeMessage(ft, "data[s:e]", "&"+field), fail)
		g.p("i = e")
	case ft.Kind() == reflect.Pointer:
		et := ft.Elem()
		switch {
		case et.Kind() == reflect.Struct:
			if err := check("bytes"); err != nil {
				return err
			}
			wantWire(2)
			readLen()
			if set, ok := g.sharePoint(t, f); ok {
				g.ownPoint(t, f, set, "", fmt.Sprintf("counts[%d] == 1", g.counted[f.Name]), "s", "e", "new("+g.typeName(et)+")", field+".DeepCopy()")
			} else {
				g.p("if %s == nil { %s = new(%s) }", field, field, g.typeName(et))
			}
			g.p("if err := %s; err != nil { %s }", g.decodeMessage(et, "data[s:e]", field), fail)
			g.p("i = e")
		case et.Kind() == reflect.String:
			if err := check("bytes"); err != nil {
				return err
			}
			wantWire(2)
			readLen()
			g.p("x := %s", g.str(et))
			g.p("%s = &x", field)
			g.p("i = e")
		case isVarint(et.Kind()):
			if err := check("varint"); err != nil {
				return err
			}
			wantWire(0)
			g.readVarint(fail)
			g.p("x := %s", g.varint(et, "v"))
			g.p("%s = &x", field)
			g.p("i = e")
		default:
			return fmt.Errorf("unsupported pointer type %s", ft)
		}
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
		if err := check("bytes"); err != nil {
			return err
		}
		wantWire(2)
		readLen()
		g.p("%s = t.bytesFrom(data[s:e])", field)
		g.p("i = e")
	case ft.Kind() == reflect.Slice:
		et := ft.Elem()
		switch {
		case et.Kind() == reflect.String:
			if err := check("bytes"); err != nil {
				return err
			}
			wantWire(2)
			readLen()
			g.presize(t, f)
			g.p("%s = append(%s, %s)", field, field, g.str(et))
			g.p("i = e")
		case et.Kind() == reflect.Struct:
			if err := check("bytes"); err != nil {
				return err
			}
			wantWire(2)
			readLen()
			g.presize(t, f)
			g.p("%s = append(%s, %s{})", field, field, g.typeName(et))
			g.p("if err := %s; err != nil { %s }", g.decodeMessage(et, "data[s:e]", "&"+field+"["+"len("+field+")-1]"), fail)
			g.p("i = e")
		case isVarint(et.Kind()):
			if err := check("varint"); err != nil {
				return err
			}
			// Unpacked (one element per field) or packed (a
			// length-delimited run), as gogo accepts both.
			g.p("switch typ {")
			g.p("case 0:")
			g.readVarint(fail)
			g.p("%s = append(%s, %s)", field, field, g.varint(et, "v"))
			g.p("i = e")
			g.p("case 2:")
			readLen()
			g.p("if n := pbCountVarints(data[s:e]); n != 0 && len(%s) == 0 { %s = make(%s, 0, n) }", field, field, g.typeName(ft))
			g.p("for i = s; i < e; {")
			g.p("var v uint64")
			g.p("if v, i, err = pbVarint(data, i); err != nil { %s }", fail)
			g.p("%s = append(%s, %s)", field, field, g.varint(et, "v"))
			g.p("}")
			g.p("default:")
			g.p("return pbWrongType(%q, %q, typ)", msg, fld)
			g.p("}")
		default:
			return fmt.Errorf("unsupported slice type %s", ft)
		}
	case ft.Kind() == reflect.Map:
		if err := check("bytes"); err != nil {
			return err
		}
		if ft.Key().Kind() != reflect.String {
			return fmt.Errorf("unsupported map key type %s", ft.Key())
		}
		switch vt := ft.Elem(); {
		case vt.Kind() == reflect.String:
		case vt.Kind() == reflect.Slice && vt.Elem().Kind() == reflect.Uint8:
		case vt.Kind() == reflect.Struct:
			g.decodeMessage(vt, "", "") // queues it
		default:
			return fmt.Errorf("unsupported map value type %s", vt)
		}
		g.maps[ft] = true
		wantWire(2)
		readLen()
		if set, ok := g.sharePoint(t, f); ok {
			clone := field + ".DeepCopy()"
			if _, ok := ft.MethodByName("DeepCopy"); !ok {
				clone = "maps.Clone(" + field + ")"
				g.imports["maps"] = true
			}
			g.ownPoint(t, f, set, "n, end := pbRun(data, i, next)", fmt.Sprintf("counts[%d] == n", g.counted[f.Name]), "i", "end", "make("+g.typeName(ft)+", n)", clone)
		} else {
			g.p("if %s == nil { %s = make(%s) }", field, field, g.typeName(ft))
		}
		g.p("if err := %s(t, data, s, e, %s); err != nil { %s }", g.mapFuncName(ft), field, fail)
		g.p("i = e")
	default:
		return fmt.Errorf("unsupported type %s", ft)
	}
	return nil
}

// readLen writes the statements reading the length at data[next:] of a
// length-delimited value into its bounds s and e, or running fail.
func (g *generator) readLen(fail string) {
	g.p("s, e, err := next+1, next+1, error(nil)")
	g.p("if next < len(data) && data[next] < 0x80 && next+1+int(data[next]) <= len(data) {")
	g.p("e += int(data[next])")
	g.p("} else if s, e, err = pbLen(data, next); err != nil {")
	g.p("%s", fail)
	g.p("}")
}

// readVarint writes the statements reading the varint at data[next:]
// into v, and the index after it into e, or running fail.
func (g *generator) readVarint(fail string) {
	g.p("v, e, err := uint64(0), next+1, error(nil)")
	g.p("if next < len(data) && data[next] < 0x80 {")
	g.p("v = uint64(data[next])")
	g.p("} else if v, e, err = pbVarint(data, next); err != nil {")
	g.p("%s", fail)
	g.p("}")
}

// mapEntry writes the decoder of one entry of a map of type t, at
// data[s:e] (as gogo's code, it reads the key and value within data, not
// within the entry, and takes a missing key or value as the zero value).
func (g *generator) mapEntry(t reflect.Type) error {
	g.p("")
	g.p("func %s(t *InternTable, data []byte, s, e int, m %s) error {", g.mapFuncName(t), g.typeName(t))
	g.p("var key %s", g.typeName(t.Key()))
	if vt := t.Elem(); vt.Kind() == reflect.Slice {
		// gogo's code starts from empty bytes, not nil (Secret.data).
		g.p("value := %s{}", g.typeName(vt))
	} else {
		g.p("var value %s", g.typeName(vt))
	}
	g.p("var err error")
	g.p("for i := s; i < e; {")
	g.p("wire, next := uint64(data[i]), i+1")
	g.p("if wire >= 0x80 {")
	g.p("if wire, next, err = pbVarint(data, i); err != nil { return err }")
	g.p("}")
	g.p("switch int32(wire >> 3) {")
	g.p("case 1:")
	g.readLen(`return pbField("map entry", "key", err)`)
	g.p("key = %s", g.str(t.Key()))
	g.p("i = e")
	g.p("case 2:")
	g.readLen(`return pbField("map entry", "value", err)`)
	if vt := t.Elem(); vt.Kind() == reflect.String {
		g.p("value = %s", g.str(vt))
	} else if vt.Kind() == reflect.Slice {
		g.p("value = t.bytesFrom(data[s:e])")
	} else {
		g.p("value = %s{}", g.typeName(vt))
		g.p("if err := %s; err != nil { return pbField(\"map entry\", \"value\", err) }", g.decodeMessage(vt, "data[s:e]", "&value"))
	}
	g.p("i = e")
	g.p("default:")
	g.p("if i, err = pbSkip(data, i, e); err != nil { return err }")
	g.p("}")
	g.p("}")
	g.p("m[key] = value")
	g.p("return nil")
	g.p("}")
	g.p("")
	g.p("// %s are the fields of a map entry of %s to the records of", g.mapRefFieldsName(t), g.typeName(t))
	g.p("// references (refcode.go).")
	g.p("func %s(num int32) (refKind, refFields) {", g.mapRefFieldsName(t))
	g.p("switch num {")
	g.p("case 1:")
	g.p("return refString, nil")
	g.p("case 2:")
	kind, sub := g.refKindOf(t.Elem())
	g.p("return %s, %s", kind, sub)
	g.p("}")
	g.p("return refOther, nil")
	g.p("}")
	return nil
}

// refFieldsName returns the name of the refFields function of message
// type t.
func refFieldsName(t reflect.Type) string {
	return "refFields" + ident(t)
}

// mapRefFieldsName returns the name of the refFields function of an
// entry of map type t.
func (g *generator) mapRefFieldsName(t reflect.Type) string {
	return "refFields" + strings.TrimPrefix(g.mapFuncName(t), "unmarshal")
}

// refKindOf returns what a field's value of type ft (the element type of
// a slice) is to the records of references (refcode.go), as the decoder
// reads it: a string or bytes it takes from the intern table (refString),
// a message it decodes field by field (refMessage, with its refFields),
// or anything else, copied as it is (refOther): numbers, and messages
// decoded by their own Unmarshal (resource.Quantity, metav1.Time).
func (g *generator) refKindOf(ft reflect.Type) (kind, sub string) {
	if ft.Kind() == reflect.Pointer || (ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8) {
		ft = ft.Elem()
	}
	switch {
	case ft.Kind() == reflect.String, ft.Kind() == reflect.Slice:
		return "refString", "nil"
	case ft.Kind() == reflect.Map:
		return "refMessage", g.mapRefFieldsName(ft)
	case ft.Kind() == reflect.Struct && !handWritten(ft):
		return "refMessage", refFieldsName(ft)
	}
	return "refOther", "nil"
}

// refFields writes the refFields function of message type t: what each
// of its fields is to the records of references (refcode.go).
func (g *generator) refFields(t reflect.Type) error {
	g.p("")
	g.p("// %s are the fields of %s to the records of references", refFieldsName(t), g.typeName(t))
	g.p("// (refcode.go).")
	g.p("func %s(num int32) (refKind, refFields) {", refFieldsName(t))
	cases := false
	for i := range t.NumField() {
		f := t.Field(i)
		s, ok := f.Tag.Lookup("protobuf")
		if !ok {
			continue
		}
		tg, err := parseTag(s)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t, f.Name, err)
		}
		if kind, sub := g.refKindOf(f.Type); kind != "refOther" {
			if !cases {
				g.p("switch num {")
				cases = true
			}
			g.p("case %d: // %s", tg.num, tg.name)
			g.p("return %s, %s", kind, sub)
		}
	}
	if cases {
		g.p("}")
	} else {
		g.p("_ = num")
	}
	g.p("return refOther, nil")
	g.p("}")
	return nil
}
