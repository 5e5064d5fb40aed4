// Package cbuild is the build cache of the C parts embedded in the cuprof
// binary: a package holding C sources (cudawrap/shim: the interposer shim
// and the clock calibrator; cudawrap/sim: the simulated driver) hands Build
// its sources, flags and build step, and Build runs the step with the system
// C compiler on first use, into a private cache keyed by the content hash
// of the sources, the compiler and the flags, so that `go install` alone
// gives a working tool. cbuild knows no C part itself.
//
// A release build carries the parts compiled in advance (internal/prebuilt):
// Build installs those into the cache instead, compiling nothing, where
// their sources are these and the machine's glibc is as new as they need;
// elsewhere (another libc, a build from source) it compiles as above.
//
// The cache is os.UserCacheDir()/cuprof/<hash>/ (or $CUPROF_CACHE_DIR/<hash>),
// directories 0700. An entry is used only when it, its files and the
// directories above it are the user's and writable by nobody else
// (trust.go); otherwise the C parts are built into a private directory for
// the run, with one warning. Each artifact is built in a temporary directory beside
// its final place and renamed into it, so concurrent first uses are safe: the
// loser of the race removes its copy and uses the winner's.
package cbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// OnBuild, when set, is called before a C part is compiled (not when it is
// taken from the cache), with its kind ("shim", "calibrator", "sim"): the
// command line tells a terminal why the first run takes seconds.
var OnBuild func(kind string)

// ErrNoCompiler is returned when no C compiler can be found.
var ErrNoCompiler = errors.New("no C compiler found: install gcc or set CC")

// compiler returns the compiler's argv prefix: $CC (split on spaces), else
// gcc, else cc.
func compiler() ([]string, error) {
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		p, err := exec.LookPath(cc[0])
		if err != nil {
			return nil, fmt.Errorf("CC=%q: %w", os.Getenv("CC"), ErrNoCompiler)
		}
		return append([]string{p}, cc[1:]...), nil
	}
	for _, name := range []string{"gcc", "cc"} {
		if p, err := exec.LookPath(name); err == nil {
			return []string{p}, nil
		}
	}
	return nil, ErrNoCompiler
}

// cacheRoot returns the directory holding every cached build (absolute:
// the paths built under it go into programs' environments).
func cacheRoot() (string, error) {
	if d := os.Getenv("CUPROF_CACHE_DIR"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache directory for cuprof's C parts: %w (set CUPROF_CACHE_DIR)", err)
	}
	return filepath.Join(d, "cuprof"), nil
}

// hashOf keys an artifact: its kind, the compiler (path, size, mtime), the
// flags and every source file's name and content.
func hashOf(kind string, cc []string, flags []string, files fs.FS) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "kind=%s\n", kind)
	for _, c := range cc {
		fmt.Fprintf(h, "cc=%s\n", c)
	}
	if len(cc) > 0 {
		if st, err := os.Stat(cc[0]); err == nil {
			fmt.Fprintf(h, "ccstat=%d %d\n", st.Size(), st.ModTime().UnixNano())
		}
	}
	for _, f := range flags {
		fmt.Fprintf(h, "flag=%s\n", f)
	}
	var names []string
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(files, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "file=%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// cached returns dir/<hash>, building it with build(tmp) when absent.
func cached(kind string, cc, flags []string, files fs.FS, build func(tmp string) error) (string, error) {
	key, err := hashOf(kind, cc, flags, files)
	if err != nil {
		return "", fmt.Errorf("hash %s sources: %w", kind, err)
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("create cache %s: %w", root, err)
	}
	// From here on the root is the path that was checked, links resolved:
	// what is handed to programs (LD_PRELOAD) cannot be repointed later.
	uid := uint32(os.Getuid())
	if real, err := trustedRoot(root, uid); err != nil {
		if root, err = privateRoot(root, err); err != nil {
			return "", err
		}
	} else {
		root = real
	}
	final := filepath.Join(root, kind+"-"+key)
	if _, err := os.Lstat(final); err == nil {
		if err := trustedEntry(final, uid); err == nil {
			return final, nil
		} else if root, err = privateRoot(root, err); err != nil {
			return "", err
		}
		final = filepath.Join(root, kind+"-"+key)
		if err := trustedEntry(final, uid); err == nil {
			return final, nil
		}
	}
	if f := OnBuild; f != nil {
		f(kind)
	}
	tmp, err := os.MkdirTemp(root, ".build-"+kind+"-")
	if err != nil {
		return "", fmt.Errorf("create build directory: %w", err)
	}
	if err := build(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		if trustedEntry(final, uid) == nil {
			return final, nil // another process won the race
		}
		return "", fmt.Errorf("install %s build: %w", kind, err)
	}
	return final, nil
}

// WriteFS copies every file of files into dir (0600), keeping paths: a
// build step's sources.
func WriteFS(files fs.FS, dir string) error {
	return fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		b, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
}

// Run runs argv (a compiler command line) in dir; its error carries the
// command's output.
func Run(ctx context.Context, dir string, argv []string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "..."
		}
		return fmt.Errorf("%s: %w: %s", filepath.Base(argv[0]), err, msg)
	}
	return nil
}

// Build returns the cache directory of kind built from sources with flags,
// running build(ctx, cc, dir) when it is not cached: cc is the compiler's
// argv prefix, dir an empty private directory to build into, renamed into
// the cache once build returns nil. The key is kind, the compiler, flags and
// every file of sources, so flags must name every flag build uses.
func Build(ctx context.Context, kind string, sources fs.FS, flags []string,
	build func(ctx context.Context, cc []string, dir string) error) (string, error) {
	if dir, ok, err := fromPrebuilt(prebuiltParts, kind, flags, sources); ok || err != nil {
		return dir, err
	}
	cc, err := compiler()
	if err != nil {
		return "", err
	}
	return cached(kind, cc, flags, sources, func(tmp string) error { return build(ctx, cc, tmp) })
}

// Files returns a directory holding a copy of files (0600), cached under
// kind like a build and trusted the same way: a directory nobody else can
// create or change, which may outlive this process (cuprof record hands
// its Python bootstrap to programs on PYTHONPATH from here).
func Files(kind string, files fs.FS) (string, error) {
	return cached(kind, nil, nil, files, func(tmp string) error { return WriteFS(files, tmp) })
}
