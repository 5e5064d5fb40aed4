package shim

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/cuprof/cuprof/internal/cbuild"
)

// LibraryName is the file name of the built shim.
const LibraryName = "libcuprof.so"

// CalibratorName is the file name of the built clock and overhead
// calibrator.
const CalibratorName = "cuprof-calib"

// BuildFlags are the flags of the shim's and calibrator's build, as its
// cache entry is keyed (internal/cbuild).
func BuildFlags() []string {
	return append(append([]string{}, CFlags...), LDLibs...)
}

// Library returns the path of the built interposer shim (libcuprof.so),
// compiled on first use into cuprof's build cache (internal/cbuild) with the
// calibrator beside it.
func Library(ctx context.Context) (string, error) {
	dir, err := cbuild.Build(ctx, "shim", Sources, BuildFlags(), func(ctx context.Context, cc []string, tmp string) error {
		src := filepath.Join(tmp, "src")
		if err := cbuild.WriteFS(Sources, src); err != nil {
			return fmt.Errorf("write shim sources: %w", err)
		}
		argv := append([]string{}, cc...)
		// The build directory's name kept out of the debug information:
		// the same sources give the same library (release/build.sh).
		argv = append(argv, "-I.", "-ffile-prefix-map="+src+"=.")
		argv = append(argv, CFlags...)
		argv = append(argv, "-o", filepath.Join(tmp, LibraryName))
		argv = append(argv, CFiles...)
		argv = append(argv, LDLibs...)
		if err := cbuild.Run(ctx, src, argv); err != nil {
			return fmt.Errorf("build the cuprof shim: %w", err)
		}
		calib := append([]string{}, cc...)
		calib = append(calib, "-I.", "-ffile-prefix-map="+src+"=.", "-O2", "-o", filepath.Join(tmp, CalibratorName), "csrc/calib.c", "-ldl")
		if err := cbuild.Run(ctx, src, calib); err != nil {
			return fmt.Errorf("build the cuprof calibrator: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, LibraryName), nil
}

// Calibrator returns the path of the clock and overhead calibrator, a small
// program run under the shim by the recorder (built with the shim).
func Calibrator(ctx context.Context) (string, error) {
	p, err := Library(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), CalibratorName), nil
}
