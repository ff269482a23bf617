// Package prodpods builds the production-like pods of the benchmarks
// (shared/benchmarks.md, "Production-like pods"; W6 in bench/ and E1/E2 in
// e2e/cmd/realbench): pods shaped like a real Deployment's, about 9 KB as
// protobuf, whose replicas share their template while names, UIDs, IPs, node
// names and timestamps differ. They are deterministic: the same n gives the
// same pods.
package prodpods

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// epoch is the creation time of the first Deployment: fixed, so that runs
// are reproducible.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// prodRegistries are the registries the fixtures' images come from.
var prodRegistries = []string{
	"registry.k8s.io",
	"docker.io/acme",
	"gcr.io/acme-prod",
	"quay.io/acme",
	"123456789012.dkr.ecr.us-east-1.amazonaws.com",
}

// prodSidecars are the images of the second container.
var prodSidecars = []string{
	"docker.io/envoyproxy/envoy:v1.31.2",
	"cr.fluentbit.io/fluent/fluent-bit:3.1.9",
	"quay.io/prometheus/statsd-exporter:v0.27.1",
}

// prodApps name the Deployments (with their index appended).
var prodApps = []string{"checkout-api", "payments-worker", "catalog-search", "user-profile", "notification-dispatcher", "inventory-sync", "pricing-engine"}

// prodDeployment is one Deployment of the fixtures: its replicas share the
// template built by newProdTemplate.
type prodDeployment struct {
	index     int
	name      string
	namespace string
	replicas  int
	hash      string // the pod-template-hash
	rsUID     types.UID
	created   time.Time
	template  corev1.Pod // metadata and spec shared by every replica
	// fields holds the FieldsV1 JSON of the three managers' entries, with
	// placeholders for what differs between replicas (prodFieldSets).
	fields [3][]byte
}

// prodDeployments returns the Deployments holding n pods in total: each has
// 10 to 50 replicas (the last one fewer, to make n).
func prodDeployments(n int) []prodDeployment {
	var out []prodDeployment
	for total, d := 0, 0; total < n; d++ {
		replicas := min(10+(d*17)%41, n-total)
		out = append(out, newProdDeployment(d, replicas))
		total += replicas
	}
	return out
}

// New returns n production-like pods by value, the way a decoded PodList
// holds them, each with its resource version, UID, creation time and the
// managed fields of three managers as a server would have set them. Replicas of one Deployment share the slices, maps and
// pointers of their template: these generated pods are only read (encoded or
// compared), never cached, so the sharing saves memory and changes nothing a
// decoder sees.
func New(n int) []corev1.Pod {
	pods := make([]corev1.Pod, 0, n)
	for _, d := range prodDeployments(n) {
		for r := range d.replicas {
			pods = append(pods, d.replica(r, len(pods)))
		}
	}
	return pods
}

// newProdDeployment builds Deployment d and its template.
func newProdDeployment(d, replicas int) prodDeployment {
	app := prodApps[d%len(prodApps)] + "-" + strconv.Itoa(d)
	hash := strconv.FormatUint(uint64(uint32(d)*2654435761)%(1<<36), 36)
	dep := prodDeployment{
		index:     d,
		name:      app,
		namespace: "team-" + strconv.Itoa(d%50),
		replicas:  replicas,
		hash:      hash,
		rsUID:     types.UID(fmt.Sprintf("5e0c1d2b-%04x-4a6b-9c8d-%012x", d%65536, d)),
		created:   epoch.Add(time.Duration(d) * time.Minute),
	}
	dep.template = newProdTemplate(dep)
	sample := dep.template
	sample.Spec.Volumes = renameVolume(sample.Spec.Volumes, "kube-api-access", "kube-api-access-"+suffixMark)
	sample.OwnerReferences = []metav1.OwnerReference{{UID: ownerUIDMark}}
	dep.fields = prodFieldSets(&sample)
	return dep
}

