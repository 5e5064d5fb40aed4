package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func readSpec(t testing.TB) (spec, funcs []byte) {
	t.Helper()
	spec, err := os.ReadFile("../../spec/driver_apis.txt")
	if err != nil {
		t.Fatal(err)
	}
	funcs, err = os.ReadFile("../../spec/cuda_functions.txt")
	if err != nil {
		t.Fatal(err)
	}
	return spec, funcs
}

// TestGeneratedFilesFresh fails when a generated file no longer matches
// spec/driver_apis.txt and spec/cuda_functions.txt: run `go generate ./trace`.
func TestGeneratedFilesFresh(t *testing.T) {
	spec, funcs := readSpec(t)
	g, err := generate(spec, funcs)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range g.outputs("../../apis_gen.go", "../../../cudawrap/shim/cuprof_apis.h",
		"../../../cudawrap/shim/cuprof_types.h", "../../../cudawrap/sim/csrc/stubs_gen.c",
		"../../../cudawrap/sim/testdata/every_gen.c") {
		got, err := os.ReadFile(o.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, o.data) {
			t.Errorf("%s is stale: run `go generate ./trace`", o.path)
		}
	}
}

// TestEveryHeaderFunctionHasARow: the committed table covers every API of
// the committed functions list (what -sync would add is nothing).
func TestEveryHeaderFunctionHasARow(t *testing.T) {
	spec, funcs := readSpec(t)
	out, err := syncSpec(spec, funcs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, spec) {
		t.Errorf("driver_apis.txt lacks rows for functions of cuda_functions.txt: run go run ./internal/apigen -sync")
	}
}

// miniFuncs is a functions list for the table tests.
const miniFuncs = `func | cuX | cuX | cuX@2000 | - | 13.0 | unsigned int flags
func | cuY | cuY | cuY@2000 | - | 13.0 | CUdeviceptr *dptr, size_t bytesize
func | cuY_v2 | cuY | cuY@3020 | - | 13.0 | CUdeviceptr *dptr, size_t bytesize, CUstream hStream
type | CUdeviceptr | scalar | unsigned long long
type | CUstream | handle | CUstream_st
`

// specExcerpt is spec's object and category lines and its first n rows.
func specExcerpt(spec []byte, n int) string {
	var b strings.Builder
	for _, line := range strings.Split(string(spec), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case strings.HasPrefix(t, "object ") || strings.HasPrefix(t, "category "):
			b.WriteString(t + "\n")
		case n > 0:
			b.WriteString(t + "\n")
			n--
		}
	}
	return b.String()
}

const miniHead = "category other init memory\nobject 1 allocation\n"

