package record

//go:generate go run ./internal/ringgen -h ../../cudawrap/shim/cuprof_ring.h -o ring_gen.go

// The ring file layout is cudawrap/shim/cuprof_ring.h, the single
// definition: ringgen generates ring_gen.go from it (go generate
// ./internal/record; a test and CI fail when it is stale): its #define
// constants, and for every struct the offset of each field
// (hOff*: struct cuprof_ring_hdr, sOff*: cuprof_thread_slot, cOff*:
// cuprof_chunk_hdr, rOff*: cuprof_rec, aOff*: cuprof_rec_args, dOff*:
// cuprof_rec_detail), its size and ringLayout, which
// TestRingLayoutMatchesC compares with what the C compiler lays out.
const (
	slotSize     = sizeThreadSlot
	chunkHdrSize = sizeChunkHdr
	recSize      = slotBytes // a record is 1-3 slots (cuprof_ring.h)
)
