package wire

import (
	"hash/maphash"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The sub-objects of pods shared between cached objects (see share.go),
// chosen by a heap profile of 6,000 production-like pods (internal/prodpods)
// with strings interned, 20.0 KB each: per pod, the containers' resource
// lists held 2,560 B, env lists 1,240 B, labels and annotations 580 B,
// probes 480 B, volume sources 400 B, security contexts 340 B, ports 180 B,
// tolerations 140 B, every one a copy of its template's. What is left per pod
// differs between replicas (names, UIDs, IPs, timestamps, the projected
// service-account volume's name and hence the volume and mount lists, status,
// managed fields).

// podShares holds the canonical sub-objects, one set per kind.
type podShares struct {
	stringMaps    shareSet[mapObject] // map[string]string: labels, annotations, node selectors
	resourceLists shareSet[mapObject] // corev1.ResourceList
	strs          shareSet[string]
	ownerRefs     shareSet[metav1.OwnerReference]
	ports         shareSet[corev1.ContainerPort]
	envFrom       shareSet[corev1.EnvFromSource]
	env           shareSet[corev1.EnvVar]
	mounts        shareSet[corev1.VolumeMount]
	resizePolicy  shareSet[corev1.ContainerResizePolicy]
	probes        shareSet[corev1.Probe]
	lifecycles    shareSet[corev1.Lifecycle]
	securityCtx   shareSet[corev1.SecurityContext]
	podSecurity   shareSet[corev1.PodSecurityContext]
	tolerations   shareSet[corev1.Toleration]
	pullSecrets   shareSet[corev1.LocalObjectReference]
	configMapVols shareSet[corev1.ConfigMapVolumeSource]
	secretVols    shareSet[corev1.SecretVolumeSource]
	projectedVols shareSet[corev1.ProjectedVolumeSource]
	emptyDirVols  shareSet[corev1.EmptyDirVolumeSource]
	downwardVols  shareSet[corev1.DownwardAPIVolumeSource]
}

// sweep sweeps every set (shareSet.sweep).
func (s *podShares) sweep() {
	s.stringMaps.sweep()
	s.resourceLists.sweep()
	s.strs.sweep()
	s.ownerRefs.sweep()
	s.ports.sweep()
	s.envFrom.sweep()
	s.env.sweep()
	s.mounts.sweep()
	s.resizePolicy.sweep()
	s.probes.sweep()
	s.lifecycles.sweep()
	s.securityCtx.sweep()
	s.podSecurity.sweep()
	s.tolerations.sweep()
	s.pullSecrets.sweep()
	s.configMapVols.sweep()
	s.secretVols.sweep()
	s.projectedVols.sweep()
	s.emptyDirVols.sweep()
	s.downwardVols.sweep()
}

// shareStringMap shares a map of strings, or interns its strings if it is
// not shared.
func (t *InternTable) shareStringMap(m *map[string]string) {
	if !shareMap(t, &t.shared.stringMaps, m, hashStringMap, equalStringMaps) {
		t.stringMap(*m)
	}
}

// shareStrings shares a list of strings, or interns them if it is not
// shared.
func shareStrings[S ~string](t *InternTable, s *[]S) {
	if len(*s) == 0 {
		return
	}
	// The set holds []string: a named string type has the same layout.
	p := (*[]string)(unsafe.Pointer(s))
	if !shareSlice(t, &t.shared.strs, p, encodeString, nil) {
		for i := range *s {
			set(t, &(*s)[i])
		}
	}
}

// shareResourceList shares a resource list. Two quantities are equal here
// if their values (Quantity.Cmp, what Quantity.Equal and cmp.Diff compare)
// and formats are: then they print the same too (a quantity caches only
// its canonical string). String is not called, since it allocates for a
// quantity parsed from a string that was not canonical.
func (t *InternTable) shareResourceList(l *corev1.ResourceList) {
	shareMap(t, &t.shared.resourceLists, l, hashResourceList, equalResourceLists)
}

// hashResourceList hashes a resource list by its keys, formats and values
// in thousandths (equal quantities have equal ones).
func hashResourceList(t *InternTable, l corev1.ResourceList) uint64 {
	var sum uint64
	for k, q := range l {
		sum = combine(sum, maphash.String(t.seed, string(k)), uint64(q.MilliValue())^maphash.String(t.seed, string(q.Format)))
	}
	return sum
}

// equalResourceLists compares l with the canonical list c, reading c's
// quantities through copies: Cmp may convert its receiver's representation.
func equalResourceLists(l, canonical corev1.ResourceList) bool {
	if len(l) != len(canonical) {
		return false
	}
	for k, q := range l {
		c, ok := canonical[k]
		if !ok || q.Format != c.Format || q.Cmp(c) != 0 {
			return false
		}
	}
	return true
}

// The guards: a value holding an empty, non-nil list or map is not shared
// (see share.go). Each checks every list and map the value holds.

func probeShareable(p *corev1.Probe) bool {
	h := &p.ProbeHandler
	return execShareable(h.Exec) && httpGetShareable(h.HTTPGet)
}

func lifecycleShareable(l *corev1.Lifecycle) bool {
	for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
		if h != nil && !(execShareable(h.Exec) && httpGetShareable(h.HTTPGet)) {
			return false
		}
	}
	return true
}

func execShareable(e *corev1.ExecAction) bool { return e == nil || !emptyList(e.Command) }

func httpGetShareable(g *corev1.HTTPGetAction) bool { return g == nil || !emptyList(g.HTTPHeaders) }

func securityContextShareable(c *corev1.SecurityContext) bool {
	return c.Capabilities == nil || !(emptyList(c.Capabilities.Add) || emptyList(c.Capabilities.Drop))
}

func podSecurityContextShareable(c *corev1.PodSecurityContext) bool {
	return !(emptyList(c.SupplementalGroups) || emptyList(c.Sysctls))
}

func mountShareable(m *corev1.VolumeMount) bool { return !emptyList(m.BindMountOptions) }

func configMapVolShareable(v *corev1.ConfigMapVolumeSource) bool { return !emptyList(v.Items) }

func secretVolShareable(v *corev1.SecretVolumeSource) bool { return !emptyList(v.Items) }

func downwardVolShareable(v *corev1.DownwardAPIVolumeSource) bool { return !emptyList(v.Items) }

func projectedVolShareable(v *corev1.ProjectedVolumeSource) bool {
	if emptyList(v.Sources) {
		return false
	}
	for i := range v.Sources {
		s := &v.Sources[i]
		switch {
		case s.Secret != nil && emptyList(s.Secret.Items),
			s.ConfigMap != nil && emptyList(s.ConfigMap.Items),
			s.DownwardAPI != nil && emptyList(s.DownwardAPI.Items),
			s.PodCertificate != nil && emptyMap(s.PodCertificate.UserAnnotations),
			s.ClusterTrustBundle != nil && !labelSelectorShareable(s.ClusterTrustBundle.LabelSelector):
			return false
		}
	}
	return true
}

func labelSelectorShareable(s *metav1.LabelSelector) bool {
	if s == nil {
		return true
	}
	if emptyMap(s.MatchLabels) || emptyList(s.MatchExpressions) {
		return false
	}
	for _, e := range s.MatchExpressions {
		if emptyList(e.Values) {
			return false
		}
	}
	return true
}
