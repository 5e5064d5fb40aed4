// Package collectortest checks cuprof's OTLP exporter against a real
// OpenTelemetry Collector otlpreceiver. It is its own module so that the
// collector's dependencies never reach cuprof's go.mod.
package collectortest
