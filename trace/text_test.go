package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/golden"
)

var update = golden.NewFlag("update", "rewrite golden files under testdata/")

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	update.Check(t, filepath.Join("testdata", name), got)
}

func readTextFile(t *testing.T, path string) *Trace {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadText(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tr
}

func TestWriteTextGolden(t *testing.T) {
	tr := readTextFile(t, "testdata/small.txt")
	var buf bytes.Buffer
	if err := WriteText(&buf, tr); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "small.golden.txt", buf.Bytes())

	// The written form reads back to the same text.
	again, err := ReadText(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	if err := WriteText(&buf2, again); err != nil {
		t.Fatal(err)
	}
	if buf.String() != buf2.String() {
		t.Errorf("text round trip differs:\n%s", golden.Diff(buf.String(), buf2.String()))
	}
}

func TestReadTextContent(t *testing.T) {
	tr := readTextFile(t, "testdata/small.txt")
	if tr.Meta.Host != "node1" || tr.Meta.DriverVersion != 13000 || tr.Meta.Clock.TSCHz != 2.4e9 ||
		len(tr.Meta.Command) != 2 || tr.Meta.Command[1] != "bench.py" {
		t.Errorf("meta = %+v", tr.Meta)
	}
	if len(tr.Meta.GPUs) != 1 || tr.Meta.GPUs[0].Name != "NVIDIA H200" {
		t.Errorf("gpus = %+v", tr.Meta.GPUs)
	}
	p := tr.Process(100)
	if p == nil || p.PPID != 1 || len(p.Cmdline) != 3 || p.Cmdline[2] != "arg with space" ||
		p.Env["RANK"] != "0" || p.Env["CUDA_VISIBLE_DEVICES"] != "0,1" || p.End != 50000 {
		t.Errorf("process = %+v", p)
	}
	if len(tr.Threads) != 2 || tr.Threads[1].Name != "worker 1" {
		t.Errorf("threads = %+v", tr.Threads)
	}
	if len(tr.Mappings) != 1 || tr.Mappings[0].Start != 0x400000 || tr.Mappings[0].BuildID != "abcd" {
		t.Errorf("mappings = %+v", tr.Mappings)
	}
	if len(tr.Symbols) != 1 || tr.Symbols[0].Size != 0x40 {
		t.Errorf("symbols = %+v", tr.Symbols)
	}
	if tr.TotalDrops() != 5 || tr.Drops[0].Reason != "buffer full" {
		t.Errorf("drops = %+v", tr.Drops)
	}
	if len(tr.Events) != 11 {
		t.Fatalf("%d events, want 11", len(tr.Events))
	}
	// Sorted: name at 100, push at 900, span (longer) before the call at 1000.
	if tr.Events[0].Kind != KindObjectName || tr.Events[1].Kind != KindRangePush ||
		tr.Events[2].Kind != KindSpan || tr.Events[3].Kind != KindCall {
		t.Errorf("events not in SortEvents order: %v %v %v %v", tr.Events[0].Kind, tr.Events[1].Kind, tr.Events[2].Kind, tr.Events[3].Kind)
	}
	c := tr.Events[3]
	want := Event{Kind: KindCall, API: mustAPI(t, "cuCtxGetCurrent"), PID: 100, TID: 100, Device: 0,
		Start: 1000, End: 1014, Handle: 0x5555, Caller: 0x401020}
	if c != want {
		t.Errorf("call = %+v\nwant   %+v", c, want)
	}
	var alloc, free, unknown *Event
	for i := range tr.Events {
		e := &tr.Events[i]
		switch {
		case e.Kind == KindCall && e.Start == 2000:
			alloc = e
		case e.Kind == KindCall && e.Start == 4000:
			free = e
		case e.Kind == KindCall && e.Start == 7000:
			unknown = e
		}
	}
	if alloc.Stream != 0x10 || alloc.Size != 1<<20 || alloc.Device != 0 {
		t.Errorf("alloc = %+v", alloc)
	}
	if free.Result != ErrInvalidValue || free.Device != NoDevice {
		t.Errorf("free = %+v", free)
	}
	if unknown.Result != 12345 || unknown.Flags != 0x2c {
		t.Errorf("call with unknown result = %+v", unknown)
	}
	if s := tr.String(tr.Events[2].Domain); s != "cudawrap" {
		t.Errorf("span domain = %q", s)
	}
	if tr.Events[0].Object != ObjectStream || tr.String(tr.Events[0].Name) != "compute" {
		t.Errorf("name event = %+v", tr.Events[0])
	}
}

func mustAPI(t *testing.T, name string) API {
	t.Helper()
	a, ok := LookupAPI(name)
	if !ok {
		t.Fatalf("unknown API %s", name)
	}
	return a
}

func TestReadTextErrors(t *testing.T) {
	for _, tc := range []struct {
		in       string
		line     int
		contains string
	}{
		{"", 1, "missing"},
		{"hello\n", 1, "first line must be"},
		{"cuprof-text 2\n", 1, "unsupported text version"},
		{"# c\ncuprof-text 1\nbogus x=1\n", 3, "unknown line kind"},
		{"cuprof-text 1\ncall 1/2 t=5 api=cuNoSuch\n", 2, "unknown driver API"},
		{"cuprof-text 1\ncall 1/2 t=5 sise=3\n", 2, `unknown key "sise"`},
		{"cuprof-text 1\ncall 1 t=5\n", 2, "PID/TID"},
		{"cuprof-text 1\ncall 1/2 end=5\n", 2, "t=START"},
		{"cuprof-text 1\ncall 1/2 t=x\n", 2, "decimal time"},
		{"cuprof-text 1\n\ncall 1/2 t=1 size=-1\n", 3, "size"},
		{"cuprof-text 1\ncall 1/2 t=1 dev=99999999999\n", 2, "dev"},
		{"cuprof-text 1\nmark 1/2 t=1 name=\"open\n", 2, "quoted"},
		{"cuprof-text 1\nmark 1/2 t=1 name=a name=b\n", 2, "duplicate"},
		{"cuprof-text 1\nmeta host=a\nmeta host=b\n", 3, "second meta"},
		{"cuprof-text 1\nprocess pid=1 color=red\n", 2, `unknown key "color"`},
		{"cuprof-text 1\nthread pid=1 tid=x\n", 2, "tid"},
		{"cuprof-text 1\ncall 1/2 t=1 result=CUDA_ERROR_BOGUS\n", 2, "CUresult"},
		{"cuprof-text 1\nname 1/2 t=1 object=widget\n", 2, "object kind"},
	} {
		_, err := ReadText(strings.NewReader(tc.in))
		var te *TextError
		if !errors.As(err, &te) {
			t.Errorf("%q: err = %v, want a *TextError", tc.in, err)
			continue
		}
		if te.Line != tc.line || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%q: err = %v, want line %d containing %q", tc.in, err, tc.line, tc.contains)
		}
	}
}

