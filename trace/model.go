// Package trace is cuprof's record model: what a recording holds once it has been
// read from a .cuprof file (or its text twin), independent of how it was captured.
//
// A Trace is a flat list of Events plus the tables they refer to (strings,
// processes, threads, mappings) and the recording's metadata. Events are kept in
// the order SortEvents defines: by Start, parents before children, so that one
// pass per thread sees ranges open before the calls they contain.
package trace

import (
	"sort"
)

// Kind says what an Event records. Its numbers are on the wire: they never
// change and a new kind takes the next one (trace/testdata/wire_numbers.txt).
type Kind uint8

const (
	// KindCall is one driver API call: Start..End on one thread, with API,
	// Result and the object handle, stream, size and flags it involved.
	KindCall Kind = 1
	// KindRangePush opens an NVTX push/pop range on its thread at Start
	// (Name, Domain). It is closed by the next unmatched KindRangePop.
	KindRangePush Kind = 2
	// KindRangePop closes the innermost open push range of its thread at Start.
	KindRangePop Kind = 3
	// KindRangeStart opens an NVTX start/end range with ID at Start; it may be
	// ended on another thread of the same process.
	KindRangeStart Kind = 4
	// KindRangeEnd ends the start/end range with ID at Start.
	KindRangeEnd Kind = 5
	// KindSpan is a complete range Start..End (Name, Domain), as emitted by
	// cudawrap: it nests like a push/pop range but is written once, at its end.
	KindSpan Kind = 6
	// KindMark is an instant NVTX marker at Start (Name, Domain).
	KindMark Kind = 7
	// KindObjectName names an object (Handle, of ObjectKind Object) with Name,
	// as nvtxNameCuStream and friends do, at Start.
	KindObjectName Kind = 8
	// KindFrame is one activation of Python-level code on its thread,
	// Start..End: a Python function (a generator's or coroutine's resumption
	// counts as its own activation), or a C-level callable (builtin, method
	// descriptor, Cython cyfunction, method of a cdef class, ctypes function)
	// called from Python code. Code names it (Trace.Code); Flags holds
	// FrameFlag bits. It is written once, at its end, and nests with spans,
	// ranges and calls by time, like KindSpan.
	KindFrame Kind = 9
	// KindCapture is one capture range of its process, Start..End: the span
	// of time in which the shim recorded every call, opened and closed by
	// what Meta.CaptureRange names (cuProfilerStart/Stop, an NVTX range, the
	// --delay/--duration window, the cuprof Python module). Name says what
	// opened it ("profiler-api", "nvtx:step@train", "window", or the name
	// given to cuprof.capture). Outside every capture range of a trace made
	// with capture ranges, only the calls that keep the analysis's state
	// (APIInfo.KeptOutsideCapture) were recorded. Written once, at its end.
	KindCapture Kind = 10
	// KindCount says how often a driver function cuprof does not wrap (one
	// newer than its API table, handed out through a counting trampoline)
	// was called in the process, or an API of the table whose calls the
	// recording passed through unrecorded by request (cuprof record
	// --pass-through; Name is then the API's base name: CountedAPI): Name
	// is the function, Size the number of calls since the process's last
	// count event of that name, Start when it was counted (at the
	// process's exit).
	KindCount Kind = 11
	kindLimit      = KindCount + 1
)

var kindNames = [...]string{
	KindCall:       "call",
	KindRangePush:  "push",
	KindRangePop:   "pop",
	KindRangeStart: "start",
	KindRangeEnd:   "end",
	KindSpan:       "span",
	KindMark:       "mark",
	KindObjectName: "name",
	KindFrame:      "frame",
	KindCapture:    "capture-range",
	KindCount:      "count",
}

// String returns the kind's short name, as used by the text form.
func (k Kind) String() string {
	if k > 0 && k < kindLimit {
		return kindNames[k]
	}
	return "kind?"
}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k > 0 && k < kindLimit }

