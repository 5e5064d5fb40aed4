package record

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOtherPIDNamespaceNotRecorded: a process the recorded program starts
// in another PID namespace (as a launcher the recorder wrapped starts a
// rank on another host, where its pid names another process) records
// nothing; the program itself still does. The other process still runs
// and its output is unchanged.
func TestOtherPIDNamespaceNotRecorded(t *testing.T) {
	bins, _ := programs(t)
	if err := exec.Command("unshare", "--pid", "--fork", "true").Run(); err != nil {
		t.Skipf("cannot make a PID namespace here (root and unshare(1) needed): %v", err)
	}
	prog := filepath.Join(bins, "paths")
	// The program in this namespace, then again in a new one.
	res, out := record(t, []string{"sh", "-c", prog + " && unshare --pid --fork " + prog})
	if len(res.Trace.Processes) != 1 {
		t.Errorf("%d processes recorded, want the one in the recorder's namespace: %+v", len(res.Trace.Processes), res.Trace.Processes)
	}
	if res.Trace.Processes[0].PID == 1 {
		t.Errorf("the process in the other namespace (pid 1 there) was recorded")
	}
	var made int
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 5 && line[:5] == "made " {
			made++
		}
	}
	if made == 0 || made%2 != 0 {
		t.Errorf("both runs print what they made: %d lines\n%s", made, out)
	}
}
