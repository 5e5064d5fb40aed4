package record

import (
	"bufio"
	"debug/elf"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

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
type symbolizer struct {
	files map[string]*elfSyms
}

type elfSyms struct {
	ok      bool
	buildID string
	progs   []elf.ProgHeader
	funcs   []elf.Symbol // FUNC symbols with a value, sorted by value
}

func newSymbolizer() *symbolizer { return &symbolizer{files: map[string]*elfSyms{}} }

func (s *symbolizer) load(path string) *elfSyms {
	if e, ok := s.files[path]; ok {
		return e
	}
	e := &elfSyms{}
	s.files[path] = e
	f, err := elf.Open(path)
	if err != nil {
		return e
	}
	defer f.Close()
	e.ok = true
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			e.progs = append(e.progs, p.ProgHeader)
		}
	}
	if sec := f.Section(".note.gnu.build-id"); sec != nil {
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
func (s *symbolizer) symbolize(pid uint32, maps string, callers map[uint64]bool) ([]trace.Mapping, []trace.Symbol) {
	lines := parseMaps(maps)
	var ms []trace.Mapping
	var exec []mapLine
	for _, l := range lines {
		if !strings.Contains(l.perms, "x") {
			continue
		}
		exec = append(exec, l)
		e := s.load(l.file)
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
		e := s.load(l.file)
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
