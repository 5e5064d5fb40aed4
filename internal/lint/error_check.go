package lint

import (
	"fmt"
	"github.com/cuprof/cuprof/analysis"

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
	Site
	api    trace.API
	result trace.Result
}

type lookupKey struct {
	Site
	api trace.API
}

func (errorCheck) Check(f *Facts) []Finding {
	t := f.Trace
	fails := newGroups[failKey]()
	lookups := newGroups[lookupKey]()
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.KindCall {
			continue
		}
		if analysis.IsError(e) {
			fails.add(failKey{f.SiteOf(i), e.API, e.Result}, i)
		}
		if e.API == trace.APIGetErrorName || e.API == trace.APIGetErrorString {
			lookups.add(lookupKey{f.SiteOf(i), e.API}, i)
		}
	}
	var out []Finding
	for _, k := range fails.order {
		evs := fails.by[k]
		if len(evs) < errorRepeatMin {
			continue
		}
		var cost int64
		for _, i := range evs {
			cost += f.CallNs(i)
		}
		fd := f.finding(errorCheck{}.ID(), Warning, evs[0], evs[0])
		fd.Count, fd.CostNs = len(evs), cost
		fd.Message = fmt.Sprintf("%s failed %d times at one site with %s", k.api, len(evs), k.result)
		fd.Fix = fmt.Sprintf("fix the cause of %s, or check the condition once instead of calling %s and "+
			"ignoring the failure", k.result, k.api)
		out = append(out, fd)
	}
	for _, k := range lookups.order {
		evs := lookups.by[k]
		if len(evs) < lookupMin {
			continue
		}
		var cost int64
		success := 0
		for _, i := range evs {
			cost += f.CallNs(i)
			if t.Events[i].Flags == 0 {
				success++
			}
		}
		fd := f.finding(errorCheck{}.ID(), Info, evs[0], evs[0])
		fd.Count, fd.CostNs = len(evs), cost
		fd.Message = fmt.Sprintf("%d %s lookups at one site, %d of them for CUDA_SUCCESS", len(evs), k.api, success)
		fd.Fix = "look the error name up only after a call failed (compare the CUresult with CUDA_SUCCESS first), " +
			"or cache the names"
		out = append(out, fd)
	}
	return out
}