// ParseKind returns the Kind with the given short name.
func ParseKind(s string) (Kind, bool) {
	if s == "" {
		return 0, false // kindNames[0] is the unused zero Kind
	}
	return parseName[Kind](kindNames[:], s)
}

// StringID indexes Trace.Strings. StringID 0 is always the empty string.
type StringID uint32

// NoDevice is the Device of an event whose device is not known.
const NoDevice int32 = -1

// Event is one record of a trace. Which fields are meaningful depends on Kind;
// the others are zero (Device is NoDevice when unknown).
type Event struct {
	Kind   Kind
	API    API    // KindCall: which driver API
	Result Result // KindCall: the CUresult it returned
	Object Object // KindObjectName: what kind of object Handle is
	PID    uint32 // process ID
	TID    uint32 // OS thread ID
	Device int32  // device ordinal the event belongs to, or NoDevice
	Start  int64  // nanoseconds on the trace clock (CLOCK_MONOTONIC)
	End    int64  // KindCall and KindSpan: nanoseconds; else equal to Start
	Handle uint64 // the object the call creates, destroys or uses (see API.Info)
	Stream uint64 // the stream argument of stream-ordered calls
	Aux    uint64 // a second object: the pool, event, context or source pointer
	Size   uint64 // bytes
	Flags  uint64 // flags, attribute or error code argument
	Caller uint64 // return address of the driver call in the traced program
	ID     uint64 // KindRangeStart/KindRangeEnd: the NVTX range ID
	Name   StringID
	Domain StringID
	Code   CodeID // KindFrame: the code it ran (Trace.Code)
	// KindFrame also counts, in Size, Aux and ID, what cuprof's hooks did
	// in the activation's self time that left no frame: Python activations
	// and C-level ones pushed and not written, and hook calls that pushed
	// nothing (Meta.Overhead says what each cost; added 2026-12-07).
}

// CodeID indexes Trace.Code. CodeID 0 is "no code"; Trace.Code[0] is a zero
// entry when the table is not empty.
type CodeID uint32

// CodeKind says what a Code entry is.
type CodeKind uint8

const (
	// CodePython is a Python function's code object.
	CodePython CodeKind = 1
	// CodeNative is a C-level callable called from Python: a builtin, a method
	// descriptor, a Cython cyfunction or cdef-class method, a ctypes function.
	CodeNative CodeKind = 2
)

var codeKindNames = [...]string{CodePython: "python", CodeNative: "native"}

// String returns the kind's short name, as used by the text form.
func (k CodeKind) String() string {
	if k.Valid() {
		return codeKindNames[k]
	}
	return "codekind?"
}

// Valid reports whether k is a known code kind.
func (k CodeKind) Valid() bool { return k == CodePython || k == CodeNative }

// ParseCodeKind returns the CodeKind with the given short name.
func ParseCodeKind(s string) (CodeKind, bool) {
	for k, n := range codeKindNames {
		if n != "" && n == s {
			return CodeKind(k), true
		}
	}
	return 0, false
}

// Code is one piece of Python-level code that frames ran. Entries are interned
// by content across the whole trace (processes share them).
type Code struct {
	Kind CodeKind
	// Name is the qualified name ("Device.create_stream", "finalize.__init__",
	// "CFuncPtr cuStreamCreate").
	Name StringID
	// Module is the defining module ("cuda.core._device"), "" when unknown.
	Module StringID
	// File is the source file of Python code, "" for C callables.
	File StringID
	// Line is the first line of the function (co_firstlineno), 0 when unknown.
	Line uint32
}

// FrameFlag bits are carried in a KindFrame event's Flags.
const (
	// FrameUnwound: the activation ended by an exception propagating out of it.
	FrameUnwound uint64 = 1 << 0
	// FrameYielded: the activation ended by yield/await (the generator or
	// coroutine was suspended, not finished).
	FrameYielded uint64 = 1 << 1
	// FrameOpen: the activation had not ended when its thread or process
	// stopped being recorded (interpreter shutdown, exit, a crash); End is the
	// last time it was known to be running.
	FrameOpen uint64 = 1 << 2
)