func TestParseSpecRejectsBadRows(t *testing.T) {
	funcs, err := parseFunctions([]byte(miniFuncs))
	if err != nil {
		t.Fatal(err)
	}
	const x = "1 | cuX | init\n"
	const y = "2 | cuY | memory | allocation | create | - | - | - | 10 | * | (dptr ? *dptr : 0) | - | - | bytesize | - | -\n"
	if _, err := parseSpec([]byte(miniHead+x+y), funcs); err != nil {
		t.Fatalf("a good table: %v", err)
	}
	// stream ?: a queueing call whose stream the record cannot hold
	q := strings.Replace(strings.Replace(y, "| - | - | - | 10 |", "| - | queue | - | 10 |", 1), "| (dptr ? *dptr : 0) | - |", "| (dptr ? *dptr : 0) | ? |", 1)
	s, err := parseSpec([]byte(miniHead+x+q), funcs)
	if err != nil {
		t.Fatalf("a table with stream ?: %v", err)
	}
	if !s.streamHidden("cuY") || s.streamHidden("cuX") {
		t.Errorf("stream ?: streamHidden cuY %v cuX %v, want true false", s.streamHidden("cuY"), s.streamHidden("cuX"))
	}
	for _, bad := range []string{
		x,     // cuY has no row
		x + x, // id reused
		"1 | cuX\n" + y,
		"0 | cuX | init\n" + y,
		"1 | cuX | nosuch\n" + y, // unknown category
		x + "3 | cuY | memory\n", // gap
		x + strings.Replace(y, "allocation | create", "allocation | -", 1),                              // object without role
		x + strings.Replace(y, "allocation | create", "widget | create", 1),                             // unknown object
		x + strings.Replace(y, "| - | - | - | 10 |", "| - | later | - | 10 |", 1),                       // bad work
		x + strings.Replace(y, "| - | - | - | 10 |", "| - | - | often | 10 |", 1),                       // bad error rule
		x + strings.Replace(y, "| - | - | - | 10 |", "| - | - | - | fast |", 1),                         // bad cost
		x + strings.Replace(y, "| - | - | - | 10 |", "| pool use | - | - | 10 |", 1),                    // aux-effect without aux
		x + strings.Replace(y, "| bytesize |", "| nbytes |", 1),                                         // not a parameter
		x + strings.Replace(y, "| (dptr ? *dptr : 0) | - |", "| (dptr ? *dptr : 0) | ? |", 1),           // stream ? without work queue
		x + strings.Replace(y, "| - | - | bytesize", "| hStream | - | bytesize", 1),                     // cuY (v1) has no hStream
		x + strings.Replace(y, "| * |", "| cuY_v3 |", 1),                                                // not a variant
		x + strings.Replace(y, "| * |", "| cuY |", 1),                                                   // cuY_v2 not covered
		x + y + "2 | cuY | memory | allocation | create | - | - | - | 10 | * | - | - | - | - | - | -\n", // two * rows... covered twice is fine, but
		"category init memory\nobject 1 allocation\n" + x + y,                                           // other not first
		miniHead + "object 3 stream\n" + x + y,                                                          // object gap
	} {
		data := bad
		if !strings.HasPrefix(bad, "category") && !strings.HasPrefix(bad, miniHead) {
			data = miniHead + bad
		}
		if _, err := parseSpec([]byte(data), funcs); err == nil {
			t.Errorf("parseSpec accepted a bad table:\n%s", data)
		}
	}
}

// TestRowsPerVariant: a variant with other parameters gets its own row.
func TestRowsPerVariant(t *testing.T) {
	funcs, err := parseFunctions([]byte(miniFuncs))
	if err != nil {
		t.Fatal(err)
	}
	table := miniHead + "1 | cuX | init\n" +
		"2 | cuY | memory | allocation | create | - | queue | - | 10 | cuY | (dptr ? *dptr : 0) | - | - | bytesize | - | -\n" +
		"2 | cuY | memory | allocation | create | - | queue | - | 10 | * | (dptr ? *dptr : 0) | hStream | - | bytesize | - | -\n"
	s, err := parseSpec([]byte(table), funcs)
	if err != nil {
		t.Fatal(err)
	}
	c := string(s.cSource())
	for _, want := range []string{
		"X(cuY, cuY, (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize), CUPROF_OUT((dptr ? *dptr : 0), 0), 0, 0, bytesize, 0, -1)",
		"X(cuY_v2, cuY, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream), CUPROF_OUT((dptr ? *dptr : 0), 0), hStream, 0, bytesize, 0, -1)",
		"X(cuX, cuX, (unsigned int flags), (flags), 0, 0, 0, 0, 0, -1)", // a plain row
		"X(\"cuY\", 3020, 0, cuY_v2)",
		"X(cuY, 10)",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("C header lacks %s", want)
		}
	}
	g, err := s.goSource()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(g), `APIY: {Name: "cuY", Category: CategoryMemory, Object: ObjectAllocation, Role: RoleCreate, Work: WorkQueue, SimCostNs: 10, Described: true, Symbols: []string{"cuY", "cuY_v2"}}`) {
		t.Errorf("Go table row of cuY wrong:\n%s", g)
	}
}

// TestIDsNotFileOrder: ids are explicit, so a new api's rows can go in its
// category block; the tables follow the ids.
func TestIDsNotFileOrder(t *testing.T) {
	funcs, err := parseFunctions([]byte(miniFuncs))
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseSpec([]byte(miniHead+"2 | cuY | memory\n1 | cuX | init\n"), funcs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.apis) != 2 || s.apis[0] != "cuX" || s.apis[1] != "cuY" {
		t.Errorf("apis = %v, want [cuX cuY] (by id)", s.apis)
	}
}

