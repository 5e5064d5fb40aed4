#!/usr/bin/env bash
# DuckDB for the job report's Parquet test (internal/job: TestParquetReadByDuckDB):
# a private venv with duckdb pinned; prints the venv's python on stdout, for
# .ci/run to pass as CUPROF_TEST_DUCKDB_PYTHON. In CI the test fails without it.
set -euo pipefail
venv=${CUPROF_CI_CACHE:-$HOME/.cache/cuprof-ci}/duckdb-1.4.2
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import duckdb' 2>/dev/null; then
	python3 -m venv "$venv" >&2
	"$venv/bin/python" -m pip install -q 'duckdb==1.4.2' >&2
fi
echo "$venv/bin/python"