// Duration returns End-Start, never negative.
func (e *Event) Duration() int64 {
	if e.End > e.Start {
		return e.End - e.Start
	}
	return 0
}

// Process describes one traced process.
type Process struct {
	PID     uint32
	PPID    uint32
	Cmdline []string
	Exe     string
	// Env holds the few environment variables cuprof keeps for attribution
	// (ranks and local ranks of MPI and torchrun, CUDA_VISIBLE_DEVICES).
	Env map[string]string
	// Start and End are the first and last times the process was seen.
	Start, End int64
	// ExitCode is the exit status, -1 when unknown; Signal the killing signal.
	ExitCode int32
	Signal   int32
	// Python says whether Python frames were recorded in this process and
	// how: "" when the process ran no Python, else e.g. "CPython 3.12.1,
	// sys.monitoring, full" or "CPython 3.13.0t: frames off (free-threaded
	// build)". Written once per process, for the "frames are off" notice.
	Python string

	// The fields below say which host the process ran on (added in the
	// job identity work, wire tags 11-16): a job's ranks on many hosts can
	// have the same PID, so a process is known by its host and PID, never
	// its PID alone (analysis.IdentityOf decides who it is). They are
	// empty in traces written before them; readers then take Meta.Host.

	// Host is the host name the process ran under (its UTS namespace's).
	Host string
	// BootID is the kernel's boot id (/proc/sys/kernel/random/boot_id) and
	// MachineID the host's machine id (/etc/machine-id), "" when unknown.
	BootID    string
	MachineID string
	// HostNS names the UTS, PID and network namespaces the process ran in
	// ("uts:4026531838 pid:4026531836 net:4026531840"): hosts simulated
	// on one kernel, or containers, share a boot id but not these.
	HostNS string
	// Container is the container id read from the cgroup path, "" when
	// the process ran in none cuprof recognises.
	Container string
	// OSPID is the process's id as its host saw it when Merge gave it
	// another PID, to keep it apart from a process of another host with
	// the same id; 0 when PID is that id.
	OSPID uint32
}

// HostKey says which host a process ran on, as far as the trace knows: two
// processes with the same PID are the same process only when their
// HostKeys are equal.
func (p *Process) HostKey() string {
	return p.Host + "\x00" + p.BootID + "\x00" + p.MachineID + "\x00" + p.HostNS + "\x00" + p.Container
}

// Thread describes one traced thread.
type Thread struct {
	PID  uint32
	TID  uint32
	Name string
}

// Mapping is a loaded object of a process, for symbolizing Caller addresses.
type Mapping struct {
	PID     uint32
	Start   uint64
	Limit   uint64
	Offset  uint64
	File    string
	BuildID string
}

// Symbol is a resolved function of a mapping (caller symbolization done at
// record time, so reports need not open the traced program's binaries).
type Symbol struct {
	PID  uint32
	Addr uint64 // start address in the process
	Size uint64
	Name string
}

// Drop counts events a thread could not record.
type Drop struct {
	PID    uint32
	TID    uint32
	Events uint64
	Reason string // "buffer full", "export", ...
}

// Clock says how the capture clock was turned into nanoseconds.
type Clock struct {
	Source string  // "tsc" or "monotonic"
	TSCHz  float64 // ticks per second when Source is "tsc"
}

