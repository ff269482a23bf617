package wire

import (
	"encoding/json"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// The custom resource types of the typed JSON decoder's tests, besides
// crdtypes.Workload: gadget has maps, int-or-strings, quantities, raw
// extensions, interface values, embedded and ",inline" structs and every
// scalar kind; rollout (shaped like an Argo CD Application) is recursive
// and has pointers to slices and slices of pointers.

type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              gadgetSpec    `json:"spec"`
	Status            *gadgetStatus `json:"status,omitempty"`
}

// gadgetCommon is embedded in gadgetSpec: its fields are promoted.
type gadgetCommon struct {
	Owner    string            `json:"owner,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	Priority *int32            `json:"priority,omitempty"`
}

// gadgetNamed is a named field tagged ",inline": encoding/json does not
// inline it, its key is "Named".
type gadgetNamed struct {
	Inner string `json:"inner"`
}

// gadgetLevel is a string type, as enums of CRDs are.
type gadgetLevel string

type gadgetSpec struct {
	gadgetCommon   `json:",inline"`
	Port           intstr.IntOrString          `json:"port"`
	MaxUnavailable *intstr.IntOrString         `json:"maxUnavailable,omitempty"`
	Limits         corev1.ResourceList         `json:"limits,omitempty"`
	Config         runtime.RawExtension        `json:"config,omitempty"`
	Extra          map[string]any              `json:"extra,omitempty"`
	Values         []any                       `json:"values,omitempty"`
	Any            any                         `json:"any,omitempty"`
	Weights        map[string]int64            `json:"weights,omitempty"`
	Levels         map[gadgetLevel]gadgetLevel `json:"levels,omitempty"`
	Rules          map[string][]gadgetRule     `json:"rules,omitempty"`
	ByIndex        map[int]string              `json:"byIndex,omitempty"`
	Ratio          float64                     `json:"ratio"`
	Small          float32                     `json:"small"`
	Tiny           int8                        `json:"tiny"`
	Count          uint16                      `json:"count"`
	Big            uint64                      `json:"big"`
	Enabled        bool                        `json:"enabled"`
	Data           []byte                      `json:"data,omitempty"`
	Timeout        metav1.Duration             `json:"timeout"`
	Micro          metav1.MicroTime            `json:"micro"`
	When           *metav1.Time                `json:"when,omitempty"`
	Selector       *metav1.LabelSelector       `json:"selector,omitempty"`
	Fixed          [2]string                   `json:"fixed"`
	Raw            json.RawMessage             `json:"raw,omitempty"`
	Named          gadgetNamed                 `json:",inline"`
	Level          gadgetLevel                 `json:"level,omitempty"`
	Env            []corev1.EnvVar             `json:"env,omitempty"`
	Untagged       string
	Skipped        string `json:"-"`
	unexported     string
}

type gadgetRule struct {
	Match  string   `json:"match"`
	Weight *float64 `json:"weight,omitempty"`
	Hosts  []string `json:"hosts"`
}

type gadgetStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Observed   int64              `json:"observedGeneration,omitempty"`
	Replicas   *int32             `json:"replicas,omitempty"`
}

type rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              rolloutSpec   `json:"spec"`
	Status            rolloutStatus `json:"status,omitempty"`
}

type rolloutSpec struct {
	Source      *rolloutSource     `json:"source,omitempty"`
	Sources     []*rolloutSource   `json:"sources,omitempty"`
	Destination rolloutDest        `json:"destination"`
	SyncPolicy  *rolloutSyncPolicy `json:"syncPolicy,omitempty"`
	IgnoreDiffs *[]rolloutIgnore   `json:"ignoreDifferences,omitempty"`
}

type rolloutSource struct {
	RepoURL        string            `json:"repoURL"`
	Path           string            `json:"path,omitempty"`
	TargetRevision string            `json:"targetRevision,omitempty"`
	Helm           *rolloutHelm      `json:"helm,omitempty"`
	Plugin         map[string]string `json:"plugin,omitempty"`
}

type rolloutHelm struct {
	ValueFiles []string              `json:"valueFiles,omitempty"`
	Parameters []rolloutHelmParam    `json:"parameters,omitempty"`
	Values     *runtime.RawExtension `json:"valuesObject,omitempty"`
}

type rolloutHelmParam struct {
	Name        string `json:"name,omitempty"`
	Value       string `json:"value,omitempty"`
	ForceString bool   `json:"forceString,omitempty"`
}

type rolloutDest struct {
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

type rolloutSyncPolicy struct {
	Automated   *struct{ Prune, SelfHeal bool } `json:"automated,omitempty"`
	SyncOptions []string                        `json:"syncOptions,omitempty"`
	Retry       *struct {
		Limit   int64  `json:"limit,omitempty"`
		Backoff string `json:"backoff,omitempty"`
	} `json:"retry,omitempty"`
}

type rolloutIgnore struct {
	Group        string   `json:"group,omitempty"`
	Kind         string   `json:"kind"`
	JSONPointers []string `json:"jsonPointers,omitempty"`
}

type rolloutStatus struct {
	Resources    []rolloutResource `json:"resources,omitempty"`
	History      []rolloutHistory  `json:"history,omitempty"`
	ReconciledAt *metav1.Time      `json:"reconciledAt,omitempty"`
}

// rolloutResource is recursive: a resource's children are resources.
type rolloutResource struct {
	Kind     string            `json:"kind"`
	Name     string            `json:"name"`
	Health   *string           `json:"health,omitempty"`
	Children []rolloutResource `json:"children,omitempty"`
	Parent   *rolloutResource  `json:"parent,omitempty"`
}

type rolloutHistory struct {
	Revision   string      `json:"revision"`
	DeployedAt metav1.Time `json:"deployedAt"`
	ID         int64       `json:"id"`
}

// quantities are the quantities random objects hold.
var quantities = []string{"0", "1", "100m", "1500m", "2Gi", "512Mi", "1e3", "1.5", "20k", "-3", "123456789012"}

// newFiller returns a randfill.Filler that makes values that encode to
// JSON (valid quantities, raw JSON, interface values of JSON's types).
func newFiller(seed uint64) *randfill.Filler {
	r := rand.New(rand.NewPCG(seed, 7))
	return randfill.NewWithSeed(int64(seed)).NilChance(0.2).NumElements(0, 3).MaxDepth(6).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(quantities[c.Intn(len(quantities))])
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(c.Int63n(4e9), 0))
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(4e9), c.Int63n(1e9)))
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
		func(e *runtime.RawExtension, c randfill.Continue) {
			if c.Bool() {
				e.Raw = randomJSON(r, 3)
			}
		},
		func(m *json.RawMessage, c randfill.Continue) {
			if c.Bool() {
				*m = randomJSON(r, 3)
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`)
		},
		func(v *any, c randfill.Continue) {
			var decoded any
			if err := json.Unmarshal(randomJSON(r, 3), &decoded); err != nil {
				panic(err)
			}
			*v = decoded
		},
	)
}

// randomJSON returns a random JSON value nested at most depth deep.
func randomJSON(r *rand.Rand, depth int) []byte {
	var v func(d int) any
	v = func(d int) any {
		k := r.IntN(8)
		if d == 0 {
			k %= 5
		}
		switch k {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return r.Int64N(1<<62) - 1<<61
		case 3:
			return r.Float64() * 1e6
		case 4:
			return []string{"", "a", "é", "line\nbreak", "\u2028", "<&>"}[r.IntN(6)]
		case 5, 6:
			m := map[string]any{}
			for i := range r.IntN(4) {
				m[string(rune('a'+i))] = v(d - 1)
			}
			return m
		default:
			l := make([]any, r.IntN(4))
			for i := range l {
				l[i] = v(d - 1)
			}
			return l
		}
	}
	data, err := json.Marshal(v(depth))
	if err != nil {
		panic(err)
	}
	return data
}
