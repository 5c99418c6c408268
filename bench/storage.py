"""Gatehouse on SQLite and on PostgreSQL, the same load on each:

1. a proxied 10 KB HTML page (session, jar with the app's cookie, CSP merge, rewriting, banner) with wrk:
   req/s, p50 and p99 (with the state cache the store is read only when something changed);
2. the gateway's resident memory with 10,000 live sessions, each signed in through the development provider and
   holding a small jar (the app's cookie), each used once so that it sits in the cache.

Usage: bench/storage.sh   (DURATION=10s CONNECTIONS=32 THREADS=2 SESSIONS=10000 to change it)
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from replicas import Process, answers, free_port, wait_until  # noqa: E402

DURATION = os.environ.get("DURATION", "10s")
CONNECTIONS = os.environ.get("CONNECTIONS", "32")
THREADS = os.environ.get("THREADS", "2")
SESSIONS = int(os.environ.get("SESSIONS", "10000"))
PARAGRAPH = '<p>Gatehouse benchmark paragraph with some ordinary text in it, and a <a href="/page.html">link</a>.</p>\n'


def upstream(directory):
    """nginx serving the 10 KB page and a login that sets the app's cookie."""
    www = directory / "www"
    www.mkdir()
    body = PARAGRAPH * (10_000 // len(PARAGRAPH))
    (www / "page.html").write_text(f"<!doctype html><html><head><title>Bench</title></head><body>{body}</body></html>")
    port = free_port()
    (directory / "nginx.conf").write_text(
        f"""
daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  types {{ text/html html; }}
  server {{
    listen 127.0.0.1:{port};
    root {www};
    keepalive_requests 100000;
    location = /login {{ add_header Set-Cookie "bench_session=abc123; Path=/; HttpOnly"; return 204; }}
  }}
}}
"""
    )
    process = Process(["nginx", "-c", str(directory / "nginx.conf")], directory / "nginx.log")
    wait_until(lambda: answers(f"http://127.0.0.1:{port}/page.html") == 200, "nginx did not answer")
    return process, f"http://127.0.0.1:{port}/"


def gateway(binary, directory, kind, upstream_url, database_url=None):
    port = free_port()
    config = directory / f"gatehouse-{kind}.json"
    config.write_text(
        json.dumps(
            {
                "public_url": f"http://127.0.0.1:{port}",
                "storage": {"kind": kind, "sqlite_path": str(directory / "gatehouse.sqlite")},
                "development": {"demo_apps_port": free_port()},
                "log_level": "warning",
                "apps": [{"slug": "bench", "name": "Bench", "upstream": upstream_url}],
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
    if database_url:
        env["GATEHOUSE_STORAGE_POSTGRES_URL"] = database_url
    process = Process([str(binary), "dev", "--config", str(config)], directory / f"gatehouse-{kind}.log", env=env)
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: answers(url + "/readyz") == 200, f"Gatehouse on {kind} was not ready")
    wait_until(lambda: "this run: " in process.output(), "no development password in the log")
    password = process.output().split("this run: ", 1)[1].split(")", 1)[0]
    return process, url, password


def sign_in(url, password):
    """A member signed in through the development provider, with the app's cookie in their jar; the cookie."""
    http = requests.Session()
    start = http.get(url + "/signin/start", allow_redirects=False)
    form = {key: values[0] for key, values in parse_qs(urlparse(start.headers["Location"]).query).items()}
    form.update(account="alice", password=password, action="continue")
    decision = http.post(url + "/dev-idp/authorize", data=form, allow_redirects=False)
    http.get(decision.headers["Location"], allow_redirects=False)
    cookie = http.cookies["gatehouse_session"]
    login = http.get(url + "/apps/bench/login", allow_redirects=False)
    assert login.status_code == 204, f"the app's login answered {login.status_code}"
    return cookie


def wrk(url, cookie):
    output = subprocess.run(
        ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{DURATION}", "--latency", "-H", "Sec-Fetch-Dest: document",
         "-H", f"Cookie: gatehouse_session={cookie}", url],
        capture_output=True, text=True, check=True,
    ).stdout
    figures = {}
    for line in output.splitlines():
        parts = line.split()
        if line.startswith("Requests/sec:"):
            figures["req/s"] = float(parts[1])
        elif parts[:1] in (["50%"], ["99%"]):
            figures[parts[0]] = parts[1]
        elif "Non-2xx" in line:
            raise RuntimeError(f"wrk saw error answers: {line}")
    return figures


def rss_mib(process):
    status = Path(f"/proc/{process.process.pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024


def measure(binary, directory, kind, upstream_url, database_url=None):
    process, url, password = gateway(binary, directory, kind, upstream_url, database_url)
    try:
        cookie = sign_in(url, password)
        page = url + "/apps/bench/page.html"
        check = requests.get(page, headers={"Cookie": f"gatehouse_session={cookie}", "Sec-Fetch-Dest": "document"})
        assert check.status_code == 200 and "gatehouse-banner" in check.text, "the proxied page is not what is measured"
        wrk(page, cookie)  # warm-up
        figures = wrk(page, cookie)
        before = rss_mib(process)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=8) as pool:
            cookies = list(pool.map(lambda _: sign_in(url, password), range(SESSIONS)))
        signed_in = time.monotonic() - started
        # Each session used once more, so that it and its jar sit in the cache.
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = set(pool.map(lambda c: requests.get(page, headers={"Cookie": f"gatehouse_session={c}"}).status_code, cookies))
        assert statuses == {200}, statuses
        figures.update(rss_before=before, rss_sessions=rss_mib(process), sign_in_seconds=signed_in)
        return figures
    finally:
        process.stop()


def main():
    binary = Path(sys.argv[1])
    directory = Path(tempfile.mkdtemp(prefix="gatehouse-bench-", dir="/tmp"))
    os.chmod(directory, 0o755)
    nginx, upstream_url = upstream(directory)
    postgres_dir = directory / "postgres"
    try:
        results = {"sqlite": measure(binary, directory, "sqlite", upstream_url)}
        database_url = subprocess.run(
            [str(ROOT / "scripts" / "postgres"), "start", str(postgres_dir)], capture_output=True, text=True, check=True
        ).stdout.strip()
        results["postgres"] = measure(binary, directory, "postgres", upstream_url, database_url)
    finally:
        subprocess.run([str(ROOT / "scripts" / "postgres"), "stop", str(postgres_dir)], capture_output=True)
        nginx.stop()
    print(f"machine: {os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}")
    print(f"load: wrk -t{THREADS} -c{CONNECTIONS} -d{DURATION}; {SESSIONS} sessions for the memory figure")
    print(f"{'store':10} {'req/s':>10} {'p50':>10} {'p99':>10} {'RSS idle':>10} {'RSS +sessions':>14}")
    for kind, f in results.items():
        print(
            f"{kind:10} {f['req/s']:>10,.0f} {f['50%']:>10} {f['99%']:>10} {f['rss_before']:>8.0f} MiB {f['rss_sessions']:>10.0f} MiB"
            f"   ({SESSIONS} sign-ins took {f['sign_in_seconds']:.0f} s)"
        )


if __name__ == "__main__":
    main()