func TestSyncAppendsNewAPIs(t *testing.T) {
	out, err := syncSpec([]byte(miniHead+"1 | cuX | init\n"), []byte(miniFuncs))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(out), "1 | cuX | init\n2 | cuY | other\n") {
		t.Errorf("sync gave\n%s", out)
	}
}

func parseSnippet(t testing.TB) *headerSet {
	t.Helper()
	decl, err := os.ReadFile("testdata/snippet_cuda.h")
	if err != nil {
		t.Fatal(err)
	}
	td, err := os.ReadFile("testdata/snippet_typedefs.h")
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHeader("13.0", []string{string(decl)}, string(td))
	if err != nil {
		t.Fatal(err)
	}
	s, err := unionHeaders([]*header{h})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestParseHeaderSnippet checks the header parser on a committed snippet in
// cuda.h's shape: macros to variants, the per-thread block, the driver's
// internal block of older entries, deprecated and multi-line declarations,
// comments, a static inline, and the version table.
func TestParseHeaderSnippet(t *testing.T) {
	s := parseSnippet(t)
	got := string(s.format())
	got = got[len(functionsHeader):]
	want := `func | cuCallLater | cuCallLater | cuCallLater@10000 | - | 13.0 | CUqueue hQueue, CUcallback fn, void *userData
func | cuCopy | cuCopy | cuCopy@2000 | legacy | 13.0 | CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int ByteCount
func | cuCopy_v2 | cuCopy | cuCopy@3020 | - | 13.0 | CUdeviceptr dst, CUdeviceptr src, size_t ByteCount
func | cuCopy_v2_ptds | cuCopy | cuCopy@7000+ptds | - | 13.0 | CUdeviceptr dst, CUdeviceptr src, size_t ByteCount
func | cuQueueSync | cuQueueSync | cuQueueSync@2000 | - | 13.0 | CUqueue hQueue
func | cuQueueSync_ptsz | cuQueueSync | cuQueueSync@7000+ptds | - | 13.0 | CUqueue hQueue
func | cuThingDestroy | cuThingDestroy | cuThingDestroy@2000 | legacy | 13.0 | CUthing hThing
func | cuThingDestroy_v2 | cuThingDestroy | cuThingDestroy@4000 | - | 13.0 | CUthing hThing
func | cuThingMake | cuThingMake | cuThingMake@5000 | - | 13.0 | CUthing *phThing, unsigned int flags
func | cuThingOld | cuThingOld | cuThingOld@3000 | - | 13.0 | CUthing hThing, CUspot spot, const char *name
func | cuWidgetMakeWithFlags | cuWidgetMakeWithFlags | cuWidgetMakeWithFlags@11040 cuWidgetMake@12000 | - | 13.0 | CUthing *phThing, unsigned long long flags
type | CUcallback | fnptr | -
type | CUdeviceptr | scalar | unsigned long long
type | CUdeviceptr_v1 | scalar | unsigned int
type | CUqueue | handle | CUqueue_st
type | CUspot | struct | CUspot_st
type | CUthing | handle | CUthing_st
`
	if got != want {
		t.Errorf("parsed snippet:\n%s\nwant:\n%s", got, want)
	}
	// The list reads back as written.
	back, err := parseFunctions(s.format())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.format(), s.format()) {
		t.Errorf("format/parseFunctions round trip differs")
	}
}

