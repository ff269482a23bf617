package informer

// Differential testing: random scenarios run through client-go v0.37.2 and
// through this library, whose observable results must be identical. This
// file holds what the harnesses share: the source of random decisions (a
// seed or fuzz input), the generated objects, the scenario count and the
// reporting of a divergence. The harnesses are in difftest_deltafifo_test.go
// (DeltaFIFO) and difftest_informer*_test.go (Informer).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// diffDefaultScenarios is the number of random scenarios each harness runs
// in a normal `go test`; DIFFTEST_SCENARIOS overrides it.
const diffDefaultScenarios = 10000

// diffScenarioCount returns how many random scenarios a harness runs.
func diffScenarioCount(t *testing.T) int {
	t.Helper()
	s := os.Getenv("DIFFTEST_SCENARIOS")
	if s == "" {
		return diffDefaultScenarios
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("DIFFTEST_SCENARIOS=%q: want a non-negative number", s)
	}
	return n
}

// diffFirstSeed returns the first seed of a run: DIFFTEST_SEED, to replay a
// reported failure, or 1. Seeds are consecutive from there.
func diffFirstSeed(t *testing.T) uint64 {
	t.Helper()
	s := os.Getenv("DIFFTEST_SEED")
	if s == "" {
		return 1
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("DIFFTEST_SEED=%q: want a number", s)
	}
	return n
}

// diffChooser makes the random decisions of a scenario generator, so that
// one generator serves both seeded runs and fuzzing.
type diffChooser interface {
	// intn returns a number in [0, n); n must be positive.
	intn(n int) int
	// exhausted reports that the source has run dry: the generator should
	// end the scenario.
	exhausted() bool
}

// diffSeeded draws decisions from a seeded PCG: the same seed always gives
// the same scenario.
type diffSeeded struct{ r *rand.Rand }

func newDiffSeeded(seed uint64) *diffSeeded {
	return &diffSeeded{r: rand.New(rand.NewPCG(seed, 0x6469666674657374))}
}

func (s *diffSeeded) intn(n int) int  { return s.r.IntN(n) }
func (s *diffSeeded) exhausted() bool { return false }

// diffBytes draws decisions from fuzz input, one byte per decision (two for
// n > 256), so that a mutated byte changes one decision. Once the input is
// used up every decision is 0.
type diffBytes struct {
	data []byte
	pos  int
}

func (b *diffBytes) intn(n int) int {
	if n <= 1 {
		return 0
	}
	v := 0
	width := 1
	if n > 256 {
		width = 2
	}
	for range width {
		v <<= 8
		if b.pos < len(b.data) {
			v |= int(b.data[b.pos])
			b.pos++
		}
	}
	return v % n
}

func (b *diffBytes) exhausted() bool { return b.pos >= len(b.data) }

// diffChance reports true with probability num/den.
func diffChance(c diffChooser, num, den int) bool { return c.intn(den) < num }

// diffObj is a generated object: a pod reduced to what the harnesses
// observe. The same diffObj is turned into a fresh *corev1.Pod for each
// side, so that neither side can see the other's objects.
type diffObj struct {
	Namespace string
	Name      string
	UID       string
	RV        string
	// FailTransform makes the harness's transform reject the object.
	FailTransform bool
}

// diffNamespaces and diffNames make a small key space, so that scenarios
// touch the same keys often. An empty namespace is a cluster-scoped key.
var (
	diffNamespaces = []string{"", "ns1", "ns2"}
	diffNames      = []string{"a", "b", "c", "d"}
)

// diffKeyCount is the number of distinct keys generated objects can have.
var diffKeyCount = len(diffNamespaces) * len(diffNames)

// diffKey returns the namespace and name of key number i.
func diffKey(i int) (namespace, name string) {
	return diffNamespaces[i/len(diffNames)], diffNames[i%len(diffNames)]
}

// diffStored is one stored object as the harnesses compare it.
type diffStored struct {
	Key, UID, RV, Transformed string
}

// diffTransformMark is the annotation the harness's transform appends to, so
// that an object transformed twice (or never) shows in the results.
const diffTransformMark = "difftest/transformed"

// diffFailLabel marks an object the harness's transform rejects.
const diffFailLabel = "difftest/fail-transform"

// pod returns a new pod with o's identity.
func (o diffObj) pod() *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       o.Namespace,
		Name:            o.Name,
		UID:             types.UID(o.UID),
		ResourceVersion: o.RV,
	}}
	if o.FailTransform {
		p.Labels = map[string]string{diffFailLabel: "true"}
	}
	return p
}

