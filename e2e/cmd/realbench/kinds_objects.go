package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The objects of the per-kind memory benchmark (-kinds), other than pods
// (internal/prodpods) and Workloads (internal/crdtypes): ConfigMaps,
// Secrets, Services, EndpointSlices and Events shaped like those of a real
// cluster of a few thousand pods. Sizes, labels and annotations follow what
// the components that write them write (kube-controller-manager, kubelet,
// Helm, Argo CD, cert-manager, the EndpointSlice controller), and where a
// real cluster holds copies of one template (the CA bundle in every
// namespace, a registry secret copied to each, the generations of a
// kustomize ConfigMap, Helm's release history) so do these. Each generator
// is deterministic: the same scale gives the same objects. The server adds
// what it adds (UID, resource version, creation time, managed fields of the
// field manager each object is written by).

// kindsEpoch is the time the objects' timestamps start from.
var kindsEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// kindObject is one object to create, with the field manager that writes
// it (kube-apiserver records it in the object's managed fields).
type kindObject struct {
	manager string
	obj     client.Object
}

// appNames name the applications of each namespace: the same names in
// every namespace, as teams deploy the same charts.
var appNames = []string{"api", "worker", "frontend", "scheduler", "cache-warmer"}

// kindsNamespaceCount is how many namespaces the objects spread over at
// scale 1 (each has every application).
const kindsNamespaceCount = 150

// namespaceName names the i-th namespace of the per-kind objects.
func namespaceName(i int) string { return "tenant-" + strconv.Itoa(i) }

// namespacesFor returns how many namespaces hold the objects at scale.
func namespacesFor(scale float64) int { return max(1, int(float64(kindsNamespaceCount)*scale+0.5)) }

// randomBytes returns n bytes drawn from a generator seeded by seed: the
// incompressible parts of an object (keys, tokens, Helm's gzipped
// releases), different for each seed.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// pem returns a PEM block of kind around n bytes of seed's randomness, as
// certificates and keys look in ConfigMaps and Secrets.
func pem(kind string, seed uint64, n int) string {
	body := base64.StdEncoding.EncodeToString(randomBytes(seed, n))
	var b strings.Builder
	b.WriteString("-----BEGIN " + kind + "-----\n")
	for len(body) > 64 {
		b.WriteString(body[:64] + "\n")
		body = body[64:]
	}
	b.WriteString(body + "\n-----END " + kind + "-----\n")
	return b.String()
}

// clusterCA is the cluster's CA certificate, the same bundle in every
// namespace's kube-root-ca.crt and in every service account token secret.
var clusterCA = pem("CERTIFICATE", 1, 800)

// meshCA is the service mesh's root certificate (istio-ca-root-cert).
var meshCA = pem("CERTIFICATE", 2, 900)

// helmLabels are the labels Helm charts put on what they create.
func helmLabels(app, release, chart string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       app,
		"app.kubernetes.io/instance":   release,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/version":    "1.14.2",
		"helm.sh/chart":                chart,
	}
}

// helmAnnotations are the annotations Helm 3 adds to what it creates.
func helmAnnotations(release, namespace string) map[string]string {
	return map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace}
}

// lastApplied returns kubectl's last-applied-configuration annotation of
// obj, as a client-side apply (Argo CD's default) records it.
func lastApplied(obj any) string {
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err) // the generators' own types always encode
	}
	return string(raw) + "\n"
}

// kustomizeSuffix is the content hash kustomize appends to a generated
// ConfigMap's name.
func kustomizeSuffix(seed uint64) string {
	const alphabet = "bcdfghkmt256789"
	r := rand.New(rand.NewPCG(seed, 7))
	var b [10]byte
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b[:])
}