// newProdTemplate returns the metadata and spec every replica of dep
// shares, as a Deployment's pod template and its ReplicaSet set them.
func newProdTemplate(dep prodDeployment) corev1.Pod {
	d := dep.index
	version := "v2." + strconv.Itoa(d%13) + "." + strconv.Itoa(d%5)
	image := prodRegistries[d%len(prodRegistries)] + "/" + prodApps[d%len(prodApps)] + ":" + version
	sidecar := prodSidecars[d%len(prodSidecars)]
	yes, no := true, false
	uid, gid := int64(1000), int64(2000)
	grace := int64(30)
	tolerate := int64(300)
	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "DATABASE_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: dep.name + "-db"}, Key: "password"}}},
		{Name: "LOG_LEVEL", Value: "info"},
		{Name: "LOG_FORMAT", Value: "json"},
		{Name: "HTTP_PORT", Value: "8080"},
		{Name: "METRICS_PORT", Value: "9090"},
	}
	extra := []corev1.EnvVar{
		{Name: "DATABASE_HOST", Value: dep.name + "-db.team-" + strconv.Itoa(d%50) + ".svc.cluster.local"},
		{Name: "CACHE_TTL", Value: "5m"},
		{Name: "UPSTREAM_TIMEOUT", Value: "30s"},
		{Name: "FEATURE_FLAGS", Value: "new-checkout,fast-search,async-payments"},
		{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability.svc:4317"},
		{Name: "OTEL_SERVICE_NAME", Value: dep.name},
		{Name: "GOMAXPROCS", Value: "2"},
		{Name: "GOMEMLIMIT", Value: "900MiB"},
	}
	env = append(env, extra[:d%5]...) // 8 to 12, and 4 in the sidecar
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: "/etc/" + prodApps[d%len(prodApps)], ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
	}
	containerSecurity := &corev1.SecurityContext{
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   &yes,
		AllowPrivilegeEscalation: &no,
	}
	main := corev1.Container{
		Name:  "app",
		Image: image,
		Args:  []string{"--config=/etc/" + prodApps[d%len(prodApps)] + "/config.yaml", "--listen=:8080"},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		},
		Env: env,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		VolumeMounts: mounts,
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 10, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3,
		},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          containerSecurity,
	}
	side := corev1.Container{
		Name:  "sidecar",
		Image: sidecar,
		Args:  []string{"--log-level=warn"},
		Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 15000, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			env[0], env[1],
			{Name: "SIDECAR_MODE", Value: "proxy"},
			{Name: "UPSTREAM_PORT", Value: "8080"},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{mounts[0], mounts[2]},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(15000)}},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          containerSecurity,
	}
	mode := int32(0o420)
	expiry := int64(3607)
	labels := map[string]string{
		"app":                          dep.name,
		"app.kubernetes.io/name":       prodApps[d%len(prodApps)],
		"app.kubernetes.io/instance":   dep.name,
		"app.kubernetes.io/version":    version,
		"app.kubernetes.io/managed-by": "helm",
		"team":                         "team-" + strconv.Itoa(d%50),
		"pod-template-hash":            dep.hash,
	}
	annotations := map[string]string{
		"kubectl.kubernetes.io/restartedAt":              dep.created.Add(time.Hour).Format(time.RFC3339),
		"prometheus.io/scrape":                           "true",
		"prometheus.io/port":                             "9090",
		"prometheus.io/path":                             "/metrics",
		"cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
	}
	spec := corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: dep.name + "-config"}, DefaultMode: &mode}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: &mode,
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiry, Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{
						LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				}}}},
		},
		Containers:                    []corev1.Container{main, side},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: &grace,
		DNSPolicy:                     corev1.DNSClusterFirst,
		ServiceAccountName:            dep.name,
		DeprecatedServiceAccount:      dep.name,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsUser: &uid, RunAsNonRoot: &yes, FSGroup: &gid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		SchedulerName: corev1.DefaultSchedulerName,
		Tolerations: []corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tolerate},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tolerate},
		},
		Priority:           new(int32),
		EnableServiceLinks: &yes,
		PreemptionPolicy:   new(corev1.PreemptLowerPriority),
	}
	if d%3 == 0 {
		// Some Deployments were created with kubectl apply and copied the
		// last-applied configuration into their template.
		applied, err := json.Marshal(map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": dep.name, "namespace": dep.namespace, "labels": labels},
			"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"containers": spec.Containers[:1]}}},
		})
		if err != nil {
			panic(fmt.Sprintf("prodpods: encoding a fixture's last-applied configuration: %v", err))
		}
		annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(applied)
	}
	controller := true
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: dep.name + "-" + dep.hash + "-",
			Namespace:    dep.namespace,
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: dep.name + "-" + dep.hash, UID: dep.rsUID,
				Controller: &controller, BlockOwnerDeletion: &controller,
			}},
		},
		Spec: spec,
	}
}