func TestArgsRoundTrip(t *testing.T) {
	for _, args := range [][]string{
		{"python3", "bench.py"},
		{"a b", "", `q"uote`, "tab\there", "x=y", "#hash", `back\slash`, "\xff"},
	} {
		got, err := splitArgs(joinArgs(args))
		if err != nil || strings.Join(got, "|") != strings.Join(args, "|") || len(got) != len(args) {
			t.Errorf("splitArgs(joinArgs(%q)) = %q, %v", args, got, err)
		}
	}
}

func TestReadSniffs(t *testing.T) {
	tr, err := Read(strings.NewReader("# comment first\n\ncuprof-text 1\nmark 1/1 t=5 name=x\n"))
	if err != nil || len(tr.Events) != 1 {
		t.Fatalf("Read(text) = %v, %v", tr, err)
	}
	if _, err := Read(strings.NewReader("PK\x03\x04 zip file")); !errors.Is(err, ErrNotTrace) {
		t.Errorf("Read(zip) err = %v, want ErrNotTrace", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "t.cuprof")
	if err := WriteFile(path, tr); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat = %v, %v; want mode 0600", st, err)
	}
	back, err := ReadFile(path)
	if err != nil || len(back.Events) != 1 || back.String(back.Events[0].Name) != "x" {
		t.Fatalf("ReadFile = %+v, %v", back, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) err = %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("WriteFile left temporary files: %v", ents)
	}
}

// TestTextRoundTripGenerated writes a generated trace of several processes
// and threads as text and reads it back.
func TestTextRoundTripGenerated(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	tr := genTrace(t, n, 2, 3, 5)
	var buf bytes.Buffer
	if err := WriteText(&buf, tr); err != nil {
		t.Fatal(err)
	}
	got, err := ReadText(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != len(tr.Events) {
		t.Fatalf("%d events, want %d", len(got.Events), len(tr.Events))
	}
	if a, b := canonicalText(t, got), canonicalText(t, tr); a != b {
		t.Errorf("text round trip differs:\n%s", golden.Diff(b, a))
	}
	// Same events once names are resolved (IDs are renumbered).
	for i := range got.Events {
		g, w := got.Events[i], tr.Events[i]
		if got.String(g.Name) != tr.String(w.Name) || got.String(g.Domain) != tr.String(w.Domain) {
			t.Fatalf("event %d names differ", i)
		}
		g.Name, g.Domain, w.Name, w.Domain = 0, 0, 0, 0
		if g != w {
			t.Fatalf("event %d:\ngot  %+v\nwant %+v", i, g, w)
		}
	}
}