// appConfig is the application.yaml of app in namespace at generation
// gen: the same settings everywhere but for a few values.
func appConfig(app, namespace string, gen int) string {
	return fmt.Sprintf(`server:
  port: 8080
  shutdownGracePeriod: 30s
  maxRequestBodyBytes: 10485760
logging:
  level: info
  format: json
  fields:
    service: %[1]s
    namespace: %[2]s
metrics:
  enabled: true
  path: /metrics
  port: 9090
tracing:
  enabled: true
  sampler: parentbased_traceidratio
  ratio: 0.05
  endpoint: otel-collector.observability.svc.cluster.local:4317
database:
  host: postgres.%[2]s.svc.cluster.local
  port: 5432
  name: %[1]s
  pool:
    maxOpen: 20
    maxIdle: 5
    connMaxLifetime: 30m
cache:
  address: redis-master.%[2]s.svc.cluster.local:6379
  ttl: 5m
featureFlags:
  newCheckoutFlow: %[3]t
  asyncExports: true
  strictValidation: false
  rolloutGeneration: %[4]d
upstreams:
  - name: payments
    url: http://payments.%[2]s.svc.cluster.local:8080
    timeout: 2s
    retries: 3
  - name: catalog
    url: http://catalog.%[2]s.svc.cluster.local:8080
    timeout: 1s
    retries: 2
`, app, namespace, gen%2 == 1, gen)
}

// appEnv is the environment of app: a small ConfigMap a chart renders.
func appEnv(app string) map[string]string {
	return map[string]string{
		"LOG_LEVEL":            "info",
		"GOMAXPROCS":           "2",
		"GOMEMLIMIT":           "900MiB",
		"OTEL_SERVICE_NAME":    app,
		"OTEL_TRACES_SAMPLER":  "parentbased_traceidratio",
		"HTTP_READ_TIMEOUT":    "15s",
		"HTTP_WRITE_TIMEOUT":   "15s",
		"FEATURE_ASYNC_EXPORT": "true",
		"REGION":               "us-east-1",
		"ENVIRONMENT":          "production",
	}
}

// newConfigMaps returns n ConfigMaps over namespaces namespaces: in each
// namespace the CA bundles of kube-controller-manager and the mesh (the
// same data everywhere), each application's config as Argo CD applies a
// kustomize generator (three generations kept, hashed names, the
// last-applied annotation) and its environment from a Helm chart; the
// rest scripts and status ConfigMaps of cluster add-ons in their own
// namespaces, and every fortieth a Grafana dashboard of about 25 KB.
func newConfigMaps(n, namespaces int) []kindObject {
	out := make([]kindObject, 0, n)
	add := func(manager string, cm *corev1.ConfigMap) {
		if len(out) < n {
			out = append(out, kindObject{manager: manager, obj: cm})
		}
	}
	for ns := range namespaces {
		namespace := namespaceName(ns)
		add("kube-controller-manager", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: namespace, Annotations: map[string]string{
				"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.",
			}},
			Data: map[string]string{"ca.crt": clusterCA},
		})
		add("pilot-discovery", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "istio-ca-root-cert", Namespace: namespace, Labels: map[string]string{"istio.io/config": "true"}},
			Data:       map[string]string{"root-cert.pem": meshCA},
		})
		for a, app := range appNames {
			release := app
			for gen := range 3 {
				name := app + "-config-" + kustomizeSuffix(uint64(ns*1000+a*10+gen))
				labels := map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/instance": app + "-" + namespace}
				cm := &corev1.ConfigMap{
					TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
					Data:       map[string]string{"application.yaml": appConfig(app, namespace, gen)},
				}
				cm.Annotations = map[string]string{
					"argocd.argoproj.io/tracking-id":                   app + "-" + namespace + ":/ConfigMap:" + namespace + "/" + name,
					"kubectl.kubernetes.io/last-applied-configuration": lastApplied(cm),
				}
				cm.TypeMeta = metav1.TypeMeta{}
				add("argocd-controller", cm)
			}
			add("helm", &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: app + "-env", Namespace: namespace, Labels: helmLabels(app, release, app+"-3.2.1"), Annotations: helmAnnotations(release, namespace)},
				Data:       appEnv(app),
			})
		}
	}
	for i := 0; len(out) < n; i++ {
		namespace := []string{"monitoring", "kube-system", "ingress-nginx", "cert-manager", "logging"}[i%5]
		if i%40 == 0 {
			add("grafana-operator", &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "dashboard-" + strconv.Itoa(i/40), Namespace: "monitoring", Labels: map[string]string{"grafana_dashboard": "1"}},
				Data:       map[string]string{"dashboard-" + strconv.Itoa(i/40) + ".json": dashboard(i / 40)},
			})
			continue
		}
		add("helm", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: "addon-" + strconv.Itoa(i) + "-scripts", Namespace: namespace,
				Labels: helmLabels("addon-"+strconv.Itoa(i%17), "addon-"+strconv.Itoa(i%17), "addon-0.9.0"), Annotations: helmAnnotations("addon-"+strconv.Itoa(i%17), namespace),
			},
			Data: map[string]string{
				"entrypoint.sh": "#!/bin/sh\nset -eu\nexec /usr/local/bin/addon --config /etc/addon/config.yaml --instance " + strconv.Itoa(i) + " \"$@\"\n",
				"config.yaml":   "instance: " + strconv.Itoa(i) + "\nsyncPeriod: 1m\nleaderElection: true\nmetricsAddr: :8080\nprobeAddr: :8081\n",
			},
		})
	}
	return out
}

