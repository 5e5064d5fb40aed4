package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// cuCtxGetDevice storm: a thread asking which device its context is on
// again and again while its context stays the same (PyTorch asks about ten
// times per kernel launch, from its device guards and current-device
// checks). A call is a repeat when the thread's previous cuCtxGetDevice
// asked about the same context and no call changed the thread's context
// in between (the analysis's Event.ContextGen). At least stormMin repeats at one site make a finding;
// it says how many there were per kernel or graph launch of the process.
// Cost: the repeats.
const stormMin = 100

type getDeviceStorm struct{}

var _ Rule = getDeviceStorm{}

func (getDeviceStorm) ID() string { return "get-device-storm" }

func (getDeviceStorm) Doc() string {
	return "cuCtxGetDevice asked again and again on a thread whose context did not change"
}

type askedDevice struct {
	ctx   uint64
	gen   uint32 // the analysis's Event.ContextGen when asked
	asked bool
}

type stormCheck struct {
	f        *Facts
	by       *groups[site, callsAcc]
	threads  map[[2]uint32]*askedDevice
	launches map[uint32]int // kernel and graph launches per process
}

func (getDeviceStorm) Check(f *Facts) Check {
	return &stormCheck{f: f, by: newGroups[site, callsAcc](), threads: map[[2]uint32]*askedDevice{},
		launches: map[uint32]int{}}
}

func (c *stormCheck) Event(e *Event) {
	if e.Kind != trace.KindCall || !e.Result.OK() {
		return
	}
	th := [2]uint32{e.PID, e.TID}
	switch e.API {
	case trace.APILaunchKernel, trace.APILaunchKernelEx, trace.APIGraphLaunch:
		c.launches[e.PID]++
	case trace.APICtxGetDevice:
		ctx := e.Handle // cuCtxGetDevice_v2's context; 0: the current one
		if ctx == 0 {
			ctx = e.Context
		}
		t := c.threads[th]
		if t == nil {
			t = &askedDevice{}
			c.threads[th] = t
		}
		repeat := t.asked && t.ctx == ctx && t.gen == e.ContextGen
		t.ctx, t.gen, t.asked = ctx, e.ContextGen, true
		if !repeat {
			return
		}
		cl := callOf(e)
		a, fresh := c.by.get(c.f.site(cl))
		a.add(cl, cl.ns, fresh)
	}
}

func (c *stormCheck) Findings() []Finding {
	var out []Finding
	for _, site := range c.by.order {
		a := c.by.by[site]
		if a.count < stormMin {
			continue
		}
		fd := c.f.finding(getDeviceStorm{}.ID(), Info, a.first, a.first)
		fd.Count, fd.CostNs = a.count, a.cost
		per := ""
		if n := c.launches[site.PID]; n > 0 {
			per = fmt.Sprintf(", %.1f per kernel or graph launch of the process", float64(a.count)/float64(n))
		}
		fd.Message = fmt.Sprintf("%s at one site asked for the device of a context that had not changed "+
			"since the thread last asked (%s each%s)", plural(a.count, "cuCtxGetDevice call"),
			quantity.Duration(float64(a.cost)/float64(a.count)), per)
		fd.Fix = "keep the current device per thread and refresh it only when the thread's context changes " +
			"(cuCtxSetCurrent, push/pop); in PyTorch the calls come from device guards around every op: keep a " +
			"step on one device and capture it in a CUDA graph (torch.cuda.graph), whose replay makes none"
		out = append(out, fd)
	}
	return out
}
