package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/internal/seed"
	"github.com/cuprof/cuprof/trace"
)

// childArgs, when set, makes the test binary run the example with these
// arguments (space-separated) instead of the tests: TestRecordedOnSimulatedDriver
// records the test binary as the example program.
const childArgs = "CUPROF_MULTIGPU_TEST_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childArgs); ok {
		if err := run(strings.Fields(args), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "multigpu:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRecordedOnSimulatedDriver records the example on the simulated driver
// (two devices), as `cuprof record --sim` does, and checks that every
// device-bound call in the trace file (devices attributed as cuprof dump
// does) carries the device the program says it made it on, and that the
// report has a table per device.
func TestRecordedOnSimulatedDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc: the shim and the simulated driver cannot be built")
	}
	const rounds, buffers = 3, 2
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "multigpu.json")
	t.Setenv(childArgs, fmt.Sprintf("-devices 0,1 -rounds %d -buffers %d -out %s", rounds, buffers, jsonPath))
	t.Setenv("CUPROF_SIM_COST_SCALE", "0")
	var stdout, stderr bytes.Buffer
	tracePath := filepath.Join(dir, "multigpu.cuprof")
	res, err := record.Run(context.Background(), []string{os.Args[0]}, record.WithSim(true),
		record.WithOutput(tracePath), record.WithStdio(nil, &stdout, &stderr))
	if err != nil {
		t.Fatalf("record: %v\nstderr:\n%s", err, stderr.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("the example exited with %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, stdout.String(), stderr.String())
	}
	tr, err := trace.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	// devices as the analysis resolves them, as cuprof dump, report and lint see them
	devices := make([]int32, len(tr.Events))
	analysis.Of(tr, analysis.OnEvent(func(e *analysis.Event) { devices[e.Index] = e.Device }))
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep seed.MultiGPUReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("the example's JSON: %v\n%s", err, raw)
	}
	if rep.Program != seed.MultiGPUProgram || !slices.Equal(rep.Devices, []int{0, 1}) || rep.Rounds != rounds {
		t.Fatalf("report header %+v", rep)
	}
	checkAttribution(t, tr, devices, &rep, rounds, buffers)

	r := report.Build(tr, report.Options{})
	var text bytes.Buffer
	if err := report.WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nDevice 0 (", "\nDevice 1 ("} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks the per-device table %q:\n%s", strings.TrimSpace(want), text.String())
		}
	}
	for _, dt := range r.Devices {
		if dt.Device < 0 {
			continue
		}
		calls := map[string]int{}
		for _, a := range dt.APIs {
			calls[a.API] = a.Count
		}
		if calls["cuMemAllocAsync"] != rounds*buffers || calls["cuStreamCreate"] != rounds ||
			calls["cuCtxSynchronize"] != rounds || calls["cuCtxSetCurrent"] != rounds {
			t.Errorf("report table of device %d: %v", dt.Device, calls)
		}
	}
}

// checkAttribution compares the device of every allocation, free, stream
// create/destroy/synchronize, context synchronize and set-current call of the
// program's process with what the program reports.
func checkAttribution(t *testing.T, tr *trace.Trace, devices []int32, rep *seed.MultiGPUReport, rounds, buffers int) {
	t.Helper()
	ptrDev, streamDev := map[uint64]int32{}, map[uint64]int32{}
	for key, k := range rep.PerDevice {
		d, err := strconv.Atoi(key)
		if err != nil {
			t.Fatalf("per_device key %q", key)
		}
		if k.SetCurrent != rounds || k.Syncs != rounds || k.StreamSyncs != rounds ||
			len(k.Streams) != rounds || len(k.Allocations) != rounds*buffers {
			t.Errorf("device %d: program reports %+v", d, k)
		}
		for _, a := range k.Allocations {
			p := parseHex(t, a.Ptr)
			if prev, ok := ptrDev[p]; ok && prev != int32(d) {
				t.Errorf("pointer %s reported on devices %d and %d", a.Ptr, prev, d)
			}
			ptrDev[p] = int32(d)
		}
		for _, s := range k.Streams {
			h := parseHex(t, s)
			if _, ok := streamDev[h]; ok {
				// The simulated driver does not reuse a handle this soon.
				t.Errorf("stream %s reported twice", s)
			}
			streamDev[h] = int32(d)
		}
	}
	// The program alternates 0, 1, 0, 1...: so must its set-currents and
	// context synchronizes.
	var wantOrder []int32
	for r := 0; r < rounds; r++ {
		for _, d := range rep.Devices {
			wantOrder = append(wantOrder, int32(d))
		}
	}
	var setOrder, syncOrder []int32
	counts := map[string]int{}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.KindCall || e.PID != uint32(rep.PID) {
			continue
		}
		name := e.API.String()
		if !e.Result.OK() {
			t.Errorf("%s failed: %v", name, e.Result)
			continue
		}
		var want int32
		var ok bool
		switch name {
		case "cuMemAllocAsync", "cuMemFreeAsync":
			want, ok = ptrDev[e.Handle]
			if !ok {
				t.Errorf("%s of %#x at %d: a pointer the program does not report", name, e.Handle, e.Start)
				continue
			}
			if sd, known := streamDev[e.Stream]; !known || sd != want {
				t.Errorf("%s of %#x on stream %#x: not a stream of device %d", name, e.Handle, e.Stream, want)
			}
		case "cuStreamCreate", "cuStreamDestroy", "cuStreamSynchronize":
			want, ok = streamDev[e.Handle]
			if !ok {
				t.Errorf("%s of %#x at %d: a stream the program does not report", name, e.Handle, e.Start)
				continue
			}
		case "cuCtxSetCurrent":
			setOrder = append(setOrder, devices[i])
			want = devices[i]
		case "cuCtxSynchronize":
			syncOrder = append(syncOrder, devices[i])
			want = devices[i]
		default:
			continue
		}
		counts[name]++
		if devices[i] != want {
			t.Errorf("%s handle %#x stream %#x at %d: device %d, the program made it on device %d",
				name, e.Handle, e.Stream, e.Start, devices[i], want)
		}
	}
	if !slices.Equal(setOrder, wantOrder) {
		t.Errorf("cuCtxSetCurrent devices %v, the program made devices current in the order %v", setOrder, wantOrder)
	}
	if !slices.Equal(syncOrder, wantOrder) {
		t.Errorf("cuCtxSynchronize devices %v, the program synchronized devices in the order %v", syncOrder, wantOrder)
	}
	n := len(rep.Devices)
	for name, want := range map[string]int{
		"cuMemAllocAsync": n * rounds * buffers, "cuMemFreeAsync": n * rounds * buffers,
		"cuStreamCreate": n * rounds, "cuStreamDestroy": n * rounds, "cuStreamSynchronize": n * rounds,
	} {
		if counts[name] != want {
			t.Errorf("%d %s calls in the trace, the program made %d", counts[name], name, want)
		}
	}
}

func parseHex(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil || !strings.HasPrefix(s, "0x") {
		t.Fatalf("handle %q is not 0x-hex", s)
	}
	return v
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"-devices", "0,x"}, {"-devices", "1,1"}, {"-devices", ","}, {"-rounds", "0"}, {"-buffers", "0"},
		{"-bogus"}, {"extra"},
	} {
		var out bytes.Buffer
		if err := run(args, &out); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
