// Package fleettest runs cuprof's aggregates (record --otlp-signals=metrics)
// through a real OpenTelemetry Collector pipeline: an agent per simulated
// host, a gateway tier of two Collectors behind the load-balancing
// exporter, and a backend Collector whose file exporter the tests read.
// The Collectors are cmd/fleetcol, built from the Collector's Go modules in
// this module of its own so that they never reach cuprof's go.mod.
package fleettest
