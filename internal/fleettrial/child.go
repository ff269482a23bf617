package fleettrial

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// childEnv is the environment variable that makes a program a trial's
// process (RunIfChild): it holds the Spec as JSON.
const childEnv = "KUBETYPED_FLEETTRIAL"

// RunIfChild makes this process a trial if RunChild started it (and
// returns at once otherwise): it runs the trial, writes its Result as JSON
// on stdout and exits. A program that calls RunChild calls RunIfChild first
// thing in main (a test binary in TestMain).
func RunIfChild() {
	raw, ok := os.LookupEnv(childEnv)
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
		fmt.Fprintln(os.Stderr, "fleet trial:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// RunChild runs spec in a process of its own (this program run again, with
// env added to its environment) and returns its Result.
func RunChild(ctx context.Context, spec Spec, env ...string) (Result, error) {
	self, err := os.Executable()
	if err != nil {
		return Result{}, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(append(os.Environ(), env...), childEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("%s fleet trial: %w", spec.Impl, err)
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return Result{}, fmt.Errorf("%s fleet trial: reading %q: %w", spec.Impl, out.String(), err)
	}
	return res, nil
}
