#!/usr/bin/env bash
# The proxied 10 KB page's req/s and p99, and resident memory with 10,000 live sessions, on SQLite and on
# PostgreSQL (see bench/storage.py). Usage: bench/storage.sh   (DURATION, CONNECTIONS, THREADS, SESSIONS)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup --bench
exec python3 bench/storage.py "$(scripts/build-release)"
