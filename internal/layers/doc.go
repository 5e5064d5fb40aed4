// Package layers holds no code: its test keeps the module's import graph
// layered, so that no package below the CLI imports one above it.
//
// The layers, lowest first (a package may import one of a lower layer, or
// one of its own group):
//
//  0. base: small helpers that import nothing of the module (output,
//     quantile, quantity, table, handoff, golden, cbuild, grpcgzip,
//     pprofui, the generators apigen and ringgen, the embedded Python
//     examples, the driver loader of cudawrap).
//  1. trace: the record model and its encodings (trace, tracetest, hostid).
//  2. analysis (the semantic layer) and, beside it in its own group, capture
//     (cudawrap, its shim and simulated driver, internal/record): capture
//     never imports the analysis, nor the analysis capture.
//  3. consumers: flame, exporters/..., internal/lint, internal/report.
//  4. compositions of consumers: internal/diff (flame and report), and
//     internal/seed (the demo's programs, on cudawrap).
//  5. programs: cmd/..., examples/..., bench/....
//
// A new package is classified in layers_test.go, or the test fails.
package layers
