// Package driver is cudawrap's only cgo package: it opens libcuda with dlopen
// (never links it), resolves the functions cudawrap uses, and runs each
// cudawrap operation as one C call that also takes the span timestamps when the
// cuprof shim is recording. Handles cross into Go as uint64 values; unsafe is
// confined to *_unsafe.go files.
package driver

/*
#cgo CFLAGS: -O2 -I${SRCDIR}/../../shim
#cgo LDFLAGS: -ldl
#include "driver.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
)

// Result is one operation's outcome: the CUresult, its values and the span
// bookkeeping (Start is 0 when not recording).
type Result struct {
	RC      int32
	V, V2   uint64
	F       float64
	Start   uint64
	CallEnd uint64
}

func res(r C.cw_res) Result {
	return Result{RC: int32(r.rc), V: uint64(r.v), V2: uint64(r.v2), F: float64(r.f),
		Start: uint64(r.start), CallEnd: uint64(r.call_end)}
}

// ErrOpen wraps every failure to open the library.
var ErrOpen = errors.New("cannot open the CUDA driver library")

var (
	openMu   sync.Mutex
	openPath string
)

// Open dlopens the driver at path and resolves its functions. Only one
// library can be open per process; opening the same path again is a no-op.
func Open(path string) error {
	openMu.Lock()
	defer openMu.Unlock()
	if openPath != "" {
		if openPath != path {
			return fmt.Errorf("%w: %s is already open, cannot also open %s", ErrOpen, openPath, path)
		}
		return nil
	}
	if msg := open(path); msg != "" {
		return fmt.Errorf("%w: %s", ErrOpen, msg)
	}
	openPath = path
	return nil
}

// SpansAvailable reports whether the cuprof shim's span ABI was found.
func SpansAvailable() bool { return C.cw_spans_available() != 0 }

// SetIDs sets the interned ids of the span domain and the check span's name.
func SetIDs(domain, check uint32) { C.cw_set_ids(C.uint32_t(domain), C.uint32_t(check)) }

// End ends an operation that started at r.Start: its span named name and its
// check span from r.CallEnd. A no-op when r.Start is 0.
func End(r *Result, name uint32) {
	if r.Start != 0 {
		C.cw_op_end(C.uint64_t(r.Start), C.uint64_t(r.CallEnd), C.uint32_t(name))
	}
}

// Now returns the recording clock, or 0 when not recording.
func Now() uint64 { return uint64(C.cw_now()) }

// Span records a complete span on the calling thread (no-op when start is 0).
func Span(name uint32, start, end uint64) {
	C.cw_span(C.uint32_t(name), C.uint64_t(start), C.uint64_t(end))
}

// ErrorName and ErrorString return the driver's name and text for rc ("" if unknown).
func ErrorName(rc int32) string {
	if s := C.cw_error_name(C.int32_t(rc)); s != nil {
		return C.GoString(s)
	}
	return ""
}

// ErrorString returns the driver's description of rc ("" if unknown).
func ErrorString(rc int32) string {
	if s := C.cw_error_string(C.int32_t(rc)); s != nil {
		return C.GoString(s)
	}
	return ""
}

func Init() Result                 { return res(C.cw_init()) }
func DriverVersion() Result        { return res(C.cw_driver_version()) }
func DeviceGet(ordinal int) Result { return res(C.cw_device_get(C.int(ordinal))) }
func DeviceCount() Result          { return res(C.cw_device_count()) }

// DeviceName returns the result and the device's name.
func DeviceName(dev int) (Result, string) {
	var n C.cw_name
	r := res(C.cw_device_name(C.int(dev), &n))
	return r, C.GoString(&n.s[0])
}

func DeviceAttribute(dev, attr int) Result {
	return res(C.cw_device_attribute(C.int(dev), C.int(attr)))
}
func DeviceTotalMem(dev int) Result { return res(C.cw_device_total_mem(C.int(dev))) }

// DeviceSetCurrent retains dev's primary context when cached is 0, then makes
// it current; V is the primary context.
func DeviceSetCurrent(dev int, cached uint64) Result {
	return res(C.cw_device_set_current(C.int(dev), C.uint64_t(cached)))
}

func PrimaryRetain(dev int) Result  { return res(C.cw_primary_retain(C.int(dev))) }
func PrimaryRelease(dev int) Result { return res(C.cw_primary_release(C.int(dev))) }
func CtxCreate(dev int, flags uint32) Result {
	return res(C.cw_ctx_create(C.int(dev), C.unsigned(flags)))
}
func CtxDestroy(ctx uint64) Result    { return res(C.cw_ctx_destroy(C.uint64_t(ctx))) }
func CtxSetCurrent(ctx uint64) Result { return res(C.cw_ctx_set_current(C.uint64_t(ctx))) }
func CtxGetCurrent() Result           { return res(C.cw_ctx_get_current()) }
func CtxSync(ctx uint64) Result       { return res(C.cw_ctx_sync(C.uint64_t(ctx))) }

// StreamCreate creates a stream in ctx (made current first if it is not);
// withPriority selects cuStreamCreateWithPriority.
func StreamCreate(ctx uint64, flags uint32, priority int, withPriority bool) Result {
	wp := C.int(0)
	if withPriority {
		wp = 1
	}
	return res(C.cw_stream_create(C.uint64_t(ctx), C.unsigned(flags), C.int(priority), wp))
}

func StreamDestroy(s uint64) Result { return res(C.cw_stream_destroy(C.uint64_t(s))) }
func StreamSync(s uint64) Result    { return res(C.cw_stream_sync(C.uint64_t(s))) }
func StreamQuery(s uint64) Result   { return res(C.cw_stream_query(C.uint64_t(s))) }
func EventCreate(ctx uint64, flags uint32) Result {
	return res(C.cw_event_create(C.uint64_t(ctx), C.unsigned(flags)))
}
func EventDestroy(e uint64) Result    { return res(C.cw_event_destroy(C.uint64_t(e))) }
func EventRecord(e, s uint64) Result  { return res(C.cw_event_record(C.uint64_t(e), C.uint64_t(s))) }
func EventSync(e uint64) Result       { return res(C.cw_event_sync(C.uint64_t(e))) }
func EventQuery(e uint64) Result      { return res(C.cw_event_query(C.uint64_t(e))) }
func EventElapsed(a, b uint64) Result { return res(C.cw_event_elapsed(C.uint64_t(a), C.uint64_t(b))) }

// AllocAsync allocates size bytes on stream s from pool (0: the device's
// current pool), with ctx made current first if it is not.
func AllocAsync(ctx, size, pool, s uint64) Result {
	return res(C.cw_alloc_async(C.uint64_t(ctx), C.uint64_t(size), C.uint64_t(pool), C.uint64_t(s)))
}

func FreeAsync(ctx, ptr, s uint64) Result {
	return res(C.cw_free_async(C.uint64_t(ctx), C.uint64_t(ptr), C.uint64_t(s)))
}
func MemInfo(ctx uint64) Result      { return res(C.cw_mem_info(C.uint64_t(ctx))) }
func PoolDefault(dev int) Result     { return res(C.cw_pool_default(C.int(dev))) }
func PoolCurrent(dev int) Result     { return res(C.cw_pool_current(C.int(dev))) }
func PoolCreate(dev int) Result      { return res(C.cw_pool_create(C.int(dev))) }
func PoolDestroy(p uint64) Result    { return res(C.cw_pool_destroy(C.uint64_t(p))) }
func PoolTrim(p, keep uint64) Result { return res(C.cw_pool_trim(C.uint64_t(p), C.uint64_t(keep))) }
func PoolSet(p uint64, attr int, v uint64) Result {
	return res(C.cw_pool_set(C.uint64_t(p), C.int(attr), C.uint64_t(v)))
}
func PoolGet(p uint64, attr int) Result { return res(C.cw_pool_get(C.uint64_t(p), C.int(attr))) }