// dashboard returns the JSON of a Grafana dashboard of about 25 KB.
func dashboard(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"title":"Service overview %d","uid":"svc-%d","schemaVersion":39,"panels":[`, i, i)
	for p := range 40 {
		if p > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"type":"timeseries","title":"Panel %d","gridPos":{"h":8,"w":12,"x":%d,"y":%d},"datasource":{"type":"prometheus","uid":"prometheus"},"targets":[{"expr":"sum(rate(http_requests_total{namespace=~\"$namespace\",service=\"svc-%d\",code=~\"5..\"}[5m])) by (pod) / sum(rate(http_requests_total{namespace=~\"$namespace\",service=\"svc-%d\"}[5m])) by (pod)","legendFormat":"{{pod}}","refId":"A"}],"fieldConfig":{"defaults":{"unit":"percentunit","min":0,"thresholds":{"mode":"absolute","steps":[{"color":"green","value":null},{"color":"red","value":0.05}]}},"overrides":[]}}`, p, p, (p%2)*12, (p/2)*8, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// newSecrets returns n Secrets over namespaces namespaces: in each
// namespace the registry credentials copied from one template, each
// application's credentials (synced by External Secrets), and a legacy
// service account token; the rest Helm's release history (ten revisions
// of each release, about 8–30 KB of gzipped manifest each) and
// cert-manager's TLS certificates.
func newSecrets(n, namespaces int) []kindObject {
	out := make([]kindObject, 0, n)
	add := func(manager string, s *corev1.Secret) {
		if len(out) < n {
			out = append(out, kindObject{manager: manager, obj: s})
		}
	}
	registry := []byte(`{"auths":{"123456789012.dkr.ecr.us-east-1.amazonaws.com":{"auth":"` + base64.StdEncoding.EncodeToString(randomBytes(3, 120)) + `"}}}`)
	for ns := range namespaces {
		namespace := namespaceName(ns)
		add("kubectl-create", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: namespace},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: registry},
		})
		add("kube-controller-manager", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "ci-deployer-token", Namespace: namespace, Annotations: map[string]string{
				"kubernetes.io/service-account.name": "ci-deployer",
				"kubernetes.io/service-account.uid":  uuid(uint64(ns) + 1<<40),
			}},
			Type: corev1.SecretTypeServiceAccountToken,
			Data: map[string][]byte{
				"ca.crt":    []byte(clusterCA),
				"namespace": []byte(namespace),
				"token":     []byte(jwt(uint64(ns))),
			},
		})
		for a, app := range appNames {
			seed := uint64(ns*100 + a)
			add("external-secrets", &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name: app + "-credentials", Namespace: namespace,
					Labels: map[string]string{"reconcile.external-secrets.io/created-by": hex.EncodeToString(randomBytes(seed, 16)), "app.kubernetes.io/name": app},
					Annotations: map[string]string{
						"reconcile.external-secrets.io/data-hash": hex.EncodeToString(randomBytes(seed+1, 16)),
					},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1beta1", Kind: "ExternalSecret", Name: app + "-credentials", UID: types.UID(uuid(seed + 1<<41)), Controller: new(true), BlockOwnerDeletion: new(true)}},
				},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{
					"DATABASE_URL": []byte("postgres://" + app + ":" + hex.EncodeToString(randomBytes(seed+2, 12)) + "@postgres." + namespace + ".svc.cluster.local:5432/" + app + "?sslmode=require"),
					"API_KEY":      []byte(hex.EncodeToString(randomBytes(seed+3, 20))),
					"SESSION_KEY":  []byte(base64.StdEncoding.EncodeToString(randomBytes(seed+4, 32))),
				},
			})
		}
	}
	for i := 0; len(out) < n; i++ {
		if i%3 == 2 {
			namespace := namespaceName(i % namespaces)
			name := "svc-" + strconv.Itoa(i) + "-tls"
			add("cert-manager-certificates-issuing", &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: namespace,
					Labels: map[string]string{"controller.cert-manager.io/fao": "true"},
					Annotations: map[string]string{
						"cert-manager.io/alt-names":        "svc-" + strconv.Itoa(i) + "." + namespace + ".svc,svc-" + strconv.Itoa(i) + "." + namespace + ".svc.cluster.local",
						"cert-manager.io/certificate-name": "svc-" + strconv.Itoa(i),
						"cert-manager.io/common-name":      "svc-" + strconv.Itoa(i) + "." + namespace + ".svc",
						"cert-manager.io/ip-sans":          "",
						"cert-manager.io/issuer-group":     "cert-manager.io",
						"cert-manager.io/issuer-kind":      "ClusterIssuer",
						"cert-manager.io/issuer-name":      "internal-ca",
						"cert-manager.io/uri-sans":         "",
					},
				},
				Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{
					"ca.crt":  []byte(clusterCA),
					"tls.crt": []byte(pem("CERTIFICATE", uint64(i)<<8|5, 1100)),
					"tls.key": []byte(pem("RSA PRIVATE KEY", uint64(i)<<8|6, 1190)),
				},
			})
			continue
		}
		release, revision := "release-"+strconv.Itoa(i/10), i%10+1
		namespace := namespaceName((i / 10) % namespaces)
		status := "superseded"
		if revision == 10 {
			status = "deployed"
		}
		size := 8000 + (i/10%12)*2000
		add("helm", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: "sh.helm.release.v1." + release + ".v" + strconv.Itoa(revision), Namespace: namespace,
				Labels: map[string]string{"name": release, "owner": "helm", "status": status, "version": strconv.Itoa(revision), "modifiedAt": strconv.FormatInt(kindsEpoch.Unix()+int64(i), 10)},
			},
			Type: "helm.sh/release.v1",
			// Helm stores the release gzipped and base64-encoded inside
			// the Secret's (itself base64-encoded) data.
			Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(randomBytes(uint64(i)<<8|7, size)))},
		})
	}
	return out
}

