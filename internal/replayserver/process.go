package replayserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"time"
)

// childEnv is the environment variable that makes a program a replay
// server's process (RunIfChild): it holds the server's Options as JSON.
const childEnv = "KUBETYPED_REPLAYSERVER"

// ready is the line a server process writes on its stdout once serving.
type ready struct {
	Clusters []Cluster `json:"clusters"`
	Error    string    `json:"error,omitempty"`
}

// RunIfChild makes this process a replay server if StartProcess started it
// (and returns at once otherwise): it serves until its stdin closes (the
// parent stopped it or exited) and exits. A program that calls
// StartProcess calls RunIfChild first thing in main (a test binary in
// TestMain), before it parses flags or does anything else.
func RunIfChild() {
	spec, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	os.Exit(runChild(spec, os.Stdin, os.Stdout))
}

// runChild serves the options in spec until in ends, and returns the exit
// code.
func runChild(spec string, in io.Reader, out io.Writer) int {
	var opts Options
	if err := json.Unmarshal([]byte(spec), &opts); err != nil {
		_ = json.NewEncoder(out).Encode(ready{Error: fmt.Sprintf("replay server options %q: %v", spec, err)})
		return 2
	}
	s, err := Start(opts)
	if err != nil {
		_ = json.NewEncoder(out).Encode(ready{Error: err.Error()})
		return 1
	}
	// Building the pods left garbage behind: return it to the system, so
	// that the server's resident set is what it keeps.
	debug.FreeOSMemory()
	if err := json.NewEncoder(out).Encode(ready{Clusters: s.Clusters()}); err != nil {
		s.Close()
		return 1
	}
	_, _ = io.Copy(io.Discard, in)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "replay server:", err)
		return 1
	}
	return 0
}

// Process is a replay server running in a process of its own.
type Process struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	clusters []Cluster
	done     chan struct{}
	err      error // of cmd.Wait, once done is closed
}

// StartProcess starts a replay server serving opts in a process of its own,
// this program run again (which calls RunIfChild), and returns once it
// serves, or when ctx ends. Building a million pods' templates takes
// seconds. The process ends when Close is called or this process exits.
func StartProcess(ctx context.Context, opts Options) (*Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the replay server process: %w", err)
	}
	p := &Process{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	line := make(chan []byte, 1)
	go func() {
		r := bufio.NewReader(stdout)
		first, _ := r.ReadBytes('\n')
		line <- first
		_, _ = io.Copy(io.Discard, r)
		p.err = cmd.Wait()
		close(p.done)
	}()
	var first []byte
	select {
	case first = <-line:
	case <-ctx.Done():
		p.Close()
		return nil, ctx.Err()
	}
	var r ready
	if err := json.Unmarshal(first, &r); err != nil || r.Error != "" {
		p.Close()
		if err == nil {
			err = errors.New(r.Error)
		}
		return nil, fmt.Errorf("replay server process: %w (it wrote %q)", err, first)
	}
	p.clusters = r.Clusters
	return p, nil
}

// Clusters returns the clusters the process serves, in order.
func (p *Process) Clusters() []Cluster { return p.clusters }

// PID returns the process's id, for its CPU and memory figures
// (benchkit.ProcessCPUTime, benchkit.ReadProcessMemory).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Close stops the process (closing its stdin, then killing it if it has not
// exited 10 s later) and waits for it.
func (p *Process) Close() error {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return fmt.Errorf("replay server process: %w", p.err)
	}
	return p.err
}
