#!/usr/bin/env bash
# The fleet pipeline tests (issue 39): record --otlp-signals=metrics into a
# real OpenTelemetry Collector pipeline (an agent per simulated host, two
# gateways behind the load-balancing exporter, a backend with a file
# exporter), built from the Collector's Go modules in a module of its own,
# exporters/otlp/fleettest (versions pinned in its go.mod: collector
# v0.161.0 / v1.67.0, contrib v0.161.0, the newest the module proxy serves
# whole). The first build downloads and compiles the contrib modules (the
# load-balancing exporter brings the AWS and Kubernetes clients): about 4
# minutes on a 2-core machine, then cached.
set -euo pipefail
cd "$(dirname "$0")/../exporters/otlp/fleettest"
echo "== fleet: Collector pipeline (agent -> 2 gateways -> backend)"
go vet ./...
go test -count=1 -timeout 20m ./...
