#!/usr/bin/env bash
# Gatehouse side by side with nginx, Apache + mod_auth_openidc, Caddy and the ceilings (bench/ceilings), in one
# run, on one upstream (bench/peers.py says what each target does); then the 100 MB page through the injector and its
# peak memory; with perf (installed here), where the CPU of the member's page goes, phase by phase (bench/phases.py).
# Usage: bench/peers.sh   (DURATION=10s CONNECTIONS=32 THREADS=2 ROUNDS=3 TARGETS=… PAGES=… to change the run;
#                          GATEHOUSE_BIN=… to measure a binary built elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in nginx apache2 caddy wrk curl h2load openssl perf; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[[ -f /usr/lib/apache2/modules/mod_auth_openidc.so ]] || missing+=(libapache2-mod-auth-openidc)
if ((${#missing[@]})); then
  echo "installing: nginx apache2 libapache2-mod-auth-openidc caddy wrk curl nghttp2-client openssl linux-perf"
  apt-get install -y -qq nginx apache2 libapache2-mod-auth-openidc caddy wrk curl nghttp2-client openssl linux-perf >/dev/null
fi
python3 -c "import requests, oidc_provider_mock" 2>/dev/null || python3 -m pip install --quiet requests oidc-provider-mock
scripts/setup

GATEHOUSE_BIN="${GATEHOUSE_BIN:-$(scripts/build-release)}"
if [[ -z "${CEILINGS_BIN:-}" ]]; then
  swift build -c release --package-path bench/ceilings >&2
  CEILINGS_BIN="$(swift build -c release --package-path bench/ceilings --show-bin-path)"
fi
export GATEHOUSE_BIN CEILINGS_BIN
exec python3 bench/peers.py
