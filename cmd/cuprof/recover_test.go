package main

import (
	"strings"
	"testing"
)

// TestRecoverCmdErrors: recover names what is missing (the end-to-end case,
// a killed recorder's spill turned into a trace, is
// internal/record.TestRecorderKilledStopsProgramAndRecovers).
func TestRecoverCmdErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"recover", dir}, "recover needs -o FILE"},
		{[]string{"recover", dir, "-o", dir + "/out.cuprof"}, "no spill files or rings in"},
		{[]string{"record", "--on-recorder-exit=later", "--", "true"}, "unknown --on-recorder-exit"},
	} {
		_, _, err := runFlameCLI(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
}
