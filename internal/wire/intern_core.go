package wire

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pod walk: pods are most of what large caches hold. It shares the
// sub-objects that repeat between replicas of one template (share_core.go)
// and, in those it does not share, interns the strings that repeat between
// pods (most come from a shared template or name shared things: nodes,
// images, volumes, conditions); it leaves alone those unique to one pod
// (name, UID, resource version, pod IPs, container IDs), which would only
// cost a table slot each. The strings of a sub-object found shared are not
// interned: it may be cached already, and must not be written to.

func (t *InternTable) pod(p *corev1.Pod) {
	t.objectMeta(&p.ObjectMeta)
	t.podSpec(&p.Spec)
	t.podStatus(&p.Status)
}

func (t *InternTable) podSpec(s *corev1.PodSpec) {
	for i := range s.Volumes {
		t.volume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		t.container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		t.container(&s.Containers[i])
	}
	set(t, &s.RestartPolicy)
	set(t, &s.DNSPolicy)
	t.shareStringMap(&s.NodeSelector)
	set(t, &s.ServiceAccountName)
	set(t, &s.DeprecatedServiceAccount)
	set(t, &s.NodeName)
	set(t, &s.Subdomain)
	set(t, &s.SchedulerName)
	set(t, &s.PriorityClassName)
	if s.PreemptionPolicy != nil {
		set(t, s.PreemptionPolicy)
	}
	if !shareSlice(t, &t.shared.pullSecrets, &s.ImagePullSecrets, encodeMessage[corev1.LocalObjectReference], nil) {
		for i := range s.ImagePullSecrets {
			set(t, &s.ImagePullSecrets[i].Name)
		}
	}
	if !shareSlice(t, &t.shared.tolerations, &s.Tolerations, encodeMessage[corev1.Toleration], nil) {
		for i := range s.Tolerations {
			tol := &s.Tolerations[i]
			set(t, &tol.Key)
			set(t, &tol.Value)
			set(t, &tol.Operator)
			set(t, &tol.Effect)
		}
	}
	if !sharePtr(t, &t.shared.podSecurity, &s.SecurityContext, podSecurityContextShareable) {
		if sc := s.SecurityContext; sc != nil && sc.SeccompProfile != nil {
			set(t, &sc.SeccompProfile.Type)
		}
	}
}

func (t *InternTable) volume(v *corev1.Volume) {
	set(t, &v.Name)
	src := &v.VolumeSource
	if !sharePtr(t, &t.shared.configMapVols, &src.ConfigMap, configMapVolShareable) && src.ConfigMap != nil {
		set(t, &src.ConfigMap.Name)
		t.keyToPaths(src.ConfigMap.Items)
	}
	if !sharePtr(t, &t.shared.secretVols, &src.Secret, secretVolShareable) && src.Secret != nil {
		set(t, &src.Secret.SecretName)
		t.keyToPaths(src.Secret.Items)
	}
	if !sharePtr(t, &t.shared.emptyDirVols, &src.EmptyDir, nil) && src.EmptyDir != nil {
		set(t, &src.EmptyDir.Medium)
	}
	if src.HostPath != nil {
		set(t, &src.HostPath.Path)
	}
	if src.PersistentVolumeClaim != nil {
		set(t, &src.PersistentVolumeClaim.ClaimName)
	}
	if !sharePtr(t, &t.shared.downwardVols, &src.DownwardAPI, downwardVolShareable) && src.DownwardAPI != nil {
		t.downwardAPIFiles(src.DownwardAPI.Items)
	}
	if sharePtr(t, &t.shared.projectedVols, &src.Projected, projectedVolShareable) || src.Projected == nil {
		return
	}
	for i := range src.Projected.Sources {
		ps := &src.Projected.Sources[i]
		if ps.ServiceAccountToken != nil {
			set(t, &ps.ServiceAccountToken.Path)
			set(t, &ps.ServiceAccountToken.Audience)
		}
		if ps.ConfigMap != nil {
			set(t, &ps.ConfigMap.Name)
			t.keyToPaths(ps.ConfigMap.Items)
		}
		if ps.Secret != nil {
			set(t, &ps.Secret.Name)
			t.keyToPaths(ps.Secret.Items)
		}
		if ps.DownwardAPI != nil {
			t.downwardAPIFiles(ps.DownwardAPI.Items)
		}
	}
}

func (t *InternTable) keyToPaths(items []corev1.KeyToPath) {
	for i := range items {
		set(t, &items[i].Key)
		set(t, &items[i].Path)
	}
}

func (t *InternTable) downwardAPIFiles(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		f := &items[i]
		set(t, &f.Path)
		if f.FieldRef != nil {
			set(t, &f.FieldRef.APIVersion)
			set(t, &f.FieldRef.FieldPath)
		}
	}
}

