package cbuild

import (
	"io"
	"io/fs"
)

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

// SetPrebuilt replaces the binary's prebuilt parts (nil: none) and returns
// a function that restores them.
func SetPrebuilt(parts fs.FS) (restore func()) {
	old := prebuiltParts
	prebuiltParts = parts
	return func() { prebuiltParts = old }
}

// GlibcProvided is the machine's glibc version as the prebuilt check reads it.
var GlibcProvided = glibcProvided
