#!/usr/bin/env bash
# Measures Gatehouse as a proxy against nginx serving the same files directly, on this machine:
#   1. a 10 KB HTML page (through Gatehouse: cookie jar, CSP merge, banner injection) and a 1 MB JSON file,
#      direct and through Gatehouse, alternating, with wrk; req/s, p50, p99 and the ratio;
#   2. a 100 MB HTML page streamed through the injector, with the gateway's peak RSS.
# Usage: bench/proxy.sh   (DURATION=10s CONNECTIONS=32 THREADS=2 to change the load)
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}

for tool in nginx wrk curl; do
  command -v "$tool" >/dev/null || { echo "installing nginx wrk curl"; apt-get install -y -qq nginx wrk curl >/dev/null; break; }
done
python3 -c "import requests" 2>/dev/null || python3 -m pip install --quiet requests
scripts/setup
swift build -c release --product gatehouse 2>&1 | grep -E "error|Compiling|Build complete" || true
BIN="$(swift build -c release --show-bin-path)/gatehouse"

work=$(mktemp -d)
chmod 755 "$work"  # nginx's workers run as another user
cleanup() {
  [[ -n "${gatehouse_pid:-}" ]] && kill "$gatehouse_pid" 2>/dev/null || true
  [[ -f "$work/nginx.pid" ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NGINX_PORT=$(free_port)
GATE_PORT=$(free_port)
DEMO_PORT=$(free_port)

# Upstream content.
mkdir -p "$work/www"
python3 - "$work/www" <<'PY'
import json, sys
root = sys.argv[1]
paragraph = "<p>Gatehouse benchmark paragraph with some ordinary text in it, and a <a href=\"/page.html\">link</a>.</p>\n"
body = paragraph * (10_000 // len(paragraph))
open(f"{root}/page.html", "w").write(f"<!doctype html><html><head><title>Bench</title></head><body>{body}</body></html>")
items = [{"id": i, "name": f"item {i}", "tags": ["a", "b", "c"], "value": i * 3.14} for i in range(1, 16000)]
text = json.dumps(items)
open(f"{root}/data.json", "w").write(text[: 1 << 20])
with open(f"{root}/big.html", "w") as f:
    f.write("<!doctype html><html><body>")
    chunk = paragraph * 1000
    for _ in range((100 << 20) // len(chunk)):
        f.write(chunk)
    f.write("</body></html>")
PY

cat > "$work/nginx.conf" <<NGINX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  types { text/html html; application/json json; }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $work/www;
    keepalive_requests 100000;
    location = /login { add_header Set-Cookie "bench_session=abc123; Path=/; HttpOnly"; return 204; }
  }
}
NGINX
nginx -c "$work/nginx.conf"

cat > "$work/gatehouse.json" <<JSON
{
  "public_url": "http://127.0.0.1:$GATE_PORT",
  "storage": { "sqlite_path": "$work/gatehouse.sqlite" },
  "development": { "demo_apps_port": $DEMO_PORT },
  "log_level": "warning",
  "apps": [{ "slug": "bench", "name": "Bench", "upstream": "http://127.0.0.1:$NGINX_PORT/" }]
}
JSON
"$BIN" dev --config "$work/gatehouse.json" > "$work/gatehouse.log" 2>&1 &
gatehouse_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$GATE_PORT/healthz" >/dev/null && break; sleep 0.1; done
password=$(grep -o 'this run: [^)]*' "$work/gatehouse.log" | cut -d' ' -f3)
cookie=$(python3 bench/signin.py "http://127.0.0.1:$GATE_PORT" "$password")
# The app's own sign-in cookie goes into the jar; every benchmarked request then carries it upstream.
curl -fs -o /dev/null -H "Cookie: gatehouse_session=$cookie" "http://127.0.0.1:$GATE_PORT/apps/bench/login"

# Every URL must answer 200 before it is measured: a benchmark of error pages measures nothing.
for url in "http://127.0.0.1:$NGINX_PORT/page.html" "http://127.0.0.1:$NGINX_PORT/data.json" \
           "http://127.0.0.1:$GATE_PORT/apps/bench/page.html" "http://127.0.0.1:$GATE_PORT/apps/bench/data.json"; do
  status=$(curl -s -o /dev/null -w "%{http_code}" -H "Cookie: gatehouse_session=$cookie" "$url")
  [[ "$status" == 200 ]] || { echo "bench: $url answered $status" >&2; exit 1; }
done
curl -s -H "Cookie: gatehouse_session=$cookie" -H "Sec-Fetch-Dest: document" "http://127.0.0.1:$GATE_PORT/apps/bench/page.html" \
  | grep -q gatehouse-banner || { echo "bench: no banner in the proxied page" >&2; exit 1; }

run_wrk() { # url, headers…
  local url=$1; shift
  local headers=()
  for header in "$@"; do headers+=(-H "$header"); done
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "${headers[@]}" "$url" | awk '
    /Requests\/sec/ { rps = $2 }
    $1 == "50%" { p50 = $2 }
    $1 == "99%" { p99 = $2 }
    END { printf "%s %s %s\n", rps, p50, p99 }'
}

declare -A total
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
echo "load: wrk -t$THREADS -c$CONNECTIONS -d$DURATION, $ROUNDS alternating rounds"
printf "%-28s %10s %10s %10s\n" "case" "req/s" "p50" "p99"
for round in $(seq "$ROUNDS"); do
  for file in page.html data.json; do
    # A browser navigating: the HTML page gets the banner, the CSP merge and the jar lookup.
    direct=$(run_wrk "http://127.0.0.1:$NGINX_PORT/$file" "Sec-Fetch-Dest: document")
    gated=$(run_wrk "http://127.0.0.1:$GATE_PORT/apps/bench/$file" "Sec-Fetch-Dest: document" "Cookie: gatehouse_session=$cookie")
    printf "%-28s %10s %10s %10s\n" "$file direct (round $round)" $direct
    printf "%-28s %10s %10s %10s\n" "$file gatehouse (round $round)" $gated
    total[$file-direct]=$(python3 -c "print(${total[$file-direct]:-0} + ${direct%% *})")
    total[$file-gated]=$(python3 -c "print(${total[$file-gated]:-0} + ${gated%% *})")
  done
done
for file in page.html data.json; do
  python3 -c "print(f'$file: gatehouse/direct = {${total[$file-gated]} / ${total[$file-direct]}:.2f}')"
done

# Headers as a browser navigating would send them, so that the banner is injected while streaming.
curl -fs -o /dev/null -w "100 MB page through the injector: %{size_download} bytes in %{time_total} s\n" \
  -H "Cookie: gatehouse_session=$cookie" -H "Sec-Fetch-Dest: document" "http://127.0.0.1:$GATE_PORT/apps/bench/big.html"
echo "gatehouse peak RSS: $(awk '/VmHWM/ {printf "%.0f MiB", $2/1024}' /proc/$gatehouse_pid/status)"
