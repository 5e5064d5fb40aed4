package seed

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// shape lists the key paths of a JSON document (array elements merged as
// "[]"), to compare the example's schema with the Python programs'.
func shape(v any, path string, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if path == ".per_device" {
				k = "*" // device ordinals
			}
			shape(e, path+"."+k, into)
		}
	case []any:
		for _, e := range x {
			shape(e, path+"[]", into)
		}
	default:
		into[path] = true
	}
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// The example's JSON has the schema of examples/python/multigpu_cudacore.py,
// which bench/multigpu/check.py reads, and counts what it did.
func TestMultiGPUOnSimulatedDriver(t *testing.T) {
	useSim(t)
	var out bytes.Buffer
	if err := MultiGPU([]string{"-devices", "1,0", "-rounds", "2", "-buffers", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	py, err := os.ReadFile(filepath.Join("..", "..", "bench", "multigpu", "testdata", "cudacore.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(py, &want); err != nil {
		t.Fatal(err)
	}
	gs, ws := map[string]bool{}, map[string]bool{}
	shape(got, "", gs)
	shape(want, "", ws)
	if !reflect.DeepEqual(keys(gs), keys(ws)) {
		t.Errorf("schema differs from multigpu_cudacore.py's:\n go: %v\n py: %v", keys(gs), keys(ws))
	}

	var rep MultiGPUReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.PID != os.Getpid() || rep.Program != MultiGPUProgram || len(rep.PerDevice) != 2 {
		t.Fatalf("report %+v", rep)
	}
	for d, k := range rep.PerDevice {
		if k.SetCurrent != 2 || k.Syncs != 2 || k.StreamSyncs != 2 || len(k.Streams) != 2 || len(k.Allocations) != 4 {
			t.Errorf("device %s: %+v", d, k)
		}
		for i, a := range k.Allocations {
			if a.Stream != k.Streams[i/2] || !strings.HasPrefix(a.Ptr, "0x") {
				t.Errorf("device %s allocation %d: %+v (streams %v)", d, i, a, k.Streams)
			}
		}
	}
	if rep.PerDevice["0"].Allocations[0].Size != 4096 || rep.PerDevice["1"].Allocations[3].Size != 8192+256+64 {
		t.Errorf("sizes: %+v", rep.PerDevice)
	}
}

func TestMultiGPUWritesOut(t *testing.T) {
	useSim(t)
	path := filepath.Join(t.TempDir(), "m.json")
	var out bytes.Buffer
	if err := MultiGPU([]string{"-devices", "0", "-rounds", "1", "-out", path}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout with -out: %q", out.String())
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if err := MultiGPU([]string{"-devices", "7"}, &out); err == nil {
		t.Error("device 7 of a two-device driver accepted")
	}
}
