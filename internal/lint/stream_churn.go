package lint

import "github.com/cuprof/cuprof/trace"

// streamChurn: a stream made and destroyed per call (the
// TemporaryStorageBuffer case) costs ~4-7 us each on an H200.
var streamChurn = churn{
	id:   "stream-churn",
	doc:  "streams created and destroyed within 1 ms, many times, at one site",
	noun: "stream",
	kind: trace.ObjectStream,
	fix: "create the stream once and reuse it, or let the caller pass the stream in " +
		"(an API that takes stream= instead of making its own)",
}
