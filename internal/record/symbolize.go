package record

import (
	"bufio"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cuprof/cuprof/trace"
)

// clockNow returns CLOCK_REALTIME and CLOCK_MONOTONIC in ns, read together.
func clockNow() (wall, mono uint64) {
	var w, m unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &m)
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &w)
	return uint64(w.Nano()), uint64(m.Nano())
}

func monoNow() uint64 {
	_, m := clockNow()
	return m
}

// symbolizer resolves call-site addresses to the functions containing them,
// from the symbol tables of the mapped files (best effort: stripped files and
// files that changed since the run give no symbols).
//
// The files are named by /proc/PID/maps, which the program controls, and are
// read by cuprof, root perhaps, after the program ended: openMapped reads
// only what the process could have mapped from a file that is still there
// and nobody else could have put there, never a "NAME (deleted)" by name
// (another user may have made a FIFO or a crafted ELF at that name since),
// never blocking on a FIFO or device, and the whole of it within a time
// budget.
type symbolizer struct {
	files map[fileKey]*elfSyms
	// deadline bounds the time spent reading files (a file on a hung
	// network or FUSE mount blocks in read): past it no file is read.
	deadline time.Time
	// skipped counts the files not read, by reason (for one note).
	skipped map[string]int
}

type fileKey struct {
	path string
	uid  uint32
}

type elfSyms struct {
	ok      bool
	buildID string
	progs   []elf.ProgHeader
	funcs   []elf.Symbol // FUNC symbols with a value, sorted by value
}

// symbolizeBudget is how long a recording's symbolization may read files.
var symbolizeBudget = 60 * time.Second

// maxMappedFile bounds the size of a file read for symbols.
const maxMappedFile = 8 << 30

// readMapped reads the symbols of an opened mapped file (a variable: the
// tests stand in a reader that never returns).
var readMapped = readELF

func newSymbolizer() *symbolizer {
	return &symbolizer{files: map[fileKey]*elfSyms{}, deadline: time.Now().Add(symbolizeBudget), skipped: map[string]int{}}
}

// Reasons a mapped file is not read.
const (
	skipDeleted  = "deleted since it was mapped"
	skipSpecial  = "not a regular file"
	skipOwner    = "of another user"
	skipTooLarge = "too large"
	skipTime     = "out of time"
)

// skipError says why a mapped file is not read.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

// openMapped opens a file that /proc/PID/maps names, for a process that
// ran as uid: not a deleted file's name, not through a link at the last
// component, only a regular file of root's, of the user running cuprof or
// of uid, and without blocking (it is looked at with O_PATH, which opens
// nothing, then reopened through /proc/self/fd, the same inode).
func openMapped(path string, uid uint32) (*os.File, error) {
	if strings.HasSuffix(path, " (deleted)") {
		return nil, &skipError{skipDeleted}
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, &skipError{skipSpecial}
	case st.Uid != 0 && st.Uid != uint32(os.Geteuid()) && st.Uid != uid:
		return nil, &skipError{skipOwner}
	case st.Size > maxMappedFile:
		return nil, &skipError{skipTooLarge}
	}
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
		f.Close()
		return nil, &skipError{skipSpecial}
	}
	return f, nil
}

// load returns the symbols of the file at path for a process that ran as
// uid (cached; a file that cannot or must not be read has none).
func (s *symbolizer) load(path string, uid uint32) *elfSyms {
	k := fileKey{path, uid}
	if e, ok := s.files[k]; ok {
		return e
	}
	e := &elfSyms{}
	s.files[k] = e
	left := time.Until(s.deadline)
	if left <= 0 {
		s.skipped[skipTime]++
		return e
	}
	// Opening and reading run aside, so that a file system that blocks
	// (a hung NFS or FUSE mount) costs the budget, not the recording: the
	// goroutine is left behind then, and so is its file.
	done := make(chan *elfSyms, 1)
	var skip *skipError
	read := readMapped
	go func() {
		f, err := openMapped(path, uid)
		if err != nil {
			if se, ok := err.(*skipError); ok {
				skip = se
			}
			done <- nil
			return
		}
		defer f.Close()
		done <- read(f)
	}()
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case r := <-done:
		if skip != nil {
			s.skipped[skip.reason]++
		}
		if r != nil {
			s.files[k] = r
			return r
		}
	case <-t.C:
		s.skipped[skipTime]++
		s.deadline = time.Now() // nothing more is read
	}
	return e
}

