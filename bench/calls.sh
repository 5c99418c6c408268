#!/usr/bin/env bash
# Calls through the gateway, measured (see bench/calls.py): Accept to both videos playing, p50 and p95 over 20 calls
# between two headless Chromium browsers, on a real Synapse and a real TURN server (coturn).
# Usage: bench/calls.sh   (GATEHOUSE_BIN=… to measure a binary built elsewhere; CALLS=20)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup --test
export GATEHOUSE_BIN="${GATEHOUSE_BIN:-$(scripts/build-release)}"
exec python3 bench/calls.py
