// Package cluster runs a real etcd and kube-apiserver on 127.0.0.1 for the
// end-to-end tests, from binaries built by hack/build-assets.sh. There is no
// scheduler, controller manager or kubelet: objects are stored and watched,
// nothing acts on them.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options says where the binaries are and where the servers keep their files.
type Options struct {
	// Assets is the directory holding the etcd and kube-apiserver binaries,
	// usually $KUBE_ASSETS as set by hack/e2e.sh.
	Assets string
	// Dir is where the servers keep their data, certificates, credentials
	// and logs. It must exist; the caller removes it when done (keeping it
	// after a failure keeps the logs, etcd.log and kube-apiserver.log).
	Dir string
	// APIServerArgs are added to kube-apiserver's command line, each as
	// --name=value; one named like a flag of the harness replaces it (list
	// flags such as --authorization-mode would otherwise add up).
	APIServerArgs []string
	// EtcdArgs are added to etcd's command line in the same way (a larger
	// --quota-backend-bytes for a large cluster).
	EtcdArgs []string
	// APIServerEnv is added to kube-apiserver's environment, each as
	// NAME=value (GOMEMLIMIT=9GiB, say, to keep a server holding a very
	// large cluster within the machine's memory).
	APIServerEnv []string
	// Users are user names, besides the administrator, that can
	// authenticate with a token of their own (see ConfigFor). They belong to
	// no group: what they may do depends on the authorization mode and on
	// the RBAC objects the tests create.
	Users []string
}

// Cluster is a running etcd and kube-apiserver pair. Its methods are safe for
// concurrent use.
type Cluster struct {
	config     *rest.Config
	userTokens map[string]string
	// etcdBinary, etcdArgs and etcdURL start etcd again on the same ports
	// and data (StartEtcd).
	etcdBinary string
	etcdArgs   []string
	etcdLog    string
	etcdURL    string
	// apiserverBinary and apiserverArgs start the API server again on
	// the same port, certificates and etcd (RestartAPIServer).
	apiserverBinary string
	apiserverArgs   []string
	apiserverEnv    []string
	apiserverLog    string
	ready           *apiserverReady
	// dir is Options.Dir, where StartAPIServer puts its servers' files.
	dir string

	mu        sync.Mutex // guards the processes, extra and stopped; held for a whole restart or StartAPIServer
	etcd      *process   // nil while stopped by StopEtcd
	apiserver *process
	// extra are the servers StartAPIServer started, stopped before etcd.
	extra   []*APIServer
	stopped bool

	stopOnce sync.Once
	stopErr  error
}

// startAttempts bounds the retries when a port chosen by freePorts was taken
// before a server could bind it.
const startAttempts = 3

// errPortInUse marks a start that failed because a server's port was taken.
var errPortInUse = errors.New("address already in use")

// Start runs etcd, then kube-apiserver against it, and returns once the API
// server reports itself ready. ctx bounds the wait; the servers outlive it
// and run until Stop. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		path := filepath.Join(opts.Assets, name)
		if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("no %s binary at %s (assets directory %q): build it with hack/build-assets.sh and set KUBE_ASSETS, or run hack/e2e.sh", name, path, opts.Assets)
		}
	}
	if info, err := os.Stat(opts.Dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("cluster directory %q does not exist", opts.Dir)
	}
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, opts)
		if err == nil || !errors.Is(err, errPortInUse) || attempt == startAttempts {
			return c, err
		}
	}
}

