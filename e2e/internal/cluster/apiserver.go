package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
)

// APIServerOptions configures a kube-apiserver started by
// [Cluster.StartAPIServer] over the cluster's etcd.
type APIServerOptions struct {
	// Name names the server among the cluster's: its certificates and log
	// are in <Options.Dir>/apiserver-<Name>. It must be unique in the
	// cluster and a valid file name.
	Name string
	// EtcdPrefix is the server's --etcd-prefix. Servers of distinct
	// prefixes over one etcd are distinct clusters, each with its own
	// objects, namespaces and resource versions (of one etcd revision
	// counter); a server of the same prefix as another is another server of
	// that cluster, as in a cluster of several API servers. Empty is the
	// prefix of the cluster's own server.
	EtcdPrefix string
	// Args are added to the command line, each as --name=value, replacing
	// the flag of the cluster's server of that name
	// (--authorization-mode=RBAC, --watch-cache=false).
	Args []string
}

// APIServer is a kube-apiserver started by [Cluster.StartAPIServer], with
// its own port and serving certificate, over the cluster's etcd, with the
// cluster's credentials (the same token file: Config and ConfigFor of the
// cluster's users). Cluster.Stop stops it. Its methods are safe for
// concurrent use.
type APIServer struct {
	cluster *Cluster
	config  *rest.Config
	binary  string
	args    []string
	env     []string
	log     string
	ready   *apiserverReady

	mu      sync.Mutex
	proc    *process // nil while killed by Kill
	paused  bool     // stopped by Pause (SIGSTOP)
	stopped bool     // by Cluster.Stop
}

// StartAPIServer starts another kube-apiserver over the cluster's etcd,
// with the command line of the cluster's own server but for its port, its
// certificate directory, opts.EtcdPrefix and opts.Args, and returns once it
// is ready; ctx bounds that wait. Several may start at once. On error
// nothing of it is left running.
func (c *Cluster) StartAPIServer(ctx context.Context, opts APIServerOptions) (*APIServer, error) {
	if opts.Name == "" || filepath.Base(opts.Name) != opts.Name {
		return nil, fmt.Errorf("API server name %q is not a file name", opts.Name)
	}
	dir := filepath.Join(c.dir, "apiserver-"+opts.Name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("API server %s: %w", opts.Name, err)
	}
	certDir := filepath.Join(dir, "certs")
	var extra []string
	if opts.EtcdPrefix != "" {
		extra = append(extra, "--etcd-prefix="+opts.EtcdPrefix)
	}
	extra = append(extra, opts.Args...)
	s := &APIServer{cluster: c, binary: c.apiserverBinary, env: c.apiserverEnv, log: filepath.Join(dir, "kube-apiserver.log")}
	// Held until the server is ready, so that a Cluster.Stop meanwhile
	// waits for the start, then stops the server.
	s.mu.Lock()
	defer s.mu.Unlock()
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil, errors.New("the cluster is stopped")
	}
	c.extra = append(c.extra, s)
	c.mu.Unlock()
	for attempt := 1; ; attempt++ {
		// A retry after a port clash starts from an empty directory.
		if err := os.RemoveAll(certDir); err != nil {
			return nil, err
		}
		if err := os.Mkdir(certDir, 0o700); err != nil {
			return nil, err
		}
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		host := "https://127.0.0.1:" + strconv.Itoa(ports[0])
		s.args = withArgs(c.apiserverArgs, append([]string{
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--cert-dir=" + certDir,
		}, extra...))
		s.ready = &apiserverReady{host: host, token: c.config.BearerToken, caFile: filepath.Join(certDir, "apiserver.crt")}
		p, err := s.startProcess(ctx)
		if err != nil {
			if p != nil {
				err = errors.Join(err, stopProcess(p, false))
			}
			if errors.Is(err, errPortInUse) && attempt < startAttempts {
				continue
			}
			return nil, fmt.Errorf("API server %s: %w", opts.Name, err)
		}
		s.proc = p
		s.config = rest.CopyConfig(c.config)
		s.config.Host = host
		s.config.CAData = s.ready.ca
		return s, nil
	}
}

// startProcess starts the server and waits until it is ready. The process
// is returned even when it is not ready, so that it can be stopped.
func (s *APIServer) startProcess(ctx context.Context) (*process, error) {
	p, err := startProcess("kube-apiserver", s.binary, s.args, s.env, s.log)
	if err != nil {
		return nil, err
	}
	defer s.ready.close()
	return p, waitUntil(ctx, p, s.ready.check)
}

// Config returns a new copy of the configuration of a client of this
// server authenticated as a cluster administrator.
func (s *APIServer) Config() *rest.Config {
	return rest.CopyConfig(s.config)
}

// ConfigFor returns a new copy of the configuration of a client of this
// server authenticated as user, one of the cluster's Options.Users.
func (s *APIServer) ConfigFor(user string) (*rest.Config, error) {
	token, ok := s.cluster.userTokens[user]
	if !ok {
		return nil, fmt.Errorf("no user %q in this cluster", user)
	}
	config := rest.CopyConfig(s.config)
	config.BearerToken = token
	return config, nil
}

// Pause stops the server with SIGSTOP: it neither answers nor closes its
// connections, and the kernel still accepts new ones, as a server that
// hangs. Resume continues it.
func (s *APIServer) Pause() error {
	return s.signal(syscall.SIGSTOP, true)
}

// Resume continues a server stopped by Pause with SIGCONT.
func (s *APIServer) Resume() error {
	return s.signal(syscall.SIGCONT, false)
}

func (s *APIServer) signal(sig syscall.Signal, pause bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.proc == nil || s.paused == pause {
		return fmt.Errorf("%v: the server is not running, or already paused or resumed", sig)
	}
	if err := s.proc.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%v: %w", sig, err)
	}
	s.paused = pause
	return nil
}

// Kill kills the server with SIGKILL, as a crash would, and returns once it
// is gone: requests and watches in flight fail, new connections are
// refused. Start starts it again.
func (s *APIServer) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.proc == nil {
		return errors.New("the server is not running")
	}
	err := s.proc.kill()
	s.proc, s.paused = nil, false
	return err
}

// Start starts the server again after Kill, on the same port, with the
// same certificates and credentials, so that clients of Config keep
// working, and returns once it is ready; ctx bounds that wait.
func (s *APIServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.proc != nil {
		return errors.New("the server is running, or the cluster is stopped")
	}
	p, err := s.startProcess(ctx)
	s.proc = p
	return err
}

// shutdown stops the server, continuing it first if paused (a stopped
// process does not act on SIGTERM); see Cluster.shutdown for reportExited.
func (s *APIServer) shutdown(reportExited bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	p := s.proc
	if p == nil {
		return nil
	}
	if s.paused {
		if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return errors.Join(fmt.Errorf("%s: SIGCONT: %w", p.name, err), p.kill())
		}
		s.paused = false
	}
	return stopProcess(p, reportExited)
}
