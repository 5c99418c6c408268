#!/usr/bin/env bash
# The gateway's own chat, measured (see bench/chat.py): send to show (p50, p95 over 100 messages), the gateway's CPU
# per message, send to notification on an app's page (one live stream; three pages), and the memory and CPU of 200 idle
# sessions with a Chats page open and notifications on, against a real Synapse.
# Usage: bench/chat.sh   (GATEHOUSE_BIN=… to measure a binary built elsewhere; SESSIONS=200)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup --chat
exec python3 bench/chat.py "${GATEHOUSE_BIN:-$(scripts/build-release)}"
