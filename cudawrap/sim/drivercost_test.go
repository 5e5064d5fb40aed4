package sim

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// drivercostRow is one row of bench/drivercost's JSON output.
type drivercostRow struct {
	API        string  `json:"api"`
	How        string  `json:"how"`
	N          int     `json:"n"`
	MedianNs   float64 `json:"median_ns"`
	Errors     int     `json:"errors"`
	FirstError int     `json:"first_error"`
}

// The APIs the simulated driver does not implement: bench/drivercost
// reports their calls as failures (CUDA_ERROR_NOT_SUPPORTED), which is how
// it reports any call that fails.
var drivercostUnsimulated = map[string]bool{
	"cuMemHostRegister": true, "cuIpcGetMemHandle": true, "cuIpcGetEventHandle": true,
	"cuIpcOpenMemHandle": true, "cuIpcOpenEventHandle": true, "cuIpcCloseMemHandle": true,
	"cuStreamGetCaptureInfo": true,
}

// TestDriverCostBench builds bench/drivercost against the simulated driver
// and runs it: every family's row is there, each call the simulated driver
// implements succeeded, and each call of a microsecond or more timed alone
// took at least its API's cost from the table's cost column (the simulated
// driver spins for it), so the program measures what it says and the
// simulated driver charges the table's costs.
func TestDriverCostBench(t *testing.T) {
	lib := buildOrSkip(t)
	cc, err := Compiler()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "drivercost")
	src := filepath.Join("..", "..", "bench", "drivercost", "drivercost.c")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin, src, "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("build drivercost: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js := filepath.Join(dir, "out.json")
	cmd := exec.CommandContext(ctx, bin, "--iters", "20", "--batches", "10", "--out", js)
	cmd.Env = append(os.Environ(), "CUPROF_BENCH_LIBCUDA="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("drivercost: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Rows []drivercostRow `json:"rows"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("drivercost's JSON: %v\n%s", err, raw)
	}
	seen := map[string]bool{}
	for _, r := range res.Rows {
		seen[r.API] = true
		if drivercostUnsimulated[r.API] {
			if r.Errors == 0 {
				t.Errorf("%s (%s): succeeded on the simulated driver, which does not implement it: drop it from drivercostUnsimulated", r.API, r.How)
			}
			continue
		}
		if r.Errors != 0 || r.N == 0 {
			t.Errorf("%s (%s): %d samples, %d failed calls (first CUresult %d)", r.API, r.How, r.N, r.Errors, r.FirstError)
			continue
		}
		api, ok := trace.LookupAPI(r.API)
		if !ok {
			t.Errorf("row %q names no API of the table", r.API)
			continue
		}
		// A call that costs a microsecond or more spins on the clock until
		// its cost has passed, so timed alone it takes at least that (less
		// the clock's spread: drivercost subtracts its median read cost).
		// Cheaper calls spend a calibrated delay loop, not a lower bound.
		if c := float64(api.Info().SimCostNs); c >= 1000 && strings.HasPrefix(r.How, "single") && r.MedianNs < 0.9*c {
			t.Errorf("%s (%s): median %.0f ns, under the table's cost of %.0f ns that the simulated driver spends", r.API, r.How, r.MedianNs, c)
		}
	}
	for _, want := range []string{
		"cuStreamBeginCapture", "cuStreamEndCapture", "cuStreamIsCapturing", "cuGraphCreate",
		"cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphExecUpdate", "cuGraphExecDestroy", "cuGraphDestroy",
		"cuMemCreate", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess", "cuMemUnmap", "cuMemRelease",
		"cuMemAddressFree", "cuLibraryLoadData", "cuLibraryGetKernel", "cuLibraryUnload", "cuKernelGetFunction",
		"cuModuleLoadData", "cuModuleGetFunction", "cuModuleUnload", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
		"cuOccupancyMaxPotentialBlockSize", "cuOccupancyMaxActiveClusters", "cuFuncGetAttribute",
		"cuCtxGetStreamPriorityRange", "cuCtxGetDevice", "cuMemHostRegister", "cuIpcGetMemHandle",
	} {
		if !seen[want] {
			t.Errorf("no row for %s:\n%s", want, out)
		}
	}
}
