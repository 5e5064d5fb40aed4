package flame

import "github.com/cuprof/cuprof/analysis"

// callerLoc returns the location of a caller return address, named by the
// analysis (analysis.CallSite.Name), in the mapping holding it.
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
	if b.sites == nil {
		b.sites = analysis.SitesOf(b.tr)
	}
	cs := b.sites.Resolve(pid, addr)
	l := loc{kind: frameCaller, addr: addr, mapping: cs.Mapping, name: cs.Name(), file: cs.File}
	id := b.addLoc(l)
	m[addr] = id
	return id
}