// TestUnionKeepsOlderFunctions: a function only an older header declares
// stays in the list, with that version named.
func TestUnionKeepsOlderFunctions(t *testing.T) {
	td, _ := os.ReadFile("testdata/snippet_typedefs.h")
	newer, err := parseHeader("13.0", []string{"typedef struct CUthing_st *CUthing;\nCUresult CUDAAPI cuThingMake(CUthing *phThing, unsigned int flags);\n"}, string(td))
	if err != nil {
		t.Fatal(err)
	}
	older, err := parseHeader("12.6", []string{"typedef struct CUthing_st *CUthing;\nCUresult CUDAAPI cuThingMake(CUthing *phThing, unsigned int flags);\nCUresult CUDAAPI cuThingGone(CUthing hThing);\n"}, string(td))
	if err != nil {
		t.Fatal(err)
	}
	s, err := unionHeaders([]*header{newer, older})
	if err != nil {
		t.Fatal(err)
	}
	out := string(s.format())
	if !strings.Contains(out, "func | cuThingGone | cuThingGone | - | - | 12.6 | CUthing hThing\n") ||
		!strings.Contains(out, "func | cuThingMake | cuThingMake | cuThingMake@5000 | - | 13.0 12.6 |") {
		t.Errorf("union:\n%s", out)
	}
}

func TestParseFunctionsRejects(t *testing.T) {
	for _, bad := range []string{
		"func | cuX | cuX | - | - | 13.0\n",                                                // 6 fields
		"func | cuX | cuX | cuX@x | - | 13.0 | void\n",                                     // bad lookup
		"func | xX | cuX | - | - | 13.0 | void\n",                                          // not a cu name
		"func | cuX | cuX | - | - | 13.0 | CUthing h\n",                                    // type without a type line
		"func | cuX | cuX | - | - | 13.0 | void\nfunc | cuX | cuX | - | - | 13.0 | void\n", // twice
		"type | CUx | blob | -\n",
		"kind | x\n",
	} {
		if _, err := parseFunctions([]byte(bad)); err == nil {
			t.Errorf("parseFunctions(%q) accepted it", bad)
		}
	}
}

// FuzzParseHeader: the header parser never panics, and what it accepts
// formats into a list that parses back to the same list.
func FuzzParseHeader(f *testing.F) {
	decl, _ := os.ReadFile("testdata/snippet_cuda.h")
	td, _ := os.ReadFile("testdata/snippet_typedefs.h")
	f.Add(string(decl), string(td))
	f.Add("CUresult CUDAAPI cuA(int x);", "typedef CUresult (CUDAAPI *PFN_cuA_v1000)(int x);")
	f.Add("#if defined(__CUDA_API_VERSION_INTERNAL)\nCUresult CUDAAPI cuA(void);\n#endif", "")
	f.Fuzz(func(t *testing.T, decl, td string) {
		h, err := parseHeader("13.0", []string{decl}, td)
		if err != nil {
			return
		}
		s, err := unionHeaders([]*header{h})
		if err != nil {
			return
		}
		out := s.format()
		back, err := parseFunctions(out)
		if err != nil {
			t.Fatalf("the list of an accepted header does not parse back: %v\n%s", err, out)
		}
		if !bytes.Equal(back.format(), out) {
			t.Fatalf("round trip differs:\n%s\n----\n%s", out, back.format())
		}
	})
}

// FuzzParseSpec: the table parser never panics on any input, and an
// accepted table's Go formats. It runs against the three functions of
// miniFuncs, not the driver's 636: a table is accepted only when every
// header function has a row, so against the real list every accepted input
// was the whole 39 KB table, each mutation of it took seconds to parse and
// format under the fuzzer's instrumentation, and the fuzzer ran 5 inputs a
// minute. The real table's declarations and first rows seed its parsing.
func FuzzParseSpec(f *testing.F) {
	spec, _ := readSpec(f)
	f.Add(specExcerpt(spec, 12))
	f.Add(miniHead + "1 | cuX | init\n2 | cuY | memory\n")
	f.Add(miniHead + "1 | cuX | init\n2 | cuY | memory | allocation | create | - | - | - | 10 | * | (dptr ? *dptr : 0) | - | - | bytesize | - | -\n")
	hs, err := parseFunctions([]byte(miniFuncs))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data string) {
		s, err := parseSpec([]byte(data), hs)
		if err != nil {
			return
		}
		if _, err := s.goSource(); err != nil {
			t.Fatalf("an accepted table's Go does not format: %v", err)
		}
	})
}
