package fleettrial

import (
	"context"

	"github.com/kubetyped/informer/internal/benchkit"
)

// childEnv is the environment variable that makes a program a trial's
// process (RunIfChild): it holds the Spec as JSON.
const childEnv = "KUBETYPED_FLEETTRIAL"

// RunIfChild makes this process a trial if RunChild started it (and
// returns at once otherwise): it runs the trial, writes its Result as JSON
// on stdout and exits. A program that calls RunChild calls RunIfChild first
// thing in main (a test binary in TestMain).
func RunIfChild() { benchkit.ServeIfChild("fleet trial", childEnv, run) }

// RunChild runs spec in a process of its own (this program run again, with
// env added to its environment) and returns its Result.
func RunChild(ctx context.Context, spec Spec, env ...string) (Result, error) {
	return benchkit.RunChild[Spec, Result](ctx, spec.Impl+" fleet trial", childEnv, spec, env...)
}
