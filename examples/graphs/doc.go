// Package graphs holds the eager-against-graph-replay example: csrc/graphs.c
// runs the same steps of small kernel launches four ways (eager launches with
// a capture check before each, one graph instantiated once and replayed, a
// graph captured and instantiated every step, a graph captured every step
// and the one exec updated from it) through the driver API alone, on a real
// GPU or cuprof's simulated driver. The C program is the example; this
// package only holds its test, which records it on the simulated driver and
// checks the graph, capture and library lifecycles and the lint findings.
//
//	cc -O2 -o graphs examples/graphs/csrc/graphs.c -ldl
//	cuprof record --sim -o graphs.cuprof -- ./graphs -n 200 -k 20
//	cuprof report graphs.cuprof && cuprof lint graphs.cuprof
package graphs
