package record

import (
	"os"
	"path/filepath"
	"testing"
)

// pollFiles makes a spill file of size bytes and its marks file, written
// by pollMarks.write with the given poll, in a directory of its own.
func pollFiles(t testing.TB, size int, before, adds uint64, marks []pollMark) string {
	t.Helper()
	spill := filepath.Join(t.TempDir(), "ring-0.spill")
	if err := os.WriteFile(spill, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	pm, err := createPollMarks(spill)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.f.Close()
	if err := pm.write(before, adds, marks); err != nil {
		t.Fatal(err)
	}
	return spill
}

func TestPollMarksOfAWholePollOnly(t *testing.T) {
	marks := []pollMark{{chunk: 3, gen: 7, to: 120}, {chunk: 9, gen: 1, to: 4}}
	for _, c := range []struct {
		name         string
		size         int
		before, adds uint64
		want         int
	}{
		{"the poll's bytes all written", 1000, 600, 400, 2},
		{"later polls' bytes after them", 5000, 600, 400, 2},
		{"the poll's write cut short", 999, 600, 400, 0},
		{"the poll's write not begun", 600, 600, 400, 0},
		{"sizes past the file", 100, 1 << 62, 1 << 63, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readPollMarks(pollFiles(t, c.size, c.before, c.adds, marks), 16)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.want {
				t.Fatalf("%d marks, want %d: %+v", len(got), c.want, got)
			}
			if c.want > 0 && (got[0] != marks[0] || got[1] != marks[1]) {
				t.Errorf("marks %+v, want %+v", got, marks)
			}
		})
	}
}

func TestPollMarksTornOrMissing(t *testing.T) {
	spill := pollFiles(t, 1000, 600, 400, []pollMark{{chunk: 1, gen: 2, to: 3}})
	b, err := os.ReadFile(spill + ".marks")
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-6] ^= 1 // a mark's byte: the CRC no longer matches
	if err := os.WriteFile(spill+".marks", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := readPollMarks(spill, 16); err != nil || got != nil {
		t.Errorf("a torn marks file: %+v, %v; want none", got, err)
	}
	if got, err := readPollMarks(spill, 0); err != nil || got != nil {
		t.Errorf("more marks than the ring's chunks: %+v, %v; want none", got, err)
	}
	os.Remove(spill + ".marks")
	if got, err := readPollMarks(spill, 16); err != nil || got != nil {
		t.Errorf("no marks file: %+v, %v; want none", got, err)
	}
}

func TestApplyPollMarksOnlyMovesForward(t *testing.T) {
	r := &ring{cursors: []cursor{{gen: 5, pos: 10}, {gen: 5, pos: 10}, {gen: 6, pos: 10}}}
	r.applyPollMarks([]pollMark{{chunk: 0, gen: 5, to: 40}, {chunk: 1, gen: 5, to: 4}, {chunk: 2, gen: 5, to: 40}, {chunk: 9, gen: 5, to: 1}})
	want := []uint32{40, 10, 10} // ahead: moved; behind: kept; another generation: kept; no such chunk: ignored
	for i, c := range r.cursors {
		if c.pos != want[i] {
			t.Errorf("chunk %d at %d, want %d", i, c.pos, want[i])
		}
	}
}

func FuzzReadPollMarks(f *testing.F) {
	f.Add([]byte("CPMK"), int64(100))
	f.Add(make([]byte, pollMarksHeader+4), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		if size < 0 || size > 1<<16 {
			return
		}
		dir := t.TempDir()
		spill := filepath.Join(dir, "ring-0.spill")
		if err := os.WriteFile(spill, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(spill+".marks", b, 0o600); err != nil {
			t.Fatal(err)
		}
		marks, err := readPollMarks(spill, 64)
		if err != nil {
			t.Fatal(err)
		}
		if len(marks) > 64 {
			t.Fatalf("%d marks from a ring of 64 chunks", len(marks))
		}
	})
}
