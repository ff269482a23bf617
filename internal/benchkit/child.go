package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"time"
)

// A trial run in a process of its own (synctrial's, fleettrial's): the
// parent runs its own executable again with the trial's spec as JSON in an
// environment variable, and the child, which checks for that variable
// first thing in main, runs the trial and writes its result as JSON on
// stdout. So each side's CPU and memory are measured alone.

// RunChild runs the trial spec in a process of its own (this program run
// again, with env added to its environment and spec as JSON in the
// variable envName) and returns the result it wrote. An error names what
// and wraps the process's exit status: a trial killed for lack of memory
// exits by SIGKILL.
func RunChild[Spec, Result any](ctx context.Context, what, envName string, spec Spec, env ...string) (Result, error) {
	var res Result
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(append(os.Environ(), env...), envName+"="+string(raw))
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fmt.Errorf("%s: reading %q: %w", what, out.String(), err)
	}
	return res, nil
}

// ServeIfChild makes this process the trial RunChild started, if the
// variable envName is set (it returns at once otherwise): it runs the spec
// through run, writes the result as JSON on stdout and exits, with status
// 1 and the error on stderr, prefixed by what, if run fails.
func ServeIfChild[Spec, Result any](what, envName string, run func(Spec) (Result, error)) {
	raw, ok := os.LookupEnv(envName)
	if !ok {
		return
	}
	var spec Spec
	err := json.Unmarshal([]byte(raw), &spec)
	var res Result
	if err == nil {
		res, err = run(spec)
	}
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(res)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// WaitUntil polls cond every millisecond until it holds, or fails after
// timeout.
func WaitUntil(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %v", timeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// WriteHeapProfile writes the heap profile (in-use and allocated) to path.
func WriteHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