// uuid returns a UUID-shaped string derived from seed.
func uuid(seed uint64) string {
	b := randomBytes(seed, 16)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// jwt returns a token shaped like a service account's.
func jwt(seed uint64) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"RS256","kid":"`+hex.EncodeToString(randomBytes(seed, 20))+`"}`)) + "." +
		enc.EncodeToString(randomBytes(seed+1, 420)) + "." + enc.EncodeToString(randomBytes(seed+2, 256))
}

// serviceShape is one Service of the generated set, from which its
// EndpointSlice is made too.
type serviceShape struct {
	name, namespace, app string
	headless             bool
	ports                []corev1.ServicePort
	clusterIP            string
	endpoints            int
	index                int
}

// services returns the shapes of n Services over namespaces namespaces:
// each application's Service (HTTP and gRPC), its metrics Service, and
// every tenth a headless Service of a StatefulSet.
func services(n, namespaces int) []serviceShape {
	out := make([]serviceShape, 0, n)
	for i := 0; len(out) < n; i++ {
		ns, a := (i/len(appNames))%namespaces, i%len(appNames)
		round := i / (len(appNames) * namespaces)
		s := serviceShape{namespace: namespaceName(ns), app: appNames[a], index: len(out), endpoints: 2 + (i*7)%9}
		switch round % 3 {
		case 0:
			s.name = s.app
			s.ports = []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")},
				{Name: "grpc", Protocol: corev1.ProtocolTCP, Port: 9000, TargetPort: intstr.FromInt32(9000)},
			}
		case 1:
			s.name = s.app + "-metrics"
			s.ports = []corev1.ServicePort{{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromString("metrics")}}
		default:
			s.name, s.headless = s.app+"-"+strconv.Itoa(round)+"-headless", true
			s.ports = []corev1.ServicePort{{Name: "peer", Protocol: corev1.ProtocolTCP, Port: 7000, TargetPort: intstr.FromInt32(7000)}}
		}
		if !s.headless {
			s.clusterIP = fmt.Sprintf("10.96.%d.%d", 1+len(out)/250, 1+len(out)%250)
		}
		out = append(out, s)
	}
	return out
}

// newServices returns the Services of services(n, namespaces), as Helm
// creates them.
func newServices(n, namespaces int) []kindObject {
	shapes := services(n, namespaces)
	out := make([]kindObject, len(shapes))
	for i, s := range shapes {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Name: s.name, Namespace: s.namespace, Labels: helmLabels(s.app, s.app, s.app+"-3.2.1"), Annotations: helmAnnotations(s.app, s.namespace),
			},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeClusterIP,
				Ports:    s.ports,
				Selector: map[string]string{"app.kubernetes.io/name": s.app, "app.kubernetes.io/instance": s.app},
			},
		}
		if s.headless {
			svc.Spec.ClusterIP = corev1.ClusterIPNone
			svc.Spec.PublishNotReadyAddresses = true
		} else {
			svc.Spec.ClusterIP = s.clusterIP
			svc.Annotations["prometheus.io/scrape"] = "true"
			svc.Annotations["prometheus.io/port"] = "9090"
		}
		out[i] = kindObject{manager: "helm", obj: svc}
	}
	return out
}

// newEndpointSlices returns the EndpointSlice the EndpointSlice controller
// makes for each Service of services(n, namespaces): its pods' addresses,
// conditions, nodes, zones and references.
func newEndpointSlices(n, namespaces int) []kindObject {
	shapes := services(n, namespaces)
	out := make([]kindObject, len(shapes))
	for i, s := range shapes {
		labels := helmLabels(s.app, s.app, s.app+"-3.2.1")
		labels[discoveryv1.LabelServiceName] = s.name
		labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
		if s.headless {
			labels[corev1.IsHeadlessService] = ""
		}
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: s.name + "-" + kustomizeSuffix(uint64(i) + 1<<20)[:5], Namespace: s.namespace, Labels: labels,
				Annotations: map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": kindsEpoch.Add(time.Duration(i) * time.Second).Format(time.RFC3339)},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Service", Name: s.name, UID: types.UID(uuid(uint64(i) + 1<<42)), Controller: new(true), BlockOwnerDeletion: new(true),
				}},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		for _, p := range s.ports {
			port := p.TargetPort.IntVal
			if port == 0 {
				port = map[string]int32{"http": 8080, "metrics": 9090}[p.TargetPort.StrVal]
			}
			slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: new(p.Name), Protocol: new(corev1.ProtocolTCP), Port: new(port)})
		}
		for e := range s.endpoints {
			node := (i*13 + e*7) % 200
			podName := s.app + "-" + kustomizeSuffix(uint64(i))[:9] + "-" + kustomizeSuffix(uint64(i*16 + e))[:5]
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.244.%d.%d", node, 2+(i*16+e)%250)},
				Conditions: discoveryv1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)},
				NodeName:   new("node-" + strconv.Itoa(node)),
				Zone:       new("us-east-1" + string(rune('a'+node%3))),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: s.namespace, Name: podName, UID: types.UID(uuid(uint64(i*16+e) + 1<<43))},
			})
		}
		out[i] = kindObject{manager: "kube-controller-manager", obj: slice}
	}
	return out
}

// podEvent is one kind of Event a pod's life produces.
type podEvent struct {
	reason, message, component, kind string
}

// podLifeEvents are the Events of a pod from scheduling to running, and
// the warnings a few pods get; %[1]s is the pod, %[2]s its namespace,
// %[3]s its node, %[4]s its image.
var podLifeEvents = []podEvent{
	{"Scheduled", "Successfully assigned %[2]s/%[1]s to %[3]s", "default-scheduler", corev1.EventTypeNormal},
	{"Pulled", "Container image \"%[4]s\" already present on machine", "kubelet", corev1.EventTypeNormal},
	{"Created", "Created container: app", "kubelet", corev1.EventTypeNormal},
	{"Started", "Started container app", "kubelet", corev1.EventTypeNormal},
	{"Unhealthy", "Readiness probe failed: Get \"http://10.244.3.17:8080/readyz\": dial tcp 10.244.3.17:8080: connect: connection refused", "kubelet", corev1.EventTypeWarning},
}

// newEvents returns n core/v1 Events: those of pods being scheduled and
// started by kube-scheduler and kubelet, five per pod (the last a
// readiness warning repeated a few times).
func newEvents(n, namespaces int) []kindObject {
	out := make([]kindObject, 0, n)
	for i := 0; len(out) < n; i++ {
		ns, a := (i/len(appNames))%namespaces, i%len(appNames)
		namespace, app := namespaceName(ns), appNames[a]
		pod := app + "-" + kustomizeSuffix(uint64(ns*10 + a))[:9] + "-" + kustomizeSuffix(uint64(i) + 1<<30)[:5]
		node := "node-" + strconv.Itoa((i*7)%200)
		image := "123456789012.dkr.ecr.us-east-1.amazonaws.com/shop/" + app + ":1.14.2"
		podUID := types.UID(uuid(uint64(i) + 1<<44))
		for e, ev := range podLifeEvents {
			if len(out) == n {
				break
			}
			at := metav1.NewTime(kindsEpoch.Add(time.Duration(i)*time.Second + time.Duration(e)*1500*time.Millisecond))
			event := &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: pod + "." + fmt.Sprintf("%016x", rand.New(rand.NewPCG(uint64(i), uint64(e))).Uint64()), Namespace: namespace},
				InvolvedObject: corev1.ObjectReference{
					Kind: "Pod", Namespace: namespace, Name: pod, UID: podUID, APIVersion: "v1", ResourceVersion: strconv.Itoa(100000 + i),
				},
				Reason:              ev.reason,
				Message:             fmt.Sprintf(ev.message, pod, namespace, node, image),
				Source:              corev1.EventSource{Component: ev.component},
				FirstTimestamp:      at,
				LastTimestamp:       at,
				Count:               1,
				Type:                ev.kind,
				ReportingController: ev.component,
				ReportingInstance:   ev.component + "-control-plane-1",
			}
			if ev.component == "kubelet" {
				event.InvolvedObject.FieldPath = "spec.containers{app}"
				event.Source.Host = node
				event.ReportingInstance = node
			}
			if ev.reason == "Unhealthy" {
				event.Count = int32(3 + i%5)
				event.LastTimestamp = metav1.NewTime(at.Add(time.Duration(event.Count) * 10 * time.Second))
			}
			out = append(out, kindObject{manager: ev.component, obj: event})
		}
	}
	return out
}