// readELF reads the loadable segments, build ID and function symbols of an
// ELF file, whatever its bytes: a malformed file gives what could be read,
// or nothing (debug/elf bounds its reads by the file's size; a panic in it
// on crafted input is caught).
func readELF(r io.ReaderAt) (e *elfSyms) {
	e = &elfSyms{}
	defer func() {
		if recover() != nil {
			e = &elfSyms{}
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return e
	}
	e.ok = true
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			e.progs = append(e.progs, p.ProgHeader)
		}
	}
	if sec := f.Section(".note.gnu.build-id"); sec != nil && sec.Size <= 1<<10 {
		if b, err := sec.Data(); err == nil && len(b) > 16 {
			e.buildID = hex.EncodeToString(b[16:])
		}
	}
	seen := map[uint64]bool{}
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, sy := range syms {
			if elf.ST_TYPE(sy.Info) != elf.STT_FUNC || sy.Value == 0 || seen[sy.Value] {
				continue
			}
			seen[sy.Value] = true
			e.funcs = append(e.funcs, sy)
		}
	}
	sort.Slice(e.funcs, func(i, j int) bool { return e.funcs[i].Value < e.funcs[j].Value })
	return e
}

// note says, in one line, which mapped files were not read for symbols
// and why, when any was left out for a reason the user can act on (a
// deleted file or a special one is said nowhere: nothing can be done).
func (s *symbolizer) note(w io.Writer) {
	var parts []string
	for _, r := range []string{skipOwner, skipTooLarge, skipTime} {
		if n := s.skipped[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	if len(parts) == 0 || w == nil {
		return
	}
	fmt.Fprintf(w, "cuprof: note: some mapped files were not read for symbols (%s); their call sites are addresses only\n", strings.Join(parts, ", "))
}

// vaddr converts a file offset to the ELF virtual address that maps it.
func (e *elfSyms) vaddr(off uint64) (uint64, bool) {
	for _, p := range e.progs {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

func (e *elfSyms) lookup(v uint64) (elf.Symbol, bool) {
	i := sort.Search(len(e.funcs), func(i int) bool { return e.funcs[i].Value > v }) - 1
	if i < 0 {
		return elf.Symbol{}, false
	}
	sy := e.funcs[i]
	if sy.Size != 0 && v >= sy.Value+sy.Size {
		return elf.Symbol{}, false
	}
	return sy, true
}

type mapLine struct {
	start, limit, offset uint64
	perms, file          string
}

func parseMaps(text string) []mapLine {
	var out []mapLine
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		limit, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || limit <= start {
			continue
		}
		out = append(out, mapLine{start, limit, off, f[1], strings.Join(f[5:], " ")})
	}
	return out
}

// symbolize returns the executable file mappings of one process image and
// the symbols containing its call sites.
func (s *symbolizer) symbolize(pid, uid uint32, maps string, callers map[uint64]bool) ([]trace.Mapping, []trace.Symbol) {
	lines := parseMaps(maps)
	var ms []trace.Mapping
	var exec []mapLine
	for _, l := range lines {
		if !strings.Contains(l.perms, "x") {
			continue
		}
		exec = append(exec, l)
		e := s.load(l.file, uid)
		ms = append(ms, trace.Mapping{PID: pid, Start: l.start, Limit: l.limit, Offset: l.offset, File: l.file, BuildID: e.buildID})
	}
	var syms []trace.Symbol
	for addr := range callers {
		// The return address follows the call: look up addr-1.
		a := addr - 1
		i := sort.Search(len(exec), func(i int) bool { return exec[i].limit > a })
		if i == len(exec) || a < exec[i].start {
			continue
		}
		l := exec[i]
		e := s.load(l.file, uid)
		if !e.ok {
			continue
		}
		v, ok := e.vaddr(a - l.start + l.offset)
		if !ok {
			continue
		}
		sy, ok := e.lookup(v)
		if !ok {
			continue
		}
		syms = append(syms, trace.Symbol{PID: pid, Addr: a - (v - sy.Value), Size: sy.Size, Name: sy.Name})
	}
	return ms, syms
}
