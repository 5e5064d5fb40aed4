package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// allocated returns the bytes f allocated on the heap (whatever the
// collector did meanwhile): an upper bound of the memory it took.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRefuseZeroDevice opens /dev/zero, a device that never ends: the reader
// refuses it at its first bytes instead of reading it whole.
func TestRefuseZeroDevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	var err error
	n := allocated(func() { _, err = Open("/dev/zero") })
	if !errors.Is(err, ErrNotTrace) || !strings.Contains(err.Error(), "zero bytes") {
		t.Fatalf("Open(/dev/zero): %v; want ErrNotTrace naming the zero bytes", err)
	}
	if n > 1<<20 {
		t.Fatalf("Open(/dev/zero) allocated %d bytes; want under 1 MiB", n)
	}
	// The same through a reader that never ends.
	n = allocated(func() { _, err = OpenReader(zeros{}) })
	if !errors.Is(err, ErrNotTrace) || n > 1<<20 {
		t.Fatalf("OpenReader(zeros): %v after %d bytes allocated; want ErrNotTrace under 1 MiB", err, n)
	}
	n = allocated(func() { _, err = Read(zeros{}) })
	if !errors.Is(err, ErrNotTrace) || n > 1<<20 {
		t.Fatalf("Read(zeros): %v after %d bytes allocated; want ErrNotTrace under 1 MiB", err, n)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestRefuseLargeNonTrace opens a 300 MB regular file of zeros (sparse, so
// it takes no disk) and a 300 MB one of text that is not a trace: both are
// refused from their first bytes.
func TestRefuseLargeNonTrace(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		head string
	}{
		{"zeros", ""},
		{"text", "hello, this is not a trace\n"},
		{"comment", "# a comment, then no header\nnot a trace\n"},
	} {
		path := filepath.Join(dir, tc.name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(tc.head)
		if err := f.Truncate(300 << 20); err != nil {
			t.Fatal(err)
		}
		f.Close()
		var openErr error
		n := allocated(func() { _, openErr = Open(path) })
		if !errors.Is(openErr, ErrNotTrace) {
			t.Fatalf("%s: %v; want ErrNotTrace", tc.name, openErr)
		}
		if n > 2<<20 {
			t.Fatalf("%s: refusing a 300 MB file allocated %d bytes; want under 2 MiB", tc.name, n)
		}
	}
}

// stringsFlood writes a version-2 file of sections of 2-byte strings (a
// length byte and one character) totalling about size bytes, each section
// secLen bytes, and no events.
func stringsFlood(t *testing.T, path string, size, secLen int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr := []byte(binaryMagic)
	hdr = binary.LittleEndian.AppendUint16(hdr, BinaryVersion)
	hdr = binary.LittleEndian.AppendUint16(hdr, 0)
	f.Write(hdr)
	next := uint64(1)
	for written := 0; written < size; {
		count := uint64(secLen / 2)
		p := binary.AppendUvarint(nil, next)
		p = binary.AppendUvarint(p, count)
		for range count {
			p = append(p, 1, 'x')
		}
		sec := appendSectionHeader(nil, secStrings, len(p))
		sec = append(sec, p...)
		sec = binary.LittleEndian.AppendUint32(sec, crc32.Checksum(p, castagnoli))
		if _, err := f.Write(sec); err != nil {
			t.Fatal(err)
		}
		written += len(sec)
		next += count
	}
}

// TestRefuseStringsFlood reads a 32 MiB file of 2-byte strings: its strings
// would take 16 bytes of memory per 2 bytes of file, so the reader refuses
// it with a clear error once the table budget is spent, within that budget.
func TestRefuseStringsFlood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flood.cuprof")
	stringsFlood(t, path, 32<<20, 4<<20)
	var err error
	n := allocated(func() { _, err = Open(path) })
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "strings and tables would take more than") {
		t.Fatalf("Open: %v; want a CorruptError about the tables' memory", err)
	}
	if limit := uint64(maxTableBytes + 16<<20); n > limit {
		t.Fatalf("Open of a strings flood allocated %d bytes; want under %d", n, limit)
	}
	// The same file through standard input.
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	n = allocated(func() { _, err = OpenReader(io.MultiReader(bytes.NewReader(data))) })
	if !errors.As(err, &ce) || n > uint64(maxTableBytes+16<<20) {
		t.Fatalf("OpenReader: %v after %d bytes allocated; want the same refusal within the budget", err, n)
	}
}

// TestStringsWithinBudget reads a flood that fits the budget: every string
// is read, in one allocation per section rather than one per string.
func TestStringsWithinBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ok.cuprof")
	stringsFlood(t, path, 2<<20, 1<<20)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb := f.Tables()
	if want := 1 + 2*(1<<20)/2; len(tb.Strings) != want || tb.Strings[len(tb.Strings)-1] != "x" {
		t.Fatalf("read %d strings (last %q); want %d ending in \"x\"", len(tb.Strings), tb.Strings[len(tb.Strings)-1], want)
	}
	if tb.Loss == nil || !strings.Contains(tb.Loss.Reason, "without a footer") {
		t.Fatalf("Loss %+v; want the missing footer said", tb.Loss)
	}
}

// TestRefuseEmptyRecordFlood reads a section of empty symbol records: each
// byte of file would be a whole Symbol in memory.
func TestRefuseEmptyRecordFlood(t *testing.T) {
	saved := maxTableBytes
	maxTableBytes = 1 << 20
	defer func() { maxTableBytes = saved }()
	p := make([]byte, 1<<20) // a million records of length 0
	data := []byte(binaryMagic)
	data = binary.LittleEndian.AppendUint16(data, BinaryVersion)
	data = binary.LittleEndian.AppendUint16(data, 0)
	data = appendSectionHeader(data, secSymbol, len(p))
	data = append(data, p...)
	data = binary.LittleEndian.AppendUint32(data, crc32.Checksum(p, castagnoli))
	var err error
	n := allocated(func() { _, err = ReadBinary(data) })
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "symbol record") {
		t.Fatalf("ReadBinary: %v; want a CorruptError naming the symbol record over the budget", err)
	}
	if n > 4<<20 {
		t.Fatalf("allocated %d bytes; want within the 1 MiB budget and the growth of one slice", n)
	}
}