// String prints o compactly for scenario dumps.
func (o diffObj) String() string {
	key := o.Name
	if o.Namespace != "" {
		key = o.Namespace + "/" + o.Name
	}
	s := fmt.Sprintf("%s(uid=%s,rv=%s)", key, o.UID, o.RV)
	if o.FailTransform {
		s += "!fail-transform"
	}
	return s
}

// diffTransformPod is the harnesses' transform, written once for both
// sides: it appends "t" to the transform mark (so the results show how often
// each object went through it) and rejects objects labelled to fail.
func diffTransformPod(p *corev1.Pod) (*corev1.Pod, error) {
	if p.Labels[diffFailLabel] == "true" {
		return nil, fmt.Errorf("difftest: transform rejects %s/%s", p.Namespace, p.Name)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[diffTransformMark] += "t"
	return p, nil
}

// diffObjGen generates objects: each key has a current UID and the resource
// versions grow, with occasional repeats and re-creations.
type diffObjGen struct {
	c       diffChooser
	rv      int
	uids    map[int]int // key index -> generation of its current UID
	nextUID int
}

func newDiffObjGen(c diffChooser) *diffObjGen {
	return &diffObjGen{c: c, rv: 10, uids: map[int]int{}}
}

// nextRV returns a new, larger resource version.
func (g *diffObjGen) nextRV() string {
	g.rv++
	return strconv.Itoa(g.rv)
}

// currentRV returns the latest resource version handed out.
func (g *diffObjGen) currentRV() string { return strconv.Itoa(g.rv) }

// uid returns key i's current UID, or a new one if recreate is set.
func (g *diffObjGen) uid(i int, recreate bool) string {
	gen, ok := g.uids[i]
	if !ok || recreate {
		g.nextUID++
		gen = g.nextUID
		g.uids[i] = gen
	}
	return "u" + strconv.Itoa(gen)
}

// object returns an object for a random key with a new resource version;
// sometimes (1 in 10) the resource version repeats the last one handed out,
// and sometimes (1 in 8) the object is a re-creation with a new UID.
func (g *diffObjGen) object() diffObj {
	i := g.c.intn(diffKeyCount)
	ns, name := diffKey(i)
	rv := ""
	if g.rv > 10 && diffChance(g.c, 1, 10) {
		rv = g.currentRV()
	} else {
		rv = g.nextRV()
	}
	return diffObj{Namespace: ns, Name: name, UID: g.uid(i, diffChance(g.c, 1, 8)), RV: rv}
}

// list returns a list of distinct random keys, in random order, each at a
// new resource version or (1 in 3) at the last one handed out.
func (g *diffObjGen) list(maxLen int) []diffObj {
	n := g.c.intn(maxLen + 1)
	perm := make([]int, diffKeyCount)
	for i := range perm {
		perm[i] = i
	}
	for i := len(perm) - 1; i > 0; i-- {
		j := g.c.intn(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	items := make([]diffObj, 0, n)
	for _, k := range perm[:min(n, len(perm))] {
		ns, name := diffKey(k)
		rv := g.currentRV()
		if diffChance(g.c, 2, 3) {
			rv = g.nextRV()
		}
		items = append(items, diffObj{Namespace: ns, Name: name, UID: g.uid(k, diffChance(g.c, 1, 8)), RV: rv})
	}
	return items
}

// diffJoin prints a list of items.
func diffJoin[E fmt.Stringer](items []E) string {
	parts := make([]string, len(items))
	for i, item := range items {
		parts[i] = item.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// diffShrink removes steps from a failing scenario while it keeps failing,
// one step at a time until no single removal does: the result is a small
// scenario that still shows the divergence. fails must be deterministic.
func diffShrink[S any](steps []S, fails func([]S) bool) []S {
	for changed := true; changed; {
		changed = false
		for i := len(steps) - 1; i >= 0; i-- {
			candidate := append(append([]S(nil), steps[:i]...), steps[i+1:]...)
			if fails(candidate) {
				steps = candidate
				changed = true
			}
		}
	}
	return steps
}

// diffQuietLogger returns a logger that discards everything (the zero
// klog.Logger): the harnesses provoke errors on purpose and compare
// behaviour, not log output.
func diffQuietLogger() *klog.Logger { return &klog.Logger{} }