// identity is what differs between the replicas of one Deployment: the
// pod's name suffix, UID, resource version, timestamps, node, IPs and
// container IDs, and its ReplicaSet's UID (which differs between clusters
// running the same Deployment; see Fleet).
type identity struct {
	suffix          string
	uid             types.UID
	resourceVersion string
	// created, scheduled, started and ready are the pod's creation, its
	// scheduling, its containers' start and its readiness.
	created, scheduled, started, ready metav1.Time
	nodeName, hostIP, podIP            string
	containerIDs                       [2]string
	restarts                           [2]int32
	ownerUID                           types.UID
}

// replica returns replica r of dep, pod i of the fixtures: the template's
// metadata and spec with its own name, UID, node, IPs, timestamps, resource
// version, volume name and container IDs, and its managed fields.
func (dep prodDeployment) replica(r, i int) corev1.Pod {
	created := dep.created.Add(time.Duration(r) * 3 * time.Second)
	node := i*7919%5000 + 1
	id := identity{
		suffix:          podNameSuffix(i),
		uid:             types.UID(fmt.Sprintf("9d8e7f60-%04x-4b1c-8d2e-%012x", i%65536, i)),
		resourceVersion: strconv.Itoa(10_000_000 + i),
		created:         metav1.NewTime(created),
		scheduled:       metav1.NewTime(created.Add(time.Second)),
		started:         metav1.NewTime(created.Add(4 * time.Second)),
		ready:           metav1.NewTime(created.Add(15 * time.Second)),
		nodeName:        fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", node/4000, node/250%16, node%250+1),
		hostIP:          fmt.Sprintf("10.%d.%d.%d", node/4000, node/250%16, node%250+1),
		podIP:           fmt.Sprintf("100.%d.%d.%d", 64+i/65536%64, i/256%256, i%256),
		ownerUID:        dep.rsUID,
	}
	for c := range id.containerIDs {
		id.containerIDs[c] = "containerd://" + fmt.Sprintf("%032x%032x", i, c+1)
		id.restarts[c] = int32(i % 3 * c)
	}
	return dep.build(id)
}

// build returns the replica of dep with identity id.
func (dep prodDeployment) build(id identity) corev1.Pod {
	pod := dep.template
	pod.Name = pod.GenerateName + id.suffix
	pod.UID = id.uid
	pod.ResourceVersion = id.resourceVersion
	pod.CreationTimestamp = id.created
	if id.ownerUID != dep.rsUID {
		pod.OwnerReferences = append([]metav1.OwnerReference(nil), pod.OwnerReferences...)
		pod.OwnerReferences[0].UID = id.ownerUID
	}
	pod.Spec.NodeName = id.nodeName
	// Each pod has its own projected service-account volume name
	// (kube-api-access-<random>): rename the volume and its mounts.
	apiAccess := "kube-api-access-" + id.suffix
	pod.Spec.Volumes = renameVolume(pod.Spec.Volumes, "kube-api-access", apiAccess)
	pod.Spec.Containers = make([]corev1.Container, len(dep.template.Spec.Containers))
	for c, ctr := range dep.template.Spec.Containers {
		ctr.VolumeMounts = renameMount(ctr.VolumeMounts, "kube-api-access", apiAccess)
		pod.Spec.Containers[c] = ctr
	}
	statuses := make([]corev1.ContainerStatus, len(pod.Spec.Containers))
	for c, ctr := range pod.Spec.Containers {
		statuses[c] = corev1.ContainerStatus{
			Name:         ctr.Name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: id.started}},
			Ready:        true,
			RestartCount: id.restarts[c],
			Image:        ctr.Image,
			ImageID:      ctr.Image[:strings.LastIndexByte(ctr.Image, ':')] + "@sha256:" + fmt.Sprintf("%064x", dep.index*31+c),
			ContainerID:  id.containerIDs[c],
			Started:      new(true),
		}
	}
	scheduled := id.scheduled
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: id.started},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: id.scheduled},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: id.ready},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: id.ready},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: id.scheduled},
		},
		HostIP:            id.hostIP,
		HostIPs:           []corev1.HostIP{{IP: id.hostIP}},
		PodIP:             id.podIP,
		PodIPs:            []corev1.PodIP{{IP: id.podIP}},
		StartTime:         &scheduled,
		ContainerStatuses: statuses,
		QOSClass:          corev1.PodQOSBurstable,
	}
	pod.ManagedFields = dep.managedFields(id)
	return pod
}

// podNameSuffixLetters are the characters of the random suffixes the
// server gives generated names.
const podNameSuffixLetters = "bcdfghjklmnpqrstvwxz2456789"

