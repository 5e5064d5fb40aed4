// Package prebuilt holds the C parts of cuprof (the interposer shim, its
// calibrator and the simulated driver) compiled in advance for one
// platform, as a release build embeds them (release/build.sh builds with the
// tag cuprof_prebuilt after filling parts/). internal/cbuild takes a part
// from here when its sources are the ones it was built from and the
// machine's C library is new enough, and compiles it otherwise.
//
// Each part is a directory parts/KIND-KEY (KEY: cbuild.SourceKey of its
// sources and flags) holding its files, a NEEDS file ("glibc 2.34": the
// newest symbol version its files ask of the C library) and, where the part
// has them, a LINKS file of "NAME TARGET" lines (symbolic links embed cannot
// hold).
package prebuilt

import "io/fs"

// Parts returns the prebuilt parts, or nil in a build without them.
func Parts() fs.FS { return parts }
