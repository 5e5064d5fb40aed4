package sim

import (
	"context"
	"errors"

	"github.com/cuprof/cuprof/internal/cbuild"
)

// Driver returns a directory holding the simulated driver as libcuda.so.1
// and libcuda.so (for LD_LIBRARY_PATH and -L), compiled on first use into
// cuprof's build cache (internal/cbuild).
func Driver(ctx context.Context) (string, error) {
	return cbuild.Build(ctx, "sim", Sources, CFlags, func(ctx context.Context, _ []string, tmp string) error {
		if _, err := Build(ctx, tmp); err != nil {
			if errors.Is(err, ErrNoCompiler) {
				return cbuild.ErrNoCompiler
			}
			return err
		}
		return nil
	})
}
