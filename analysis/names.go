package analysis

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cuprof/cuprof/trace"
)

// The names every output shows for a call site, a piece of Python-level
// code and a named object are made here, once: a consumer that names one of
// them by itself would disagree with the others (the cross-consumer test in
// names_test.go reads each output back).

// CallSite is where a driver call was made from: its return address
// resolved with the mappings and symbols the recording kept (nothing of the
// traced program is opened).
//
// The rule: a symbol holds the addresses [Addr, Addr+Size); a symbol of size
// 0 (an assembler label, a symbol whose size the object did not say) holds
// only its own address, since extending it to the next symbol would name
// padding or stripped code after it. Of the symbols holding an address the
// one starting last (the innermost) names it; of several starting there, the
// first the trace lists. A mapping holds [Start, Limit).
type CallSite struct {
	Addr uint64
	// Function is the symbol holding Addr, "" when none does; Offset is
	// Addr less its start.
	Function string
	Offset   uint64
	// Mapping is the index in Trace.Mappings of the mapping holding Addr,
	// -1 when none does; File is its file and FileOffset Addr's offset in
	// that file.
	Mapping    int
	File       string
	FileOffset uint64
}

// Name is the one name every output gives the site: the function when a
// symbol holds it ("train_step"), else the mapped file's base name and the
// offset in it ("libtrain.so+0x1c20"), else the address ("0x401020"); ""
// for a call recorded without its caller (Addr 0).
func (s CallSite) Name() string {
	switch {
	case s.Addr == 0:
		return ""
	case s.Function != "":
		return s.Function
	case s.Mapping >= 0:
		return filepath.Base(s.File) + "+0x" + strconv.FormatUint(s.FileOffset, 16)
	}
	return "0x" + strconv.FormatUint(s.Addr, 16)
}

// Sites resolves call sites against a trace's Mappings and Symbols. The
// tables may grow (a live recording hands over symbols as it goes): they
// are indexed again when their lengths change. Not safe for concurrent use.
type Sites struct {
	t              *trace.Trace
	nsyms, nmaps   int
	syms           map[uint32]*symbolIndex
	maps           map[uint32][]int // per process, indexes into t.Mappings by Start
	lastPID        uint32
	lastSyms       *symbolIndex
	indexed, empty bool
}

// symbolIndex is one process's symbols sorted by start, with the greatest
// end of each prefix (to know when no earlier symbol can hold an address).
type symbolIndex struct {
	ix     []int // into t.Symbols
	starts []uint64
	reach  []uint64 // reach[i]: max end of ix[0..i]
}

// SitesOf returns a resolver of t's call sites.
func SitesOf(t *trace.Trace) *Sites { return &Sites{t: t} }

func (s *Sites) index() {
	t := s.t
	s.nsyms, s.nmaps, s.indexed = len(t.Symbols), len(t.Mappings), true
	s.syms, s.maps, s.lastSyms = map[uint32]*symbolIndex{}, map[uint32][]int{}, nil
	s.empty = len(t.Symbols) == 0 && len(t.Mappings) == 0
	for i, y := range t.Symbols {
		x := s.syms[y.PID]
		if x == nil {
			x = &symbolIndex{}
			s.syms[y.PID] = x
		}
		x.ix = append(x.ix, i)
	}
	for _, x := range s.syms {
		slices.SortStableFunc(x.ix, func(a, b int) int {
			ya, yb := t.Symbols[a].Addr, t.Symbols[b].Addr
			switch {
			case ya < yb:
				return -1
			case ya > yb:
				return 1
			}
			return 0
		})
		x.starts, x.reach = make([]uint64, len(x.ix)), make([]uint64, len(x.ix))
		var reach uint64
		for k, i := range x.ix {
			y := &t.Symbols[i]
			x.starts[k] = y.Addr
			reach = max(reach, symbolEnd(y))
			x.reach[k] = reach
		}
	}
	for i, m := range t.Mappings {
		s.maps[m.PID] = append(s.maps[m.PID], i)
	}
	for _, ix := range s.maps {
		slices.SortStableFunc(ix, func(a, b int) int {
			ma, mb := t.Mappings[a].Start, t.Mappings[b].Start
			switch {
			case ma < mb:
				return -1
			case ma > mb:
				return 1
			}
			return 0
		})
	}
}

// symbolEnd is the first address past what y holds (a size-0 symbol holds
// its own address).
func symbolEnd(y *trace.Symbol) uint64 {
	if e := y.Addr + max(y.Size, 1); e > y.Addr {
		return e
	}
	return ^uint64(0) // wrapped: holds everything above it
}

// Resolve names the return address addr of process pid.
func (s *Sites) Resolve(pid uint32, addr uint64) CallSite {
	cs := CallSite{Addr: addr, Mapping: -1}
	if addr == 0 || s == nil || s.t == nil {
		return cs
	}
	t := s.t
	if !s.indexed || s.nsyms != len(t.Symbols) || s.nmaps != len(t.Mappings) {
		s.index()
	}
	if s.empty {
		return cs
	}
	x := s.lastSyms
	if x == nil || s.lastPID != pid {
		x = s.syms[pid]
		s.lastSyms, s.lastPID = x, pid
	}
	if x != nil {
		if j := x.holder(t.Symbols, addr); j >= 0 {
			y := &t.Symbols[j]
			cs.Function, cs.Offset = y.Name, addr-y.Addr
		}
	}
	if ix := s.maps[pid]; len(ix) > 0 {
		k, _ := slices.BinarySearchFunc(ix, addr, func(i int, a uint64) int {
			if t.Mappings[i].Start <= a {
				return -1
			}
			return 1
		})
		if k--; k >= 0 {
			if m := &t.Mappings[ix[k]]; addr < m.Limit {
				cs.Mapping, cs.File, cs.FileOffset = ix[k], m.File, addr-m.Start+m.Offset
			}
		}
	}
	return cs
}