// Overhead is the profiler's own calibrated cost per recorded call.
type Overhead struct {
	// InsideNs is how much each recorded call's duration is inflated by the
	// capture (time between the two clock reads not spent in the driver).
	InsideNs float64
	// AddedNs is the whole time each wrapped call costs the program: the
	// calibrator's measurement, plus InPlaceNs when the program's own
	// calls were measured.
	AddedNs float64
	// InPlaceNs is how much more (or, negative, less) a wrapped call cost
	// outside its recorded duration in the program's own calls than in the
	// calibrator's loop, both measured the same way on a sample of calls
	// (at one in 64 of each thread's recorded calls of its hot wrappers at
	// first, one in 1024 later); AddedNs includes it. 0 when not measured.
	InPlaceNs float64
	// InPlaceCalls is how many shadow calls measured InPlaceNs at the
	// program's calls, each counted as the intervals of 64 recorded calls
	// it stood for (the shim's rate falls from 1 in 64 to 1 in 1024 as a
	// thread goes on; those over 2 us, a preemption or a wait, are left
	// out).
	InPlaceCalls int64
	// PyEventNs is how much each recorded Python event (a frame's entry or
	// exit) inflates the duration of the frames enclosing it; analysis
	// subtracts it per event, as InsideNs is subtracted per call. 0 when the
	// trace has no Python frames.
	PyEventNs float64
	// The rest of the Python hooks' calibration (added 2026-12-07; 0: not
	// measured), each what one thing the hooks do costs the program, in ns:
	// PyCEventNs per event of a written C-level frame (PyEventNs is a
	// Python frame's); PyInsideNs and PyCInsideNs the part of a written
	// frame's two events that lies between its own Start and End (its
	// duration holds it); PyHiddenNs per Python activation pushed and not
	// written, PyCHiddenNs per C-level one, PyLoneNs per hook call that
	// pushed nothing (a KindFrame event counts those in its self time:
	// Size, Aux and ID). Analysis subtracts each where it inflated a frame.
	PyCEventNs  float64
	PyInsideNs  float64
	PyCInsideNs float64
	PyHiddenNs  float64
	PyCHiddenNs float64
	PyLoneNs    float64
}

// GPU describes one device seen by the recording.
type GPU struct {
	Ordinal int32
	Name    string
	UUID    string
}

// Meta is the recording's metadata.
type Meta struct {
	Host          string
	CuprofVersion string
	// Capture says how the trace was captured: "shim" (LD_PRELOAD interposer on
	// the real driver), "sim" (the simulated driver), "cudawrap", "text".
	Capture       string
	DriverVersion int32
	GPUs          []GPU
	Clock         Clock
	Overhead      Overhead
	// WallStart is the Unix time in nanoseconds of trace clock time MonoStart.
	WallStart int64
	MonoStart int64
	Command   []string
	// WhenFull is what the capture did when a ring was full: "wait" (the
	// writer waited for the recorder to make room) or "drop" (the event was
	// dropped and counted in Drops); "" when not said (older traces: drop).
	WhenFull string
	// FullWaits and FullWaitNs are how often writers waited for room and
	// for how long in all (nanoseconds summed over threads).
	FullWaits  uint64
	FullWaitNs int64
	// CaptureRange is how `cuprof record` was told to capture, "" when it
	// recorded everything: "profiler-api", "nvtx:NAME[@DOMAIN]", with
	// ",delay=D", ",duration=T", ",count=N" as given (docs/capture.md).
	// When set, the KindCapture events say when the shim recorded.
	CaptureRange string
	// Sync is what the kernel said of the wall clock that WallStart reads,
	// for putting traces of several hosts on one time axis (added with job
	// identity, tags 22-26).
	Sync ClockSync
}

// ClockSync is the wall clock's relation to true time as the kernel knew
// it (adjtimex) while recording, and a second pair of clock readings at the
// end (the first is WallStart at MonoStart), from which a reader sees how
// far the wall clock moved against the monotonic one.
type ClockSync struct {
	// State is SyncUnknown (not read: older traces), SyncOK (the kernel
	// held the clock synchronised, e.g. by NTP, chrony or PTP) or
	// SyncUnsynced.
	State uint8
	// EstErrorNs and MaxErrorNs are the kernel's estimated and maximum
	// error of the wall clock, the larger of those read at the start and
	// the end.
	EstErrorNs int64
	MaxErrorNs int64
	// WallEnd is the Unix time in nanoseconds at trace clock time MonoEnd,
	// read at the end of the recording; 0 when not read.
	WallEnd int64
	MonoEnd int64
}

