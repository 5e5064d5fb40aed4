package flame

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/cuprof/cuprof/trace"
)

// symbolizer resolves caller return addresses with the mappings and symbols
// the trace recorded; it never opens the traced program's files.
type symbolizer struct {
	mappings map[uint32][]int // per process, indexes into list, by Start
	symbols  map[uint32][]int // per process, indexes into tr.Symbols, by Addr
	list     []trace.Mapping
	tr       *trace.Trace
}

func newSymbolizer(t *trace.Trace) *symbolizer {
	s := &symbolizer{mappings: map[uint32][]int{}, symbols: map[uint32][]int{}, list: t.Mappings, tr: t}
	for i, m := range t.Mappings {
		s.mappings[m.PID] = append(s.mappings[m.PID], i)
	}
	for pid, ix := range s.mappings {
		sort.SliceStable(ix, func(a, b int) bool { return t.Mappings[ix[a]].Start < t.Mappings[ix[b]].Start })
		s.mappings[pid] = ix
	}
	for i, y := range t.Symbols {
		s.symbols[y.PID] = append(s.symbols[y.PID], i)
	}
	for pid, ix := range s.symbols {
		sort.SliceStable(ix, func(a, b int) bool { return t.Symbols[ix[a]].Addr < t.Symbols[ix[b]].Addr })
		s.symbols[pid] = ix
	}
	return s
}

func (s *symbolizer) mappingList() []trace.Mapping {
	if s == nil {
		return nil
	}
	return s.list
}

// mapping returns the index of the mapping of pid holding addr, or -1.
func (s *symbolizer) mapping(pid uint32, addr uint64) int {
	ix := s.mappings[pid]
	i := sort.Search(len(ix), func(i int) bool { return s.list[ix[i]].Start > addr }) - 1
	if i >= 0 && addr < s.list[ix[i]].Limit {
		return ix[i]
	}
	return -1
}

// symbol returns the name of the symbol of pid holding addr, or "".
func (s *symbolizer) symbol(pid uint32, addr uint64) string {
	ix := s.symbols[pid]
	i := sort.Search(len(ix), func(i int) bool { return s.tr.Symbols[ix[i]].Addr > addr }) - 1
	if i < 0 {
		return ""
	}
	y := &s.tr.Symbols[ix[i]]
	if addr < y.Addr+y.Size || (y.Size == 0 && addr == y.Addr) {
		return y.Name
	}
	return ""
}

// callerLoc returns the location of a caller return address: named
// "object:symbol" when both are known, "object+0xOFFSET" with the mapping
// only, "0xADDR" with neither.
func (b *Builder) callerLoc(pid uint32, addr uint64) uint32 {
	// a few call sites make most calls: a direct-mapped cache of the
	// answers first, then the maps
	c := &b.callerCache[(addr*0x9e3779b97f4a7c15)>>(64-callerCacheBits)]
	if c.loc != 0 && c.addr == addr && c.pid == pid {
		return c.loc
	}
	l := b.callerLocSlow(pid, addr)
	*c = callerHit{pid: pid, addr: addr, loc: l}
	return l
}

// callerCacheBits is log2 of the caller cache's entries.
const callerCacheBits = 6

// callerHit is one entry of the caller cache (loc 0: empty).
type callerHit struct {
	pid  uint32
	loc  uint32
	addr uint64
}

func (b *Builder) callerLocSlow(pid uint32, addr uint64) uint32 {
	m := b.lastCallers
	if m == nil || b.lastPID != pid {
		m = b.callers[pid]
		if m == nil {
			m = map[uint64]uint32{}
			b.callers[pid] = m
		}
		b.lastCallers, b.lastPID = m, pid
	}
	if l, ok := m[addr]; ok {
		return l
	}
	if b.sym == nil {
		b.sym = newSymbolizer(b.tr)
	}
	mi := b.sym.mapping(pid, addr)
	sym := b.sym.symbol(pid, addr)
	l := loc{kind: frameCaller, addr: addr, mapping: mi}
	switch {
	case mi >= 0 && sym != "":
		mm := &b.sym.list[mi]
		l.name = filepath.Base(mm.File) + ":" + sym
		l.file = mm.File
	case mi >= 0:
		mm := &b.sym.list[mi]
		l.name = fmt.Sprintf("%s+0x%x", filepath.Base(mm.File), addr-mm.Start+mm.Offset)
		l.file = mm.File
	case sym != "":
		l.name = sym
	default:
		l.name = fmt.Sprintf("0x%x", addr)
	}
	id := b.addLoc(l)
	m[addr] = id
	return id
}
