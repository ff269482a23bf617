package informer_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informer"
)

// jobChurn writes Job-like churn to a fakeAPIServer's pods: the pods of
// Indexed Jobs, each created, updated once it runs (its IP, its
// container's ID) and deleted once done, parallelism pods at a time. As
// with real Jobs, every pod has strings of its own (name, UID, completion
// index, hostname, IP, container ID, a trace ID in its labels, annotations
// and env) that its updates repeat, and those its Job's pods share (the
// Job's name and UID) change from Job to Job.
type jobChurn struct {
	srv         *fakeAPIServer
	parallelism int
	pods        int // created so far
}

// run writes cycles create-update-delete cycles.
func (c *jobChurn) run(cycles int) {
	for done := 0; done < cycles; done += c.parallelism {
		n := min(c.parallelism, cycles-done)
		job := c.pods / c.parallelism
		batch := make([]*corev1.Pod, n)
		for i := range batch {
			batch[i] = c.srv.Create(podsResource, jobPod(job, c.pods+i)).(*corev1.Pod)
		}
		for i, p := range batch {
			jobPodRunning(p, c.pods+i)
			batch[i] = c.srv.Update(podsResource, p).(*corev1.Pod)
		}
		for _, p := range batch {
			c.srv.Delete(podsResource, p)
		}
		c.pods += n
	}
}

// jobPod returns pod i, of Job job, as created.
func jobPod(job, i int) *corev1.Pod {
	jobName := "churn-job-" + strconv.Itoa(job)
	jobUID := types.UID(fmt.Sprintf("a1b2c3d4-0000-4000-8000-%012x", job))
	name := fmt.Sprintf("%s-%06d", jobName, i)
	index := strconv.Itoa(i)
	trace := fmt.Sprintf("%016x%016x", uint64(i)*0x9e3779b97f4a7c15, uint64(job))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    "batch",
			Name:         name,
			GenerateName: jobName + "-",
			UID:          types.UID(fmt.Sprintf("e5f6a7b8-0000-4000-8000-%012x", i)),
			Labels: map[string]string{
				"batch.kubernetes.io/job-name":             jobName,
				"batch.kubernetes.io/controller-uid":       string(jobUID),
				"batch.kubernetes.io/job-completion-index": index,
				"example.com/trace-id":                     trace,
			},
			Annotations: map[string]string{
				"batch.kubernetes.io/job-completion-index": index,
				"example.com/trace-parent":                 "00-" + trace + "-01",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: jobName, UID: jobUID}},
		},
		Spec: corev1.PodSpec{
			Hostname:      name,
			Subdomain:     "workers",
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    "work",
				Image:   "registry.example.com/batch/worker:v1.2.3",
				Command: []string{"/worker", "--shard", index},
				Env: []corev1.EnvVar{
					{Name: "JOB_COMPLETION_INDEX", Value: index},
					{Name: "TRACE_ID", Value: trace},
					{Name: "MODE", Value: "batch"},
				},
			}},
		},
	}
}

// jobPodRunning makes pod i, as jobPod returned it, scheduled and running.
func jobPodRunning(p *corev1.Pod, i int) {
	ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	p.Spec.NodeName = "node-" + strconv.Itoa(i%8)
	p.Status = corev1.PodStatus{
		Phase:  corev1.PodRunning,
		HostIP: "192.168.0." + strconv.Itoa(i%8),
		PodIP:  ip,
		PodIPs: []corev1.PodIP{{IP: ip}},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:        "work",
			Image:       "registry.example.com/batch/worker:v1.2.3",
			ImageID:     "registry.example.com/batch/worker@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ContainerID: fmt.Sprintf("containerd://%064x", uint64(i)*0x9e3779b97f4a7c15),
			Ready:       true,
		}},
	}
}

// liveHeapAfterGC returns the bytes of live heap objects once garbage
// collections have freed what nothing uses: three, so that what the first
// frees only when weak pointers to it are cleared, and what sync.Pools keep
// for one cycle, are gone too. It pauses after each for the cleanups it
// queued (runtime.AddCleanup) to run: the informer's sweeps of its intern
// tables and its idle queue's release of free chunks, whose memory the
// next collection frees if it starts after them (if not, the one after it
// does: the pause is no assertion about speed).
func liveHeapAfterGC() int64 {
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64())
}

// TestInternTablesBoundedUnderChurn runs an informer over the REST
// ListerWatcher in protobuf, which interns the strings of what it decodes,
// through Job-like churn (jobChurn) with nothing cached at the end: the
// heap must come back near where it was before the churn, by default and
// with Deduplicate (which shares sub-objects too: on decode, or after a
// transform). The tables of interned strings and shared sub-objects hold
// weak pointers to what was cached, and must sweep those of the objects
// gone as the churn goes on, not keep a slot for each.
func TestInternTablesBoundedUnderChurn(t *testing.T) {
	const (
		cycles = 5_000
		// bound is well above the noise of the live heap between two
		// quiet moments of this process (the fake server's history
		// window, connection buffers: within 40 KB of each other in
		// three runs under -race at load 6 on 2 cores) and well below
		// what keeping a few bytes per cycle adds up to. It was 1 MiB
		// while the intern tables kept their churned-through slots and
		// maps, and the queue its free chunks, once idle.
		bound = 256 << 10
	)
	for _, c := range []struct {
		name string
		opts informer.InformerOptions[*corev1.Pod]
	}{
		{"default", informer.InformerOptions[*corev1.Pod]{}},
		{"Deduplicate", informer.InformerOptions[*corev1.Pod]{Deduplicate: new(true)}},
		{"Deduplicate with a transform", informer.InformerOptions[*corev1.Pod]{
			Deduplicate: new(true), Transform: informer.StripManagedFields[*corev1.Pod],
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(informer.ExpectNoGoroutineLeak(t)) // runs last, once the server is closed
			srv := newFakeAPIServer(t)
			srv.Serve(podsResource, podKind, true)
			srv.LimitHistory(podsResource, 64)
			inf := runPodInformer(t, srv, c.opts)

			var deleted atomic.Int64
			if _, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
				DeleteFunc: func(informer.DeletedObject[*corev1.Pod]) { deleted.Add(1) },
			}); err != nil {
				t.Fatal(err)
			}
			churn := &jobChurn{srv: srv, parallelism: 20}
			caughtUp := func() {
				t.Helper()
				informer.Eventually(t, "the informer to deliver every deletion", func() bool {
					return deleted.Load() == int64(churn.pods)
				})
				if n := len(inf.Cache().List()); n != 0 {
					t.Fatalf("%d pods cached after the churn, want none", n)
				}
			}
			// A first round allocates what stays whatever the churn (the
			// tables' fixed parts, buffers, the history window).
			churn.run(2_000)
			caughtUp()
			before := liveHeapAfterGC()
			churn.run(cycles)
			caughtUp()
			// The sweeps run in cleanups after collections, which a loaded
			// machine can delay past liveHeapAfterGC's pauses: poll for a
			// while, keeping the lowest reading. A table that keeps what it
			// should not stays above the bound in every reading.
			after := liveHeapAfterGC()
			for deadline := time.Now().Add(5 * time.Second); after-before > bound && time.Now().Before(deadline); {
				after = min(after, liveHeapAfterGC())
			}
			t.Logf("live heap %d B before %d cycles, %d B after: %+.1f B/cycle", before, cycles, after, float64(after-before)/cycles)
			if after-before > bound {
				t.Errorf("the live heap grew by %d B over %d churn cycles with nothing cached (%.1f B/cycle), want at most %d B",
					after-before, cycles, float64(after-before)/cycles, bound)
			}
		})
	}
}