// Clock synchronisation states (ClockSync.State); wire numbers.
const (
	SyncUnknown  uint8 = 0
	SyncOK       uint8 = 1
	SyncUnsynced uint8 = 2
)

// Loss describes what a reader could not recover from a damaged file.
type Loss struct {
	Offset int64  // where the first stretch not read starts
	Bytes  int64  // bytes not read, from Offset on (damaged sections and a cut tail)
	Reason string // what was wrong there
	// Events is the number of events known to be lost: the footer's count
	// minus the events read, when damaged sections were skipped and the
	// footer is intact; 0 when unknown or none.
	Events int64
}

// Trace is a whole recording.
type Trace struct {
	Meta      Meta
	Strings   []string // indexed by StringID; Strings[0] == ""
	Processes []Process
	Threads   []Thread
	Mappings  []Mapping
	Symbols   []Symbol
	Drops     []Drop
	// Code is the table KindFrame events refer to (Code[0] is the zero entry).
	Code   []Code
	Events []Event
	// Loss is set by readers when the file was truncated or damaged after
	// some whole batches; what precedes it was read.
	Loss *Loss
}

// String returns the string with the given ID, or "" when out of range.
func (t *Trace) String(id StringID) string {
	if int(id) < len(t.Strings) {
		return t.Strings[id]
	}
	return ""
}

// Intern returns the ID of s, adding it to t.Strings when new. It is linear in
// the number of strings on first use of a trace; build-heavy code should use a
// StringTable instead.
func (t *Trace) Intern(s string) StringID {
	if len(t.Strings) == 0 {
		t.Strings = append(t.Strings, "")
	}
	if s == "" {
		return 0
	}
	for i, x := range t.Strings {
		if x == s {
			return StringID(i)
		}
	}
	t.Strings = append(t.Strings, s)
	return StringID(len(t.Strings) - 1)
}

// StringTable interns strings in O(1).
type StringTable struct {
	ids     map[string]StringID
	Strings []string
}

// NewStringTable returns a table holding only the empty string.
func NewStringTable() *StringTable {
	return &StringTable{ids: map[string]StringID{"": 0}, Strings: []string{""}}
}

// ID returns the ID of s, adding it when new.
func (st *StringTable) ID(s string) StringID {
	if id, ok := st.ids[s]; ok {
		return id
	}
	id := StringID(len(st.Strings))
	st.ids[s] = id
	st.Strings = append(st.Strings, s)
	return id
}

// TotalDrops returns the number of events dropped across all threads.
func (t *Trace) TotalDrops() uint64 {
	var n uint64
	for _, d := range t.Drops {
		n += d.Events
	}
	return n
}

// Process returns the process with the given PID, or nil.
func (t *Trace) Process(pid uint32) *Process {
	for i := range t.Processes {
		if t.Processes[i].PID == pid {
			return &t.Processes[i]
		}
	}
	return nil
}

// SortEvents puts events in trace order: by Start; at equal Start, events with a
// later End (enclosing ones) first; then range openings before calls before
// closings; otherwise the original order is kept.
func SortEvents(ev []Event) {
	sort.SliceStable(ev, func(i, j int) bool {
		a, b := &ev[i], &ev[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.End != b.End {
			return a.End > b.End
		}
		return kindOrder[a.Kind] < kindOrder[b.Kind]
	})
}

// kindOrder breaks ties at equal Start and End: openings, then instants and
// calls, then closings.
var kindOrder = [kindLimit]uint8{
	KindRangePush:  0,
	KindRangeStart: 0,
	KindSpan:       0,
	KindObjectName: 1,
	KindMark:       1,
	KindCall:       1,
	KindRangePop:   2,
	KindRangeEnd:   2,
	KindFrame:      0,
	KindCapture:    0,
	KindCount:      1,
}

// CountedAPI says which API of the table a count event (KindCount) named
// name counts, when the recording passed that API's calls through by
// request; ok is false for a count of a function the table does not know.
func CountedAPI(name string) (a API, ok bool) { return LookupAPI(name) }
