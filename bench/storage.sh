#!/usr/bin/env bash
# The proxied 10 KB page's req/s and p99, and resident memory with 10,000 live sessions, on SQLite and on
# PostgreSQL (see bench/storage.py). Usage: bench/storage.sh   (DURATION, CONNECTIONS, THREADS, SESSIONS)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in nginx wrk; do
  command -v "$tool" >/dev/null || { echo "installing nginx-light wrk"; apt-get install -y -qq nginx-light wrk >/dev/null; break; }
done
scripts/setup --replicas
python3 -c "import requests" 2>/dev/null || python3 -m pip install --quiet requests
exec python3 bench/storage.py "$(scripts/build-release)"