// podNameSuffix returns pod i's five-character name suffix. Different pods
// below 27⁵ get different suffixes: i times a multiplier prime to 27 is a
// permutation modulo 27⁵.
func podNameSuffix(i int) string {
	const space = 27 * 27 * 27 * 27 * 27
	v := i * 2654435761 % space
	var b [5]byte
	for k := range b {
		b[k] = podNameSuffixLetters[v%27]
		v /= 27
	}
	return string(b[:])
}

// renameVolume returns volumes with the one named from renamed to to.
func renameVolume(volumes []corev1.Volume, from, to string) []corev1.Volume {
	out := append([]corev1.Volume(nil), volumes...)
	for v := range out {
		if out[v].Name == from {
			out[v].Name = to
		}
	}
	return out
}

// renameMount returns mounts with the ones of volume from moved to to.
func renameMount(mounts []corev1.VolumeMount, from, to string) []corev1.VolumeMount {
	out := append([]corev1.VolumeMount(nil), mounts...)
	for m := range out {
		if out[m].Name == from {
			out[m].Name = to
		}
	}
	return out
}

// fieldSet is a managed-fields set in the FieldsV1 JSON form.
type fieldSet map[string]any

// Placeholders in a Deployment's managed-fields JSON for what differs
// between its replicas: the name suffix of the projected volume, the pod
// IP, and the ReplicaSet's UID (the same for every replica of one cluster,
// but not between clusters; see Fleet).
const (
	suffixMark   = "@suffix@"
	podIPMark    = "@pod-ip@"
	ownerUIDMark = "@owner-uid@"
)

// managedFields returns the managed fields of dep's replica with
// identity id. Filling placeholders in JSON built once per Deployment
// instead of encoding three field sets per pod makes generating 100,000 pods
// take seconds instead of a minute (0.7 ms a pod on a loaded machine, nearly
// all in encoding/json).
func (dep prodDeployment) managedFields(id identity) []metav1.ManagedFieldsEntry {
	entry := func(manager, subresource string, at metav1.Time, raw []byte) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}, Subresource: subresource,
		}
	}
	controller := bytes.Replace(dep.fields[0], []byte(suffixMark), []byte(id.suffix), 1)
	controller = bytes.Replace(controller, []byte(ownerUIDMark), []byte(id.ownerUID), 1)
	return []metav1.ManagedFieldsEntry{
		entry("kube-controller-manager", "", id.created, controller),
		entry("kube-scheduler", "status", id.created, dep.fields[1]),
		entry("kubelet", "status", id.ready, bytes.Replace(dep.fields[2], []byte(podIPMark), []byte(id.podIP), 1)),
	}
}

