package cbuild

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cuprof/cuprof/internal/prebuilt"
)

// SourceKey names a part built from sources with flags by any compiler:
// a prebuilt part is found under KIND-KEY (internal/prebuilt).
func SourceKey(kind string, flags []string, sources fs.FS) (string, error) {
	return hashOf(kind, nil, flags, sources)
}

// prebuiltOff reports whether CUPROF_NO_PREBUILT=1 asks Build to compile
// even where a prebuilt part would serve (the embedded-source path).
func prebuiltOff() bool { return os.Getenv("CUPROF_NO_PREBUILT") == "1" }

var glibcOnce = sync.OnceValues(glibcProvided)

// fromPrebuilt returns the cache directory of kind taken from this
// binary's prebuilt parts, or ok false when there is none for these
// sources and flags, or when the machine's C library is older than the
// part needs (then the caller compiles it, as a build from source does).
func fromPrebuilt(parts fs.FS, kind string, flags []string, sources fs.FS) (dir string, ok bool, err error) {
	if parts == nil || prebuiltOff() {
		return "", false, nil
	}
	key, err := SourceKey(kind, flags, sources)
	if err != nil {
		return "", false, fmt.Errorf("hash %s sources: %w", kind, err)
	}
	sub := kind + "-" + key
	if st, err := fs.Stat(parts, sub); err != nil || !st.IsDir() {
		return "", false, nil
	}
	if needs, err := fs.ReadFile(parts, path.Join(sub, "NEEDS")); err == nil {
		if want, ok := ParseGlibcVersion(strings.TrimSpace(strings.TrimPrefix(string(needs), "glibc"))); ok {
			have, found := glibcOnce()
			if !found || have.Less(want) {
				return "", false, nil
			}
		}
	}
	files, err := fs.Sub(parts, sub)
	if err != nil {
		return "", false, err
	}
	dir, err = cached(kind+"-prebuilt", nil, flags, sources, func(tmp string) error { return installPart(files, tmp) })
	return dir, err == nil, err
}

// installPart writes a prebuilt part's files into dir: programs and
// libraries 0700, NEEDS and LINKS 0600, and the links LINKS names.
func installPart(files fs.FS, dir string) error {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(files, e.Name())
		if err != nil {
			return err
		}
		mode := os.FileMode(0o700)
		if e.Name() == "NEEDS" || e.Name() == "LINKS" {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, mode); err != nil {
			return fmt.Errorf("install prebuilt %s: %w", e.Name(), err)
		}
	}
	links, err := fs.ReadFile(files, "LINKS")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(links), "\n") {
		name, target, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.ContainsRune(name, '/') || strings.ContainsRune(target, '/') {
			continue // a name within the part, pointing within it
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("install prebuilt link %s: %w", name, err)
		}
	}
	return nil
}

// prebuiltParts is the binary's prebuilt parts (a variable: tests set it).
var prebuiltParts = prebuilt.Parts()
