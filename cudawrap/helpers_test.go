package cudawrap

import (
	"runtime"
	"testing"
)

// lockThread keeps the test on one OS thread, for checks of the current context.
func lockThread(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
}