func (t *InternTable) container(c *corev1.Container) {
	set(t, &c.Name)
	set(t, &c.Image)
	set(t, &c.WorkingDir)
	shareStrings(t, &c.Command)
	shareStrings(t, &c.Args)
	if !shareSlice(t, &t.shared.ports, &c.Ports, encodeMessage[corev1.ContainerPort], nil) {
		for i := range c.Ports {
			p := &c.Ports[i]
			set(t, &p.Name)
			set(t, &p.Protocol)
		}
	}
	if !shareSlice(t, &t.shared.envFrom, &c.EnvFrom, encodeMessage[corev1.EnvFromSource], nil) {
		for i := range c.EnvFrom {
			e := &c.EnvFrom[i]
			set(t, &e.Prefix)
			if e.ConfigMapRef != nil {
				set(t, &e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				set(t, &e.SecretRef.Name)
			}
		}
	}
	if !shareSlice(t, &t.shared.env, &c.Env, encodeMessage[corev1.EnvVar], nil) {
		for i := range c.Env {
			t.envVar(&c.Env[i])
		}
	}
	t.shareResourceList(&c.Resources.Limits)
	t.shareResourceList(&c.Resources.Requests)
	shareSlice(t, &t.shared.resizePolicy, &c.ResizePolicy, encodeMessage[corev1.ContainerResizePolicy], nil)
	if !shareSlice(t, &t.shared.mounts, &c.VolumeMounts, encodeMessage[corev1.VolumeMount], mountShareable) {
		for i := range c.VolumeMounts {
			m := &c.VolumeMounts[i]
			set(t, &m.Name)
			set(t, &m.MountPath)
			set(t, &m.SubPath)
		}
	}
	t.probe(&c.LivenessProbe)
	t.probe(&c.ReadinessProbe)
	t.probe(&c.StartupProbe)
	sharePtr(t, &t.shared.lifecycles, &c.Lifecycle, lifecycleShareable)
	set(t, &c.TerminationMessagePath)
	set(t, &c.TerminationMessagePolicy)
	set(t, &c.ImagePullPolicy)
	if sharePtr(t, &t.shared.securityCtx, &c.SecurityContext, securityContextShareable) {
		return
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.Capabilities != nil {
			shareStrings(t, &sc.Capabilities.Add)
			shareStrings(t, &sc.Capabilities.Drop)
		}
		if sc.SeccompProfile != nil {
			set(t, &sc.SeccompProfile.Type)
		}
	}
}

func (t *InternTable) envVar(e *corev1.EnvVar) {
	set(t, &e.Name)
	set(t, &e.Value)
	src := e.ValueFrom
	if src == nil {
		return
	}
	if r := src.FieldRef; r != nil {
		set(t, &r.APIVersion)
		set(t, &r.FieldPath)
	}
	if r := src.ResourceFieldRef; r != nil {
		set(t, &r.ContainerName)
		set(t, &r.Resource)
	}
	if r := src.ConfigMapKeyRef; r != nil {
		set(t, &r.Name)
		set(t, &r.Key)
	}
	if r := src.SecretKeyRef; r != nil {
		set(t, &r.Name)
		set(t, &r.Key)
	}
}

func (t *InternTable) probe(field **corev1.Probe) {
	if sharePtr(t, &t.shared.probes, field, probeShareable) {
		return
	}
	p := *field
	if p == nil {
		return
	}
	h := &p.ProbeHandler
	if h.Exec != nil {
		t.strs(h.Exec.Command)
	}
	if g := h.HTTPGet; g != nil {
		set(t, &g.Path)
		set(t, &g.Host)
		set(t, &g.Scheme)
		t.intOrString(&g.Port)
		for i := range g.HTTPHeaders {
			hh := &g.HTTPHeaders[i]
			set(t, &hh.Name)
			set(t, &hh.Value)
		}
	}
	if s := h.TCPSocket; s != nil {
		set(t, &s.Host)
		t.intOrString(&s.Port)
	}
}

func (t *InternTable) intOrString(v *intstr.IntOrString) {
	if v.Type == intstr.String {
		set(t, &v.StrVal)
	}
}

func (t *InternTable) podStatus(s *corev1.PodStatus) {
	set(t, &s.Phase)
	for i := range s.Conditions {
		c := &s.Conditions[i]
		set(t, &c.Type)
		set(t, &c.Status)
		set(t, &c.Reason)
		set(t, &c.Message)
	}
	set(t, &s.Reason)
	set(t, &s.Message)
	set(t, &s.NominatedNodeName)
	set(t, &s.HostIP)
	for i := range s.HostIPs {
		set(t, &s.HostIPs[i].IP)
	}
	set(t, &s.QOSClass)
	t.containerStatuses(s.InitContainerStatuses)
	t.containerStatuses(s.ContainerStatuses)
}

func (t *InternTable) containerStatuses(statuses []corev1.ContainerStatus) {
	for i := range statuses {
		cs := &statuses[i]
		set(t, &cs.Name)
		set(t, &cs.Image)
		set(t, &cs.ImageID)
		if w := cs.State.Waiting; w != nil {
			set(t, &w.Reason)
		}
		if term := cs.LastTerminationState.Terminated; term != nil {
			set(t, &term.Reason)
		}
	}
}