// prodFieldSets returns, in the FieldsV1 JSON form the server writes, the
// fields of pod that three managers own: kube-controller-manager (it
// created the pod from the template), kube-scheduler and kubelet (status).
// The kubelet's set names the pod IP by podIPMark.
func prodFieldSets(pod *corev1.Pod) [3][]byte {
	keys := func(m map[string]string) fieldSet {
		s := fieldSet{".": fieldSet{}}
		for k := range m {
			s["f:"+k] = fieldSet{}
		}
		return s
	}
	named := func(field, name string) string { return `k:{"` + field + `":"` + name + `"}` }
	containers := fieldSet{}
	for _, c := range pod.Spec.Containers {
		env := fieldSet{".": fieldSet{}}
		for _, e := range c.Env {
			v := fieldSet{".": fieldSet{}, "f:name": fieldSet{}}
			if e.ValueFrom != nil {
				v["f:valueFrom"] = fieldSet{".": fieldSet{}}
			} else {
				v["f:value"] = fieldSet{}
			}
			env[named("name", e.Name)] = v
		}
		mounts := fieldSet{".": fieldSet{}}
		for _, m := range c.VolumeMounts {
			mounts[named("mountPath", m.MountPath)] = fieldSet{".": fieldSet{}, "f:mountPath": fieldSet{}, "f:name": fieldSet{}, "f:readOnly": fieldSet{}}
		}
		ports := fieldSet{".": fieldSet{}}
		for _, p := range c.Ports {
			ports[`k:{"containerPort":`+strconv.Itoa(int(p.ContainerPort))+`,"protocol":"TCP"}`] = fieldSet{".": fieldSet{}, "f:containerPort": fieldSet{}, "f:name": fieldSet{}, "f:protocol": fieldSet{}}
		}
		fields := fieldSet{
			".": fieldSet{}, "f:args": fieldSet{}, "f:env": env, "f:image": fieldSet{}, "f:imagePullPolicy": fieldSet{}, "f:name": fieldSet{},
			"f:ports": ports, "f:volumeMounts": mounts,
			"f:resources":              fieldSet{".": fieldSet{}, "f:limits": fieldSet{".": fieldSet{}, "f:cpu": fieldSet{}, "f:memory": fieldSet{}}, "f:requests": fieldSet{".": fieldSet{}, "f:cpu": fieldSet{}, "f:memory": fieldSet{}}},
			"f:securityContext":        fieldSet{".": fieldSet{}, "f:allowPrivilegeEscalation": fieldSet{}, "f:capabilities": fieldSet{".": fieldSet{}, "f:drop": fieldSet{}}, "f:readOnlyRootFilesystem": fieldSet{}},
			"f:terminationMessagePath": fieldSet{}, "f:terminationMessagePolicy": fieldSet{},
		}
		for name, p := range map[string]*corev1.Probe{"f:livenessProbe": c.LivenessProbe, "f:readinessProbe": c.ReadinessProbe} {
			if p == nil {
				continue
			}
			probe := fieldSet{".": fieldSet{}, "f:failureThreshold": fieldSet{}, "f:periodSeconds": fieldSet{}, "f:successThreshold": fieldSet{}, "f:timeoutSeconds": fieldSet{}}
			if p.HTTPGet != nil {
				probe["f:httpGet"] = fieldSet{".": fieldSet{}, "f:path": fieldSet{}, "f:port": fieldSet{}, "f:scheme": fieldSet{}}
			} else {
				probe["f:tcpSocket"] = fieldSet{".": fieldSet{}, "f:port": fieldSet{}}
			}
			fields[name] = probe
		}
		containers[named("name", c.Name)] = fields
	}
	volumes := fieldSet{".": fieldSet{}}
	for _, v := range pod.Spec.Volumes {
		source := "f:emptyDir"
		switch {
		case v.ConfigMap != nil:
			source = "f:configMap"
		case v.Projected != nil:
			source = "f:projected"
		}
		volumes[named("name", v.Name)] = fieldSet{".": fieldSet{}, "f:name": fieldSet{}, source: fieldSet{".": fieldSet{}, "f:defaultMode": fieldSet{}, "f:sources": fieldSet{}}}
	}
	controller := fieldSet{
		"f:metadata": fieldSet{
			"f:generateName": fieldSet{}, "f:labels": keys(pod.Labels), "f:annotations": keys(pod.Annotations),
			"f:ownerReferences": fieldSet{".": fieldSet{}, named("uid", string(pod.OwnerReferences[0].UID)): fieldSet{}},
		},
		"f:spec": fieldSet{
			"f:containers": containers, "f:volumes": volumes, "f:dnsPolicy": fieldSet{}, "f:enableServiceLinks": fieldSet{},
			"f:restartPolicy": fieldSet{}, "f:schedulerName": fieldSet{}, "f:serviceAccount": fieldSet{}, "f:serviceAccountName": fieldSet{},
			"f:terminationGracePeriodSeconds": fieldSet{},
			"f:securityContext":               fieldSet{".": fieldSet{}, "f:fsGroup": fieldSet{}, "f:runAsNonRoot": fieldSet{}, "f:runAsUser": fieldSet{}, "f:seccompProfile": fieldSet{".": fieldSet{}, "f:type": fieldSet{}}},
		},
	}
	condition := fieldSet{".": fieldSet{}, "f:lastProbeTime": fieldSet{}, "f:lastTransitionTime": fieldSet{}, "f:status": fieldSet{}, "f:type": fieldSet{}}
	conditions := fieldSet{}
	for _, c := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady} {
		conditions[named("type", string(c))] = condition
	}
	kubelet := fieldSet{"f:status": fieldSet{
		"f:conditions": conditions, "f:containerStatuses": fieldSet{}, "f:hostIP": fieldSet{},
		"f:hostIPs": fieldSet{}, "f:phase": fieldSet{}, "f:podIP": fieldSet{}, "f:startTime": fieldSet{},
		"f:podIPs": fieldSet{".": fieldSet{}, named("ip", podIPMark): fieldSet{".": fieldSet{}, "f:ip": fieldSet{}}},
	}}
	scheduler := fieldSet{"f:status": fieldSet{"f:conditions": fieldSet{".": fieldSet{}, named("type", string(corev1.PodScheduled)): condition}}}
	var out [3][]byte
	for i, set := range []fieldSet{controller, scheduler, kubelet} {
		raw, err := json.Marshal(set)
		if err != nil {
			panic(fmt.Sprintf("prodpods: encoding a fixture's managed fields: %v", err))
		}
		out[i] = raw
	}
	return out
}
