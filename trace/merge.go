package trace

import (
	"fmt"
	"strings"
)

// Merge combines traces of several processes (or several files of one
// recording) into one trace. The inputs are not modified.
//
//   - Strings are re-interned into one table and events' Name and Domain
//     remapped to it; code entries likewise (by content), and frames' Code.
//   - Processes are keyed by host and PID, never PID alone: two records
//     are one process when their PIDs, hosts (Process.HostKey, the host
//     name taken from the input's Meta.Host where the record has none and
//     the inputs are of several hosts) and the environment variables both
//     kept agree. Then the first trace's record wins, its zero fields
//     filled from later ones, Start the earliest and End the latest. A
//     process of another host (or another rank) whose PID is taken gets a
//     PID of its own (from 1<<30 up: past any Linux pid, within Perfetto's
//     int32) in all its events and tables, and keeps its id in OSPID.
//     Threads are keyed by PID/TID (first non-empty name wins). Mappings
//     and symbols are concatenated without exact duplicates.
//   - Drops of the same thread and reason are summed.
//   - Meta is the first trace's, with: Host the distinct hosts joined by ","
//     in input order; GPUs the union (by ordinal, name and UUID); empty
//     fields taken from later traces; Overhead the mean of the inputs'
//     overheads weighted by their number of calls; WallStart/MonoStart the
//     first trace's; FullWaits and FullWaitNs summed, WhenFull "mixed" when
//     the inputs differ, CaptureRange the inputs' settings joined.
//   - Events: times are on CLOCK_MONOTONIC, shared by processes of one host,
//     so they are kept as they are. A trace from another host (different
//     Meta.Host, both WallStart set) is shifted onto the first trace's clock
//     through the wall-clock anchors (WallStart at MonoStart).
//   - Loss: when inputs were damaged, Loss sums the bytes lost, keeps the
//     first offset and joins the reasons, prefixed with the input's index.
//
// The events of the result are in SortEvents order.
func Merge(traces ...*Trace) *Trace {
	out := &Trace{}
	st := NewStringTable()
	codeIndex := map[Code]CodeID{}
	procIndex := map[uint32][]int{} // OS pid -> its processes in out
	pidTaken := map[uint32]bool{}
	nextPID := uint32(1 << 30) // past any pid_max (1<<22), within int32 (Perfetto)
	threadIndex := map[threadKey]int{}
	type dropKey struct {
		pid, tid uint32
		reason   string
	}
	dropIndex := map[dropKey]int{}
	seenMapping := map[Mapping]bool{}
	seenSymbol := map[Symbol]bool{}
	type gpuKey struct {
		ordinal    int32
		name, uuid string
	}
	seenGPU := map[gpuKey]bool{}
	var hosts []string
	var inside, added, inPlace, weight float64
	var inPlaceCalls int64
	var py pyCosts
	var pyWeight float64 // the Python costs weighted by frames
	var lossReasons []string
	n := 0
	for _, t := range traces {
		n += len(t.Events)
	}
	out.Events = make([]Event, 0, n)
	// Inputs of several hosts: each process keeps its input's host name.
	manyHosts := false
	var seenHost *string
	for _, t := range traces {
		switch {
		case t == nil:
		case seenHost == nil:
			seenHost = &t.Meta.Host
		case t.Meta.Host != *seenHost:
			manyHosts = true
		}
	}
	first := true
	var anchor int64 // first trace's WallStart - MonoStart
	var firstHost string
	var firstWall int64
	for ti, t := range traces {
		if t == nil {
			continue
		}
		m := &t.Meta
		if first {
			out.Meta = *m
			out.Meta.GPUs = nil
			out.Meta.Host = ""
			out.Meta.Command = append([]string(nil), m.Command...)
			anchor = m.WallStart - m.MonoStart
			firstHost, firstWall = m.Host, m.WallStart
		} else {
			om := &out.Meta
			fillString(&om.CuprofVersion, m.CuprofVersion)
			fillString(&om.Capture, m.Capture)
			fillString(&om.Clock.Source, m.Clock.Source)
			if om.DriverVersion == 0 {
				om.DriverVersion = m.DriverVersion
			}
			if om.Clock.TSCHz == 0 {
				om.Clock.TSCHz = m.Clock.TSCHz
			}
			if om.WallStart == 0 && om.MonoStart == 0 {
				om.WallStart, om.MonoStart = m.WallStart, m.MonoStart
			}
			if len(om.Command) == 0 {
				om.Command = append([]string(nil), m.Command...)
			}
			// Waits add up; the policy is kept when all say the same.
			if om.WhenFull != m.WhenFull {
				om.WhenFull = "mixed"
			}
			om.FullWaits += m.FullWaits
			om.FullWaitNs += m.FullWaitNs
			if om.CaptureRange != m.CaptureRange {
				om.CaptureRange = mergeCaptureRange(om.CaptureRange, m.CaptureRange)
			}
		}
		if m.Host != "" && !contains(hosts, m.Host) {
			hosts = append(hosts, m.Host)
		}
		for _, g := range m.GPUs {
			k := gpuKey{g.Ordinal, g.Name, g.UUID}
			if !seenGPU[k] {
				seenGPU[k] = true
				out.Meta.GPUs = append(out.Meta.GPUs, g)
			}
		}
		var calls float64
		for i := range t.Events {
			if t.Events[i].Kind == KindCall {
				calls++
			}
		}
		if calls == 0 {
			calls = 1
		}
		if m.Overhead.InsideNs != 0 || m.Overhead.AddedNs != 0 {
			inside += m.Overhead.InsideNs * calls
			added += m.Overhead.AddedNs * calls
			inPlace += m.Overhead.InPlaceNs * calls
			inPlaceCalls += m.Overhead.InPlaceCalls
			weight += calls
		}
		if m.Overhead.PyEventNs != 0 {
			var frames float64
			for i := range t.Events {
				if t.Events[i].Kind == KindFrame {
					frames++
				}
			}
			frames = max(frames, 1)
			py.add(m.Overhead, frames)
			pyWeight += frames
		}

		// Strings and events.
		remap := make([]StringID, len(t.Strings))
		for i, s := range t.Strings {
			remap[i] = st.ID(s)
		}
		codeRemap := make([]CodeID, len(t.Code))
		for i, c := range t.Code {
			if i == 0 {
				continue
			}
			c.Name, c.Module, c.File = remapID(remap, c.Name), remapID(remap, c.Module), remapID(remap, c.File)
			id, ok := codeIndex[c]
			if !ok {
				if len(out.Code) == 0 {
					out.Code = []Code{{}}
				}
				id = CodeID(len(out.Code))
				codeIndex[c] = id
				out.Code = append(out.Code, c)
			}
			codeRemap[i] = id
		}
		var shift int64
		if !first && m.Host != "" && firstHost != "" && m.Host != firstHost && m.WallStart != 0 && firstWall != 0 {
			shift = (m.WallStart - m.MonoStart) - anchor
		}
		// Processes first: they decide which PIDs move.
		var pidMap map[uint32]uint32 // this input's PID -> out's, where they differ
		for _, p := range t.Processes {
			p.Start += shift
			p.End += shift
			if p.Host == "" && manyHosts {
				p.Host = m.Host
			}
			osPID := p.PID
			if p.OSPID != 0 {
				osPID = p.OSPID
			}
			j := -1
			for _, k := range procIndex[osPID] {
				if sameProcess(&out.Processes[k], &p) {
					j = k
					break
				}
			}
			if j < 0 {
				key := p.PID
				if pidTaken[key] {
					for pidTaken[nextPID] {
						nextPID++
					}
					key = nextPID
					p.OSPID = osPID
				}
				if key != p.PID {
					if pidMap == nil {
						pidMap = map[uint32]uint32{}
					}
					pidMap[p.PID] = key
					p.PID = key
				}
				pidTaken[key] = true
				procIndex[osPID] = append(procIndex[osPID], len(out.Processes))
				p.Cmdline = append([]string(nil), p.Cmdline...)
				p.Env = cloneEnv(p.Env)
				out.Processes = append(out.Processes, p)
				continue
			}
			q := &out.Processes[j]
			if q.PID != p.PID {
				if pidMap == nil {
					pidMap = map[uint32]uint32{}
				}
				pidMap[p.PID] = q.PID
			}
			if q.PPID == 0 {
				q.PPID = p.PPID
			}
			fillString(&q.Exe, p.Exe)
			fillString(&q.BootID, p.BootID)
			fillString(&q.MachineID, p.MachineID)
			fillString(&q.HostNS, p.HostNS)
			fillString(&q.Container, p.Container)
			if len(q.Cmdline) == 0 {
				q.Cmdline = append([]string(nil), p.Cmdline...)
			}
			for k, v := range p.Env {
				if _, ok := q.Env[k]; !ok {
					if q.Env == nil {
						q.Env = map[string]string{}
					}
					q.Env[k] = v
				}
			}
			q.Start = min(q.Start, p.Start)
			q.End = max(q.End, p.End)
			if q.ExitCode == 0 {
				q.ExitCode = p.ExitCode
			}
			if q.Signal == 0 {
				q.Signal = p.Signal
			}
		}
		mapPID := func(pid uint32) uint32 {
			if to, ok := pidMap[pid]; ok {
				return to
			}
			return pid
		}
		for i := range t.Events {
			e := t.Events[i]
			e.Name = remapID(remap, e.Name)
			e.Domain = remapID(remap, e.Domain)
			if int(e.Code) < len(codeRemap) {
				e.Code = codeRemap[e.Code]
			} else {
				e.Code = 0
			}
			e.Start += shift
			e.End += shift
			if pidMap != nil {
				e.PID = mapPID(e.PID)
			}
			out.Events = append(out.Events, e)
		}

		// Tables.
		for _, th := range t.Threads {
			th.PID = mapPID(th.PID)
			k := threadKey{th.PID, th.TID}
			if j, ok := threadIndex[k]; ok {
				fillString(&out.Threads[j].Name, th.Name)
				continue
			}
			threadIndex[k] = len(out.Threads)
			out.Threads = append(out.Threads, th)
		}
		for _, mp := range t.Mappings {
			mp.PID = mapPID(mp.PID)
			if !seenMapping[mp] {
				seenMapping[mp] = true
				out.Mappings = append(out.Mappings, mp)
			}
		}
		for _, s := range t.Symbols {
			s.PID = mapPID(s.PID)
			if !seenSymbol[s] {
				seenSymbol[s] = true
				out.Symbols = append(out.Symbols, s)
			}
		}
		for _, d := range t.Drops {
			d.PID = mapPID(d.PID)
			k := dropKey{d.PID, d.TID, d.Reason}
			if j, ok := dropIndex[k]; ok {
				out.Drops[j].Events += d.Events
				continue
			}
			dropIndex[k] = len(out.Drops)
			out.Drops = append(out.Drops, d)
		}
		if t.Loss != nil {
			if out.Loss == nil {
				out.Loss = &Loss{Offset: t.Loss.Offset}
			}
			out.Loss.Bytes += t.Loss.Bytes
			lossReasons = append(lossReasons, fmt.Sprintf("input %d: %s", ti, t.Loss.Reason))
		}
		first = false
	}
	out.Meta.Host = strings.Join(hosts, ",")
	firstCost := out.Meta.Overhead // the first trace's
	if weight > 0 {
		out.Meta.Overhead = Overhead{InsideNs: inside / weight, AddedNs: added / weight,
			InPlaceNs: inPlace / weight, InPlaceCalls: inPlaceCalls}
	} else {
		out.Meta.Overhead = Overhead{}
	}
	if pyWeight == 0 {
		py, pyWeight = pyCosts{}, 1
		py.add(firstCost, 1)
	}
	py.set(&out.Meta.Overhead, pyWeight)
	if out.Loss != nil {
		out.Loss.Reason = strings.Join(lossReasons, "; ")
	}
	out.Strings = st.Strings
	out.Events = sortRuns(out.Events)
	return out
}