func start(ctx context.Context, opts Options) (*Cluster, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	apiPort := ports[2]

	dataDir := filepath.Join(opts.Dir, "etcd-data")
	certDir := filepath.Join(opts.Dir, "apiserver-certs")
	for _, dir := range []string{dataDir, certDir} {
		// A retry after a port clash starts from empty directories.
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, err
		}
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	userTokens := make(map[string]string, len(opts.Users))
	for _, user := range opts.Users {
		if userTokens[user], err = newToken(); err != nil {
			return nil, err
		}
	}
	tokenFile := filepath.Join(opts.Dir, "tokens.csv")
	if err := writeTokenFile(tokenFile, token, userTokens); err != nil {
		return nil, err
	}
	keyFile := filepath.Join(opts.Dir, "service-account.key")
	if err := writeServiceAccountKey(keyFile); err != nil {
		return nil, err
	}

	c := &Cluster{userTokens: userTokens, etcdURL: etcdURL, dir: opts.Dir}
	c.etcdBinary = filepath.Join(opts.Assets, "etcd")
	c.etcdLog = filepath.Join(opts.Dir, "etcd.log")
	c.etcdArgs = []string{
		"--name=e2e",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=e2e=" + peerURL,
		// The data is thrown away after the run; skipping fsync keeps a
		// slow shared disk from slowing every write.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
	c.etcdArgs = withArgs(c.etcdArgs, opts.EtcdArgs)
	if c.etcd, err = c.startEtcd(ctx); err != nil {
		return nil, errors.Join(err, c.shutdown(false))
	}

	c.apiserverBinary = filepath.Join(opts.Assets, "kube-apiserver")
	c.apiserverLog = filepath.Join(opts.Dir, "kube-apiserver.log")
	c.apiserverArgs = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		// A self-signed serving certificate is generated here; its CA
		// is what clients trust (see apiserverReady).
		"--cert-dir=" + certDir,
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + keyFile,
		"--service-account-signing-key-file=" + keyFile,
		// Without a controller manager no namespace gets a default
		// service account, which this plugin would require of every pod.
		"--disable-admission-plugins=ServiceAccount",
		// The "kubernetes" service's endpoints would point at a server
		// nothing can reach from a pod; there are no pods running anyway.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--profiling=false",
	}
	c.apiserverArgs = withArgs(c.apiserverArgs, opts.APIServerArgs)
	c.apiserverEnv = opts.APIServerEnv
	host := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.ready = &apiserverReady{host: host, token: token, caFile: filepath.Join(certDir, "apiserver.crt")}
	if c.apiserver, err = c.startAPIServer(ctx); err != nil {
		return nil, errors.Join(err, c.shutdown(false))
	}
	c.config = &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.ready.ca},
		// The tests create objects in bursts; client-side throttling
		// would only slow them down.
		QPS:   200,
		Burst: 400,
	}
	return c, nil
}

// withArgs returns args with extra appended, less the args of args that
// set a flag extra sets.
func withArgs(args, extra []string) []string {
	flagName := func(arg string) string { name, _, _ := strings.Cut(arg, "="); return name }
	replaced := map[string]bool{}
	for _, arg := range extra {
		replaced[flagName(arg)] = true
	}
	kept := slices.DeleteFunc(slices.Clone(args), func(arg string) bool { return replaced[flagName(arg)] })
	return append(kept, extra...)
}

// startEtcd starts etcd and waits until it is healthy. The process is
// returned even when it is not healthy, so that it can be stopped.
func (c *Cluster) startEtcd(ctx context.Context) (*process, error) {
	p, err := startProcess("etcd", c.etcdBinary, c.etcdArgs, nil, c.etcdLog)
	if err != nil {
		return nil, err
	}
	client := &http.Client{}
	defer client.CloseIdleConnections()
	return p, waitUntil(ctx, p, etcdHealthy(client, c.etcdURL))
}

// StopEtcd stops etcd, leaving kube-apiserver without storage until
// StartEtcd: writes fail, and watches see nothing new.
func (c *Cluster) StopEtcd() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.etcd == nil {
		return errors.New("etcd is not running")
	}
	err := c.etcd.stop(stopGrace)
	c.etcd = nil
	return err
}

// StartEtcd starts etcd again after StopEtcd, on the same ports and data,
// and returns once it is healthy; ctx bounds that wait.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.etcd != nil {
		return errors.New("etcd is running, or the cluster is stopped")
	}
	p, err := c.startEtcd(ctx)
	c.etcd = p
	return err
}

