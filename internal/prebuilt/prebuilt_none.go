//go:build !cuprof_prebuilt

package prebuilt

import "io/fs"

// A build from source (go install, go test) compiles its C parts on first use.
var parts fs.FS
