package lint

import "github.com/cuprof/cuprof/trace"

// eventChurn: events are cheaper than streams (~170-400 ns per
// create+destroy on an H200) but churn in hot paths adds up.
var eventChurn = churn{
	id:   "event-churn",
	doc:  "events created and destroyed within 1 ms, many times, at one site",
	noun: "event",
	kind: trace.ObjectEvent,
	fix: "create events once and re-record them (cuEventRecord reuses an event); " +
		"create them with CU_EVENT_DISABLE_TIMING when they only order work",
}
