package informer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// diffCoverage counts what the scenarios of a run exercised, so that a run
// shows that it tested what it claims to (TestDiffInformer logs it; see it
// with -v). A nil *diffCoverage counts nothing.
type diffCoverage struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *diffCoverage) add(name string, n int) {
	if c == nil || n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[name] += n
}

// addNotes counts a handler's calls by kind.
func (c *diffCoverage) addNotes(notes []diffNote) {
	for _, n := range notes {
		switch {
		case n.Callback == "add" && n.IsInInitialList:
			c.add("call: add, in initial list", 1)
		case n.Callback == "add":
			c.add("call: add", 1)
		case n.Callback == "update" && n.SameObject:
			c.add("call: update, periodic resync", 1)
		case n.Callback == "update" && n.RV == n.OldRV:
			c.add("call: update, same resource version (relist or repeat)", 1)
		case n.Callback == "update" && n.UID != n.OldUID:
			c.add("call: update, re-created (new UID)", 1)
		case n.Callback == "update":
			c.add("call: update", 1)
		case n.Callback == "delete" && n.FinalStateUnknown:
			c.add("call: delete, final state unknown (relist)", 1)
		case n.Callback == "delete":
			c.add("call: delete", 1)
		}
	}
}

// report prints the counts, one per line, sorted by name.
func (c *diffCoverage) report() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(c.counts)) {
		fmt.Fprintf(&b, "%9d  %s\n", c.counts[name], name)
	}
	return b.String()
}

// cover counts a step that ran.
func (r *diffRunner) cover(st diffStep, relisted bool) {
	name := "step: " + strings.Fields(st.String())[0]
	switch st.Kind {
	case diffStepFail:
		name = fmt.Sprintf("step: FailWatch %d", st.Code)
	case diffStepClose:
		name = "step: CloseWatch"
		if st.WatchErr != 0 {
			name += fmt.Sprintf(", next watch request fails %d", st.WatchErr)
		}
		if relisted {
			name += " (relist)"
		}
	}
	r.cov.add(name, 1)
}