// startAPIServer starts kube-apiserver and waits until it is ready. The
// process is returned even when it is not ready, so that it can be stopped.
func (c *Cluster) startAPIServer(ctx context.Context) (*process, error) {
	p, err := startProcess("kube-apiserver", c.apiserverBinary, c.apiserverArgs, c.apiserverEnv, c.apiserverLog)
	if err != nil {
		return nil, err
	}
	defer c.ready.close()
	return p, waitUntil(ctx, p, c.ready.check)
}

// RestartAPIServer kills kube-apiserver, as a crash would, and starts it
// again on the same port, with the same certificates, credentials and etcd,
// so that clients of Config keep working once it is back. It returns when
// the new server is ready; ctx bounds that wait. Watches and requests in
// flight fail. (A graceful stop is no option here: the server waits for its
// open watches, which a running informer keeps open.)
//
// A Stop called meanwhile waits for the restart, then stops the new server.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("the cluster is stopped")
	}
	if err := c.apiserver.kill(); err != nil {
		return err
	}
	p, err := c.startAPIServer(ctx)
	if p != nil {
		c.apiserver = p
	}
	return err
}

// Config returns a new copy of the configuration of a client authenticated
// as a cluster administrator.
func (c *Cluster) Config() *rest.Config {
	return rest.CopyConfig(c.config)
}

// ConfigFor returns a new copy of the configuration of a client
// authenticated as user, one of Options.Users.
func (c *Cluster) ConfigFor(user string) (*rest.Config, error) {
	token, ok := c.userTokens[user]
	if !ok {
		return nil, fmt.Errorf("no user %q in this cluster", user)
	}
	config := rest.CopyConfig(c.config)
	config.BearerToken = token
	return config, nil
}

// WriteKubeconfig writes a kubeconfig file for Config, for kubectl and other
// tools.
func (c *Cluster) WriteKubeconfig(path string) error {
	kubeconfig := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"e2e": {
			Server:                   c.config.Host,
			CertificateAuthorityData: c.config.CAData,
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{adminUser: {Token: c.config.BearerToken}},
		Contexts:       map[string]*clientcmdapi.Context{"e2e": {Cluster: "e2e", AuthInfo: adminUser}},
		CurrentContext: "e2e",
	}
	return clientcmd.WriteToFile(kubeconfig, path)
}

// stopGrace is how long a server may take to exit after SIGTERM before it is
// killed. The API server drains its requests and watches first.
const stopGrace = 30 * time.Second

// Stop shuts down the API servers of StartAPIServer, the cluster's own
// kube-apiserver, then etcd, and returns once all have exited; it reports
// a server that had to be killed or had already died.
// Later calls return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.shutdown(true) })
	return c.stopErr
}

// shutdown stops the servers that were started, the API servers first.
// reportExited makes a server that had exited on its own an error: the
// tests ran against a server that was not there. (A failed start has
// already reported that.)
func (c *Cluster) shutdown(reportExited bool) error {
	c.mu.Lock()
	c.stopped = true
	apiserver, etcd, extra := c.apiserver, c.etcd, c.extra
	c.mu.Unlock()
	var errs []error
	for _, s := range extra {
		errs = append(errs, s.shutdown(reportExited))
	}
	for _, p := range []*process{apiserver, etcd} {
		if p != nil {
			errs = append(errs, stopProcess(p, reportExited))
		}
	}
	return errors.Join(errs...)
}

// stopProcess stops p (see process.stop); reportExited makes a process
// that had exited on its own an error.
func stopProcess(p *process, reportExited bool) error {
	if done, err := p.exited(); done {
		if reportExited {
			return fmt.Errorf("%s exited before Stop (%v); see %s", p.name, err, p.logPath)
		}
		return nil
	}
	return p.stop(stopGrace)
}

// APIServerPID returns the process id of the running kube-apiserver, so
// that a benchmark can read its CPU time from /proc; a RestartAPIServer
// changes it.
func (c *Cluster) APIServerPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apiserver.cmd.Process.Pid
}

// EtcdURL returns the client URL of etcd (plain HTTP on 127.0.0.1), for a
// benchmark that compacts its history through etcd's JSON gateway.
func (c *Cluster) EtcdURL() string {
	return c.etcdURL
}
