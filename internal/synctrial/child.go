package synctrial

import (
	"context"

	"github.com/kubetyped/informer/internal/benchkit"
)

// childEnv is the environment variable that makes a program a trial's
// process (RunIfChild): it holds the Spec as JSON.
const childEnv = "KUBETYPED_SYNCTRIAL"

// RunIfChild makes this process a trial if RunChild started it (and
// returns at once otherwise): it joins the spec's memory cgroup, if any,
// runs the trial, writes its Result as JSON on stdout and exits. A program
// that calls RunChild calls RunIfChild first thing in main, after Register.
func RunIfChild() {
	benchkit.ServeIfChild("sync trial", childEnv, func(spec Spec) (Result, error) {
		if spec.Cgroup != "" {
			if err := benchkit.JoinMemoryCgroup(spec.Cgroup); err != nil {
				return Result{}, err
			}
		}
		return run(spec)
	})
}

// RunChild runs spec in a process of its own (this program run again, with
// env added to its environment, as GOMEMLIMIT=…) and returns its Result. An
// error wraps the process's exit status: a trial killed for lack of memory
// exits by SIGKILL.
func RunChild(ctx context.Context, spec Spec, env ...string) (Result, error) {
	return benchkit.RunChild[Spec, Result](ctx, spec.Impl+" trial", childEnv, spec, env...)
}
