package informer_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The root package is cut into stages along the data flow (docs/design.md):
// the reflector writes into a ReflectorStore, the queue prepares writes
// through the store's writePreparer, the dispatcher applies them and fans
// out to the listeners, and the informer, the factory and the features
// assemble the stages through the contracts of pipeline.go and
// listwatch.go. These tests keep the stages apart: they build the graph of
// references between the package's non-test files (file A → file B when A
// names a package-level declaration, a method or a field that B declares)
// and check its strongly connected components and the rules below.

// maxComponent is the most files one strongly connected component of the
// file graph may hold. A component is a set of files each of which reaches
// every other through references: none of them can be read, changed or
// tested without the others.
const maxComponent = 15

// stages are the files of each stage. The files of no stage (the informer,
// the factory and the features) assemble the stages and may name any.
var stages = map[string][]string{
	"reflector": {"reflector.go", "reflector_list.go", "reflector_watch.go", "reflector_receive.go",
		"reflector_errors.go", "reflector_failures.go", "reflector_requests.go",
		"reflector_resume.go", "watchlist.go", "backoff.go", "resync.go"},
	"store": {"indexer.go", "indexes.go", "index_namespace.go", "index_label.go", "index_func.go",
		"nametable.go", "contents.go", "selection.go", "writeprep.go", "lister.go", "readyourwrites.go"},
	"delivery": {"queue.go", "dispatch.go", "admission.go", "listener.go", "buffer.go", "ring.go", "processor.go", "handler.go"},
	// The ListerWatchers over a REST client, and the adapters of client-go's.
	"rest": {"restlw.go", "resourcelw.go", "listedscope.go", "listedversions.go", "clients.go", "scope.go", "dropfields.go", "decodingtable.go"},
	// The optional observers (the mutation detector, metrics) and the hooks
	// through which the stages reach them.
	"observers": {"observers.go", "detectmutations.go", "metrics.go"},
}

// mayName are the stages that the files of each stage may name besides
// their own stage's and the contracts (a stage not listed, the observers,
// may name any): the reflector knows only the
// ReflectorStore it writes into, the store neither the queue nor the
// reflector (it hands the queue a writePreparer), the delivery stage the
// store it applies to, and the REST ListerWatchers only what a
// ListerWatcher gives.
var mayName = map[string][]string{
	"reflector": nil,
	"store":     {"observers"},
	"delivery":  {"store", "observers"},
	"rest":      nil,
}

// contracts hold the contracts between the stages, which name only each
// other and, for pipeline.go, the values of contractValues: nothing of a
// stage's implementation (no *eventQueue, *Reflector, *Indexer or
// listener).
var contracts = []string{"object.go", "listwatch.go", "pipeline.go"}

// contractValues are what pipeline.go's contracts are stated in.
var contractValues = []string{
	"ReflectorOptions", "ReflectorStats", "ReflectorRequestStats", // the reflectors' options and counters
	"writePrep", "prepValues", "writePreparer", // the store's prepared write
	"contents", "entry", "posting", // the store's lists, which the index kinds file into
}

// stageOf returns the stage of a root file: "contract", a key of stages, or
// "" for the files of no stage.
func stageOf(file string) string {
	if slices.Contains(contracts, file) {
		return "contract"
	}
	for stage, files := range stages {
		if slices.Contains(files, file) {
			return stage
		}
	}
	return ""
}

func TestStagesStandApart(t *testing.T) {
	g := rootFileGraph(t)
	comps := g.components()
	largest := comps[0]
	t.Logf("%d files; largest strongly connected component: %d files", len(g.files), len(largest))
	if testing.Verbose() {
		t.Logf("the components of more than one file:\n%s", g.describe(comps))
	}
	if len(largest) > maxComponent {
		t.Errorf("the root package's files are tied into a strongly connected component of %d files (at most %d): each reaches every other through references, so the stages no longer stand apart. The components of more than one file, and the references within each:\n%s",
			len(largest), maxComponent, g.describe(comps))
	}
	for _, from := range g.files {
		stage := stageOf(from)
		for to, names := range g.edges[from] {
			toStage := stageOf(to)
			switch {
			case toStage == stage || toStage == "contract" || stage == "":
			case stage == "contract":
				for _, name := range names {
					if from != "pipeline.go" || !slices.Contains(contractValues, name) {
						t.Errorf("%s holds contracts between stages but names %s of %s: a contract names only other contracts and the values of contractValues", from, name, to)
					}
				}
			case checked(stage) && !slices.Contains(mayName[stage], toStage):
				t.Errorf("%s (the %s stage) names %s of %s (%s): the %s stage may name only %s and the contracts of %s",
					from, stage, strings.Join(names, ", "), to, describeStage(toStage), stage, describeStages(append([]string{stage}, mayName[stage]...)), strings.Join(contracts, ", "))
			}
		}
	}
	for stage, files := range stages {
		for _, file := range files {
			if !slices.Contains(g.files, file) {
				t.Errorf("stages[%q] names %s, which is not a file of the package: update stages", stage, file)
			}
		}
	}
}

// checked reports whether mayName restricts the files of stage.
func checked(stage string) bool {
	_, ok := mayName[stage]
	return ok
}

