package benchkit

import (
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCommitOf(t *testing.T) {
	stamped := func(settings ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{}
		for i := 0; i < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info
	}
	describe := func() (string, error) { return "0123456789ab-dirty", nil }
	noGit := func() (string, error) { return "", errors.New("git: not found") }
	got := []string{
		// go build stamps the revision; it wins over git.
		commitOf(stamped("vcs.revision", "1183cc1e0b6f8d4d07aa0f7a2a3c5e1b7f0c9d11", "vcs.modified", "false"), describe),
		commitOf(stamped("vcs.revision", "1183cc1e0b6f8d4d07aa0f7a2a3c5e1b7f0c9d11", "vcs.modified", "true"), describe),
		// go run stamps none: git describes the checkout.
		commitOf(stamped("-compiler", "gc"), describe),
		commitOf(nil, describe),
		commitOf(stamped(), noGit),
	}
	want := []string{"1183cc1e0b6f", "1183cc1e0b6f-dirty", "0123456789ab-dirty", "0123456789ab-dirty", "unknown"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestModuleVersions(t *testing.T) {
	info := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "k8s.io/client-go", Version: "v0.37.2"},
		{Path: "sigs.k8s.io/controller-runtime", Version: "v0.25.2", Replace: &debug.Module{Path: "../controller-runtime"}},
	}}
	got := moduleVersions(info, []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "k8s.io/api"})
	want := []string{"k8s.io/client-go v0.37.2", "sigs.k8s.io/controller-runtime replaced by ../controller-runtime", "k8s.io/api (not in this build)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestParseLoadAverage(t *testing.T) {
	got := []string{parseLoadAverage("9.12 3.61 1.35 3/412 5123\n"), parseLoadAverage(""), parseLoadAverage("1.0 2.0")}
	if diff := cmp.Diff([]string{"9.12 3.61 1.35", "unknown", "unknown"}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestRunDescribe(t *testing.T) {
	r := testRun
	r.Modules = append(r.Modules, "sigs.k8s.io/controller-runtime v0.25.2")
	unfinished := testRun
	unfinished.End, unfinished.LoadEnd = time.Time{}, ""
	overnight := testRun
	overnight.End = time.Date(2026, 11, 28, 0, 1, 2, 0, time.UTC)
	got := []string{r.describe(), unfinished.describe(), overnight.period()}
	want := []string{
		"run: `bench -quick` at commit 1183cc1abcde-dirty, 2026-11-27 09:10:03–09:12:45 UTC; go1.26.8 linux/amd64, GOMAXPROCS 2, k8s.io/client-go v0.37.2, sigs.k8s.io/controller-runtime v0.25.2; load average 1.20 0.90 0.80 at the start, 1.50 1.10 0.90 at the end",
		"run: `bench -quick` at commit 1183cc1abcde-dirty, 2026-11-27 09:10:03 UTC; go1.26.8 linux/amd64, GOMAXPROCS 2, k8s.io/client-go v0.37.2; load average 1.20 0.90 0.80 at the start",
		"2026-11-27 09:10:03 – 2026-11-28 00:01:02 UTC",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// TestStartRun checks what StartRun and Finish fill in from the process;
// the values themselves depend on the machine.
func TestStartRun(t *testing.T) {
	r := StartRun("github.com/google/go-cmp")
	r.Finish()
	if !strings.HasPrefix(r.Go, runtime.Version()+" ") || r.Commit == "" || r.LoadStart == "" || r.LoadEnd == "" || r.End.Before(r.Start) {
		t.Errorf("StartRun and Finish: %+v", r)
	}
	// A test binary's build information may list no dependencies.
	if len(r.Modules) != 1 || !strings.HasPrefix(r.Modules[0], "github.com/google/go-cmp ") {
		t.Errorf("modules %q, want go-cmp's entry", r.Modules)
	}
}