// holder returns the index in syms of the symbol naming addr, -1 when none
// holds it (the rule of CallSite).
func (x *symbolIndex) holder(syms []trace.Symbol, addr uint64) int {
	k, found := slices.BinarySearch(x.starts, addr)
	if found {
		for k+1 < len(x.starts) && x.starts[k+1] == addr {
			k++
		}
	} else {
		k--
	}
	best := -1
	for ; k >= 0 && x.reach[k] > addr; k-- {
		y := &syms[x.ix[k]]
		if best >= 0 && syms[best].Addr != y.Addr {
			break // an inner symbol already holds it
		}
		if addr < symbolEnd(y) {
			best = x.ix[k] // walking back: the first listed of one start wins
		}
	}
	return best
}

// CodeName is the one display name of a piece of Python-level code (a
// Python function or a C callable): its qualified name as recorded
// ("Stream.synchronize"), or for code the trace does not name, "(code N)"
// with its id, so that two unnamed pieces of code stay apart.
func CodeName(t *trace.Trace, id trace.CodeID) string {
	if int(id) < len(t.Code) {
		if n := t.String(t.Code[id].Name); n != "" {
			return n
		}
	}
	return "(code " + strconv.FormatUint(uint64(id), 10) + ")"
}

// CodeFunction is the code's name with its module, the one way of adding
// it: "module.qualname" ("cuda.core.Stream.synchronize"), or CodeName when
// the module is unknown.
func CodeFunction(t *trace.Trace, id trace.CodeID) string {
	n := CodeName(t, id)
	if int(id) < len(t.Code) {
		if m := t.String(t.Code[id].Module); m != "" {
			return m + "." + n
		}
	}
	return n
}

// CodeName is CodeName of the analysed trace's code table.
func (a *Analysis) CodeName(id trace.CodeID) string { return CodeName(a.tables, id) }

// CodeFunction is CodeFunction of the analysed trace's code table.
func (a *Analysis) CodeFunction(id trace.CodeID) string { return CodeFunction(a.tables, id) }

// CallSite resolves the return address addr of process pid (the rule of
// CallSite) against the analysed trace's mappings and symbols.
func (a *Analysis) CallSite(pid uint32, addr uint64) CallSite {
	if a.sites == nil {
		a.sites = SitesOf(a.tables)
	}
	return a.sites.Resolve(pid, addr)
}

// CallSite is where the event was made from (its Caller resolved).
func (e *Event) CallSite() CallSite {
	if e.Caller == 0 || e.tr == nil {
		return CallSite{Addr: e.Caller, Mapping: -1}
	}
	return e.tr.a.CallSite(e.PID, e.Caller)
}

// ObjectName is the name the program gave o (an NVTX cuStream name and its
// kin: trace.KindObjectName), "" when none. The rule: a name event names the
// live object of its process, kind and handle; one naming a handle with no
// live object names the next object created with it. A later name replaces
// an earlier one.
func (a *Analysis) ObjectName(o *Object) string {
	if o == nil || o.Name == 0 {
		return ""
	}
	return a.strings(o.Name)
}

// nameObject applies a KindObjectName event.
func (tr *Tracker) nameObject(e *trace.Event) {
	k := objectKey{e.PID, e.Object, e.Handle}
	if j, ok := tr.live.get(k); ok {
		tr.a.Objects[j].Name = e.Name
		return
	}
	if tr.pendingNames == nil {
		tr.pendingNames = map[objectKey]trace.StringID{}
	}
	tr.pendingNames[k] = e.Name
}

// takeName gives a new object the name its handle was given before it
// was created.
func (tr *Tracker) takeName(k objectKey, o *Object) {
	if n, ok := tr.pendingNames[k]; ok {
		o.Name = n
		delete(tr.pendingNames, k)
	}
}

// IsDefaultStream is the one default-stream rule: the handles 0 (NULL),
// CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) name the default
// stream, never a stream object.
func IsDefaultStream(h uint64) bool { return h <= 2 }

// UnknownStream is StreamOf's answer for work whose stream the record does
// not hold.
const UnknownStream = math.MaxUint64

// StreamOf is the stream the work a call queues runs on: the stream it
// recorded; 0 for the default stream (IsDefaultStream handles, and a call
// recording none: the synchronous copies and memsets run on it); and
// UnknownStream for an API that queues on a stream its record cannot hold
// (the API table's StreamUnrecorded: cuLaunchKernelEx).
func StreamOf(e *trace.Event) uint64 {
	switch {
	case e.Kind == trace.KindCall && e.API.Valid() && streamUnrecorded[e.API]:
		return UnknownStream
	case IsDefaultStream(e.Stream):
		return 0
	}
	return e.Stream
}

// streamUnrecorded is, by API, the table's StreamUnrecorded (read once:
// API.Info copies the whole description).
var streamUnrecorded = func() []bool {
	apis := trace.APIs()
	u := make([]bool, len(apis)+1)
	for _, a := range apis {
		u[a] = a.Info().StreamUnrecorded
	}
	return u
}()
