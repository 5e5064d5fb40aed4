package record

import (
	"syscall"
	"unsafe"
)

// futexWake is FUTEX_WAKE of linux/futex.h: not the private form, as the
// word lies in a file the shim's writers map too.
const futexWake = 1

// mapHeader maps the ring's header page (read-only), for wakeWaiters: a
// futex is known to the kernel by the page it lies in, so waking the
// shim's writers takes an address of this process in that page.
func (r *ring) mapHeader() error {
	b, err := syscall.Mmap(int(r.f.Fd()), 0, hdrSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	r.hdrMap = b
	return nil
}

// unmapHeader undoes mapHeader.
func (r *ring) unmapHeader() {
	if r.hdrMap != nil {
		syscall.Munmap(r.hdrMap)
		r.hdrMap = nil
	}
}

// wakeWaiters wakes up to n writers sleeping on the header's `released`
// word for a chunk (cuprof_ring.h: wait_for_chunk), once a poll freed n
// chunks. Without the mapping the writers still wake on their own, within
// half the stall period.
func (r *ring) wakeWaiters(n int) {
	if r.hdrMap == nil || n <= 0 {
		return
	}
	addr := uintptr(unsafe.Pointer(&r.hdrMap[hOffReleased]))
	syscall.Syscall6(syscall.SYS_FUTEX, addr, futexWake, uintptr(n), 0, 0, 0)
}
