#!/usr/bin/env bash
# The soak (see bench/soak.py): 30 minutes at 80 % of capacity on the signed-in 10 KB page with members signing in
# and out, browsing, upgrading, holding WebSockets and downloading beside it, on SQLite and on two PostgreSQL
# replicas behind nginx; the figures and a plot in docs/soak.json and docs/soak.svg.
# Usage: bench/soak.sh [minutes]   (2 for a quick check; STORES="sqlite" or "replicas" for one setup)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup --bench
exec python3 bench/soak.py "$(scripts/build-release)" "${1:-30}"
