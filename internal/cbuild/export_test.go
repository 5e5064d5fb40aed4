package cbuild

import "io"

// What the tests of package cbuild_test (which build the real C parts of
// cudawrap/shim and cudawrap/sim, packages that import this one) reach of
// the cache's inside.

var (
	Compiler = compiler
	HashOf   = hashOf
)

// SetWarnOut sends the cache's warnings to w.
func SetWarnOut(w io.Writer) { warnOut = w }

// ResetWarned makes the next untrusted cache warn again.
func ResetWarned() {
	private.Lock()
	private.warned = false
	private.Unlock()
}
