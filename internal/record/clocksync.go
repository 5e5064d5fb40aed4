package record

import (
	"golang.org/x/sys/unix"

	"github.com/cuprof/cuprof/trace"
)

// clockSync is what the kernel says of the wall clock now (adjtimex, read
// only): synchronised or not, and its estimated and maximum errors.
func clockSync() trace.ClockSync {
	var tx unix.Timex // Modes 0: read, change nothing
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return trace.ClockSync{}
	}
	s := trace.ClockSync{State: trace.SyncOK, EstErrorNs: tx.Esterror * 1000, MaxErrorNs: tx.Maxerror * 1000}
	if state == unix.TIME_ERROR || tx.Status&unix.STA_UNSYNC != 0 {
		s.State = trace.SyncUnsynced
	}
	return s
}

// worseSync joins the readings at the start and the end: unsynced if either
// was, the larger errors, and the end's pair of clock readings.
func worseSync(start, end trace.ClockSync, wallEnd, monoEnd uint64) trace.ClockSync {
	s := end
	if start.State == trace.SyncUnknown || end.State == trace.SyncUnknown {
		s.State = trace.SyncUnknown
	} else if start.State == trace.SyncUnsynced {
		s.State = trace.SyncUnsynced
	}
	s.EstErrorNs = max(start.EstErrorNs, end.EstErrorNs)
	s.MaxErrorNs = max(start.MaxErrorNs, end.MaxErrorNs)
	s.WallEnd, s.MonoEnd = int64(wallEnd), int64(monoEnd)
	return s
}