func describeStage(stage string) string {
	if stage == "" {
		return "of no stage"
	}
	return "the " + stage + " stage"
}

func describeStages(stages []string) string {
	if len(stages) == 1 {
		return "its own stage"
	}
	return "the " + strings.Join(stages, ", ") + " stages"
}

// fileGraph is the graph of references between the files of one package.
type fileGraph struct {
	files []string                       // sorted
	edges map[string]map[string][]string // from → to → the names from uses (sorted)
}

var (
	rootGraphOnce sync.Once
	rootGraph     *fileGraph
	rootGraphErr  error
)

// rootFileGraph type-checks the root package's non-test files (those the
// build would compile here), importing its dependencies from the export data
// `go list -export` reports, and returns the graph of their references.
func rootFileGraph(t *testing.T) *fileGraph {
	t.Helper()
	rootGraphOnce.Do(func() { rootGraph, rootGraphErr = loadFileGraph(".") })
	if rootGraphErr != nil {
		t.Fatal(rootGraphErr)
	}
	return rootGraph
}

func loadFileGraph(dir string) (*fileGraph, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export,GoFiles,Dir", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export -deps: %v", err)
	}
	type listed struct {
		ImportPath, Export, Dir string
		GoFiles                 []string
	}
	exports := map[string]string{}
	var root listed
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		root = p // the package itself comes last
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range root.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(root.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		export, ok := exports[path]
		if !ok || export == "" {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(export)
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check(root.ImportPath, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s: %v", root.ImportPath, err)
	}
	g := &fileGraph{edges: map[string]map[string][]string{}}
	for _, f := range files {
		g.files = append(g.files, filepath.Base(fset.File(f.Pos()).Name()))
	}
	slices.Sort(g.files)
	seen := map[[3]string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !declaredAcrossFiles(obj, pkg) {
			continue
		}
		from := filepath.Base(fset.File(id.Pos()).Name())
		to := filepath.Base(fset.File(origin(obj).Pos()).Name())
		name := declName(obj)
		if from == to || seen[[3]string{from, to, name}] {
			continue
		}
		seen[[3]string{from, to, name}] = true
		if g.edges[from] == nil {
			g.edges[from] = map[string][]string{}
		}
		g.edges[from][to] = append(g.edges[from][to], name)
	}
	for _, tos := range g.edges {
		for _, names := range tos {
			slices.Sort(names)
		}
	}
	return g, nil
}

// declaredAcrossFiles reports whether obj is something another file can
// name: a package-level declaration, a method or a struct field (locals,
// parameters and type parameters are seen only in their own file).
func declaredAcrossFiles(obj types.Object, pkg *types.Package) bool {
	switch o := origin(obj).(type) {
	case *types.Func:
		return o.Parent() == pkg.Scope() || o.Signature().Recv() != nil
	case *types.Var:
		return o.Parent() == pkg.Scope() || o.IsField()
	case *types.TypeName:
		_, isParam := o.Type().(*types.TypeParam)
		return !isParam && o.Parent() == pkg.Scope()
	default:
		return obj.Parent() == pkg.Scope()
	}
}

// origin returns the generic declaration of an instantiated method or field.
func origin(obj types.Object) types.Object {
	switch o := obj.(type) {
	case *types.Func:
		return o.Origin()
	case *types.Var:
		return o.Origin()
	}
	return obj
}

// declName names obj as a reader finds it: T, T.method, T.field, or an
// interface's method as I.method.
func declName(obj types.Object) string {
	obj = origin(obj)
	switch o := obj.(type) {
	case *types.Func:
		if recv := o.Signature().Recv(); recv != nil {
			return typeName(recv.Type()) + "." + o.Name()
		}
	case *types.Var:
		if o.IsField() {
			return "field " + o.Name()
		}
	}
	return obj.Name()
}

func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch n := t.(type) {
	case *types.Named:
		return n.Obj().Name()
	case *types.Alias:
		return n.Obj().Name()
	}
	return t.String()
}

// components returns the strongly connected components of g, largest first
// (files sorted within each; ties by first file).
func (g *fileGraph) components() [][]string {
	// Tarjan's algorithm.
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v] = len(index)
		low[v] = index[v]
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range g.successors(v) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			slices.Sort(comp)
			comps = append(comps, comp)
		}
	}
	for _, f := range g.files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	slices.SortStableFunc(comps, func(a, b []string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a[0], b[0])
	})
	return comps
}

func (g *fileGraph) successors(from string) []string {
	var tos []string
	for to := range g.edges[from] {
		tos = append(tos, to)
	}
	slices.Sort(tos)
	return tos
}

// describe lists the components of more than one file, each with the
// references between its files.
func (g *fileGraph) describe(comps [][]string) string {
	var b strings.Builder
	for _, comp := range comps {
		if len(comp) < 2 {
			continue
		}
		fmt.Fprintf(&b, "component of %d files: %s\n", len(comp), strings.Join(comp, " "))
		for _, from := range comp {
			for _, to := range g.successors(from) {
				if slices.Contains(comp, to) {
					fmt.Fprintf(&b, "  %s -> %s: %s\n", from, to, strings.Join(g.edges[from][to], ", "))
				}
			}
		}
	}
	return b.String()
}
