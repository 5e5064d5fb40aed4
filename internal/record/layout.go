package record

//go:generate go run ./internal/ringgen -h ../../cudawrap/shim/cuprof_ring.h -o ring_gen.go

// The ring file layout of cudawrap/shim/cuprof_ring.h, the single definition.
// Its #define constants (record kinds, chunk states, clock sources, sizes)
// are generated into ring_gen.go (go generate ./internal/record; a test and
// CI fail when it is stale). TestRingLayoutMatchesC compiles a C program
// printing every offset and size of the header's structs and compares them
// with ringLayout, which names these constants: change both together.
const (
	slotSize     = 32
	chunkHdrSize = 32
	recSize      = slotBytes // a record is 1-3 slots (cuprof_ring.h)

	// struct cuprof_ring_hdr
	hOffMagic         = 0
	hOffVersion       = 8
	hOffHdrSize       = 12
	hOffRecSize       = 16
	hOffChunkSize     = 20
	hOffNChunks       = 24
	hOffMaxThreads    = 28
	hOffClock         = 32
	hOffPID           = 36
	hOffPPID          = 40
	hOffNThreads      = 44
	hOffThreadsOff    = 48
	hOffChunksOff     = 56
	hOffStringsOff    = 64
	hOffStringsSize   = 72
	hOffDataOff       = 80
	hOffFileSize      = 88
	hOffTSC0          = 96
	hOffMono0         = 104
	hOffWall0         = 112
	hOffStringsUsed   = 120
	hOffReleased      = 124
	hOffOverflowDrops = 128
	hOffStringDrops   = 136
	hOffExited        = 144
	hOffCmdlineLen    = 148
	hOffWhenFull      = 152
	hOffPolls         = 156
	hOffWaiters       = 160
	hOffWaits         = 168
	hOffWaitNs        = 176
	hOffExe           = 184
	hOffCmdline       = 696
	hOffEnv           = 2744
	hOffPyEvent       = 3768
	hOffPyCodeDrops   = 3776
	hOffPyStatus      = 3784

	// struct cuprof_thread_slot
	sOffTID     = 0
	sOffPyDrops = 4
	sOffDrops   = 8
	sOffName    = 16

	// struct cuprof_chunk_hdr
	cOffState = 0
	cOffGen   = 4
	cOffTID   = 8
	cOffCount = 12
	cOffSlot  = 16

	// struct cuprof_rec (the head slot)
	rOffStart  = 0
	rOffHandle = 8
	rOffCaller = 16
	rOffDur    = 24
	rOffAPI    = 28
	rOffKind   = 30
	rOffExt    = 31

	// struct cuprof_rec_args
	aOffStream = 0
	aOffAux    = 8
	aOffSize   = 16
	aOffFlags  = 24

	// struct cuprof_rec_detail
	dOffEnd    = 0
	dOffResult = 8
	dOffDevice = 12
	dOffName   = 16
	dOffObject = 20
)

// ringLayout maps "struct.field" of cuprof_ring.h to the Go offset; sizes of
// the structs are under "sizeof struct".
var ringLayout = map[string]int{
	"sizeof cuprof_thread_slot":           slotSize,
	"sizeof cuprof_chunk_hdr":             chunkHdrSize,
	"sizeof cuprof_rec":                   recSize,
	"sizeof cuprof_rec_args":              recSize,
	"sizeof cuprof_rec_detail":            recSize,
	"cuprof_ring_hdr.magic":               hOffMagic,
	"cuprof_ring_hdr.version":             hOffVersion,
	"cuprof_ring_hdr.hdr_size":            hOffHdrSize,
	"cuprof_ring_hdr.rec_size":            hOffRecSize,
	"cuprof_ring_hdr.chunk_size":          hOffChunkSize,
	"cuprof_ring_hdr.nchunks":             hOffNChunks,
	"cuprof_ring_hdr.max_threads":         hOffMaxThreads,
	"cuprof_ring_hdr.clock":               hOffClock,
	"cuprof_ring_hdr.pid":                 hOffPID,
	"cuprof_ring_hdr.ppid":                hOffPPID,
	"cuprof_ring_hdr.nthreads":            hOffNThreads,
	"cuprof_ring_hdr.threads_off":         hOffThreadsOff,
	"cuprof_ring_hdr.chunks_off":          hOffChunksOff,
	"cuprof_ring_hdr.strings_off":         hOffStringsOff,
	"cuprof_ring_hdr.strings_size":        hOffStringsSize,
	"cuprof_ring_hdr.data_off":            hOffDataOff,
	"cuprof_ring_hdr.file_size":           hOffFileSize,
	"cuprof_ring_hdr.tsc0":                hOffTSC0,
	"cuprof_ring_hdr.mono0":               hOffMono0,
	"cuprof_ring_hdr.wall0":               hOffWall0,
	"cuprof_ring_hdr.strings_used":        hOffStringsUsed,
	"cuprof_ring_hdr.released":            hOffReleased,
	"cuprof_ring_hdr.overflow_drops":      hOffOverflowDrops,
	"cuprof_ring_hdr.string_drops":        hOffStringDrops,
	"cuprof_ring_hdr.exited":              hOffExited,
	"cuprof_ring_hdr.cmdline_len":         hOffCmdlineLen,
	"cuprof_ring_hdr.when_full":           hOffWhenFull,
	"cuprof_ring_hdr.polls":               hOffPolls,
	"cuprof_ring_hdr.waiters":             hOffWaiters,
	"cuprof_ring_hdr.waits":               hOffWaits,
	"cuprof_ring_hdr.wait_ns":             hOffWaitNs,
	"cuprof_ring_hdr.exe":                 hOffExe,
	"cuprof_ring_hdr.cmdline":             hOffCmdline,
	"cuprof_ring_hdr.env":                 hOffEnv,
	"cuprof_ring_hdr.py_event_milliticks": hOffPyEvent,
	"cuprof_ring_hdr.py_code_drops":       hOffPyCodeDrops,
	"cuprof_ring_hdr.py_status":           hOffPyStatus,
	"cuprof_thread_slot.tid":              sOffTID,
	"cuprof_thread_slot.py_drops":         sOffPyDrops,
	"cuprof_thread_slot.drops":            sOffDrops,
	"cuprof_thread_slot.name":             sOffName,
	"cuprof_chunk_hdr.state":              cOffState,
	"cuprof_chunk_hdr.gen":                cOffGen,
	"cuprof_chunk_hdr.tid":                cOffTID,
	"cuprof_chunk_hdr.count":              cOffCount,
	"cuprof_chunk_hdr.slot":               cOffSlot,
	"cuprof_rec.start":                    rOffStart,
	"cuprof_rec.handle":                   rOffHandle,
	"cuprof_rec.caller":                   rOffCaller,
	"cuprof_rec.dur":                      rOffDur,
	"cuprof_rec.api":                      rOffAPI,
	"cuprof_rec.kind":                     rOffKind,
	"cuprof_rec.ext":                      rOffExt,
	"cuprof_rec_args.stream":              aOffStream,
	"cuprof_rec_args.aux":                 aOffAux,
	"cuprof_rec_args.size":                aOffSize,
	"cuprof_rec_args.flags":               aOffFlags,
	"cuprof_rec_detail.end":               dOffEnd,
	"cuprof_rec_detail.result":            dOffResult,
	"cuprof_rec_detail.device":            dOffDevice,
	"cuprof_rec_detail.name":              dOffName,
	"cuprof_rec_detail.object":            dOffObject,
}