func remapID(remap []StringID, id StringID) StringID {
	if int(id) < len(remap) {
		return remap[id]
	}
	return 0
}

func fillString(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func cloneEnv(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// threadKey names a thread of a process.
type threadKey struct{ pid, tid uint32 }

// mergeCaptureRange joins two traces' capture settings: the one that was set
// when the other recorded everything (""), else both, joined by "; ".
func mergeCaptureRange(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// sameProcess says whether a and b, both with a's OS pid, are records of one
// process: of one host as far as both know it, and with no environment
// variable kept by both that differs (two ranks on hosts that look alike).
func sameProcess(a, b *Process) bool {
	if a.HostKey() != b.HostKey() {
		return false
	}
	for k, v := range b.Env {
		if w, ok := a.Env[k]; ok && w != v {
			return false
		}
	}
	return true
}

// pyCosts sums the Python hooks' calibrated costs of merged traces, each
// weighted by its trace's frames.
type pyCosts [7]float64

func pyCostFields(o *Overhead) [7]*float64 {
	return [7]*float64{&o.PyEventNs, &o.PyCEventNs, &o.PyInsideNs, &o.PyCInsideNs, &o.PyHiddenNs, &o.PyCHiddenNs, &o.PyLoneNs}
}

func (p *pyCosts) add(o Overhead, weight float64) {
	for i, f := range pyCostFields(&o) {
		p[i] += *f * weight
	}
}

// set stores the weighted means in o.
func (p *pyCosts) set(o *Overhead, weight float64) {
	for i, f := range pyCostFields(o) {
		*f = p[i] / weight
	}
}
