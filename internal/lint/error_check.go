package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/trace"
)

// Error-check cost, two patterns:
//   - a driver call failing repeatedly: errorRepeatMin failures of one API
//     with one result at one site (CUDA_ERROR_NOT_READY from the query APIs
//     is a status and does not count). Cost: the failed calls.
//   - error-name lookups in a loop: lookupMin cuGetErrorName or
//     cuGetErrorString calls at one site; a check macro that looks the name up
//     before knowing the call failed shows as lookups of CUDA_SUCCESS (0).
//     Cost: the lookups.
const (
	errorRepeatMin = 3
	lookupMin      = 10
)

type errorCheck struct{}

var _ Rule = errorCheck{}

func (errorCheck) ID() string { return "error-check" }

func (errorCheck) Doc() string {
	return "driver calls failing repeatedly, and error-name lookups in a loop"
}

type failKey struct {
	site
	api    trace.API
	result trace.Result
}

type lookupKey struct {
	site
	api trace.API
}

type lookupAcc struct {
	callsAcc
	success int // lookups of CUDA_SUCCESS
}

type errorCheckCheck struct {
	f       *Facts
	fails   *groups[failKey, callsAcc]
	lookups *groups[lookupKey, lookupAcc]
}

func (errorCheck) Check(f *Facts) Check {
	return &errorCheckCheck{f: f, fails: newGroups[failKey, callsAcc](), lookups: newGroups[lookupKey, lookupAcc]()}
}

func (c *errorCheckCheck) Event(e *Event) {
	if e.Kind != trace.KindCall {
		return
	}
	if e.Error {
		cl := callOf(e)
		a, fresh := c.fails.get(failKey{c.f.site(cl), e.API, e.Result})
		a.add(cl, cl.ns, fresh)
	}
	if e.API == trace.APIGetErrorName || e.API == trace.APIGetErrorString {
		cl := callOf(e)
		a, fresh := c.lookups.get(lookupKey{c.f.site(cl), e.API})
		a.add(cl, cl.ns, fresh)
		if e.Flags == 0 {
			a.success++
		}
	}
}

func (c *errorCheckCheck) Findings() []Finding {
	f := c.f
	var out []Finding
	for _, k := range c.fails.order {
		a := c.fails.by[k]
		if a.count < errorRepeatMin {
			continue
		}
		fd := f.finding(errorCheck{}.ID(), Warning, a.first, a.first)
		fd.Count, fd.CostNs = a.count, a.cost
		fd.Message = fmt.Sprintf("%s failed %d times at one site with %s", k.api, a.count, k.result)
		fd.Fix = fmt.Sprintf("fix the cause of %s, or check the condition once instead of calling %s and "+
			"ignoring the failure", k.result, k.api)
		out = append(out, fd)
	}
	for _, k := range c.lookups.order {
		a := c.lookups.by[k]
		if a.count < lookupMin {
			continue
		}
		fd := f.finding(errorCheck{}.ID(), Info, a.first, a.first)
		fd.Count, fd.CostNs = a.count, a.cost
		fd.Message = fmt.Sprintf("%d %s lookups at one site, %d of them for CUDA_SUCCESS", a.count, k.api, a.success)
		fd.Fix = "look the error name up only after a call failed (compare the CUresult with CUDA_SUCCESS first), " +
			"or cache the names"
		out = append(out, fd)
	}
	return out
}
