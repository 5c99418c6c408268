"""What the benchmarks share: a Gatehouse process in development mode in front of one app, members signed in
through its built-in provider (and, if asked, registered through the whole upgrade flow), and wrk's figures.

The process helpers are those of scripts/replicas.py, which the end-to-end tests use too.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from replicas import Process, answers, free_port, wait_until  # noqa: E402,F401  (re-exported for the benchmarks)


def start(binary, directory, name, upstream_url, kind="sqlite", database_url=None, settings=None, tls=None):
    """Gatehouse (`binary`) on a free port with one app, `bench`, proxying `upstream_url`, and `settings` (more keys of
    the configuration file); with `tls` = (certificate file, key file) for `localhost`, over HTTPS (HTTP/2 and
    HTTP/1.1). Waits until it is ready. Returns the process, its origin and the development provider's password of
    this run."""
    port = free_port()
    origin = f"https://localhost:{port}" if tls else f"http://127.0.0.1:{port}"
    if tls:
        settings = {**(settings or {}), "listen": {"tls": {"certificate_file": str(tls[0]), "private_key_file": str(tls[1])}}}
    configuration = directory / f"{name}.json"
    configuration.write_text(
        json.dumps(
            {
                "public_url": origin,
                "storage": {"kind": kind, "sqlite_path": str(directory / f"{name}.sqlite")},
                "development": {"demo_apps_port": free_port()},
                "log_level": "warning",
                # The same app twice: with the signed identity assertion (the default) and without, to measure it.
                "apps": [
                    {"slug": "bench", "name": "Bench", "upstream": upstream_url},
                    {"slug": "bench-plain", "name": "Bench without assertion", "upstream": upstream_url, "assertion": False},
                    # And on a host of its own (`bench-host.apps.localhost`, the development apps domain).
                    {"slug": "bench-host", "name": "Bench on its own host", "upstream": upstream_url, "mount": "host"},
                ],
                **(settings or {}),
            }
        )
    )
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GATEHOUSE_")}
    # The metrics listener's port through the environment, not the file: a build from before metrics (measured as a
    # baseline) refuses unknown keys in the file but ignores the variable.
    environment["GATEHOUSE_METRICS_PORT"] = str(free_port())
    if database_url:
        environment["GATEHOUSE_STORAGE_POSTGRES_URL"] = database_url
    # Run outside the checkout, so that each build serves the templates and files it shipped with (those beside its
    # binary or of the checkout it was built in): a baseline from an earlier commit is measured as it was.
    process = Process(
        [str(Path(binary).resolve()), "dev", "--config", str(configuration)], directory / f"{name}.log", env=environment, cwd=directory
    )
    wait_until(lambda: ready(origin + "/readyz", tls[0] if tls else True), f"Gatehouse ({name}) was not ready")
    wait_until(lambda: "this run: " in process.output(), "no development password in the log")
    password = process.output().split("this run: ", 1)[1].split(")", 1)[0]
    return process, origin, password


def ready(url, verify):
    try:
        return requests.get(url, verify=verify, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def sign_in(origin, password, account="alice", register=None, verify=True):
    """A member signed in through the development provider; with `register` = (username, phone number) then taken
    through the whole upgrade flow to level `registered`. Returns the browser's session (its cookies)."""
    http = requests.Session()
    http.verify = verify
    # A REQUESTS_CA_BUNDLE in the environment would override the session's own `verify` (requests' merge rules).
    http.trust_env = False
    start = http.get(origin + "/signin/start", allow_redirects=False)
    form = {key: values[0] for key, values in parse_qs(urlparse(start.headers["Location"]).query).items()}
    form.update(account=account, password=password, action="continue")
    decision = http.post(origin + "/dev-idp/authorize", data=form, allow_redirects=False)
    http.get(decision.headers["Location"], allow_redirects=False)
    if register:
        username, phone = register
        http.get(origin + "/upgrade?from=portal", allow_redirects=False)

        def step(path, fields, expect):
            csrf = re.search(r'name="csrf" value="([^"]+)"', http.get(origin + "/").text).group(1)
            reply = http.post(origin + path, data={"csrf": csrf, **fields}, headers={"Origin": origin}, allow_redirects=False)
            location = reply.headers.get("Location", "")
            if not location.startswith(expect):
                raise RuntimeError(f"{path} answered {reply.status_code} {location!r}, expected {expect}")

        step("/upgrade/phone", {"phone": phone}, "/upgrade/code")
        code = re.search(r'class="code">(\d+)', http.get(origin + "/dev/inbox").text).group(1)
        step("/upgrade/code", {"code": code}, "/upgrade/username")
        step("/upgrade/username", {"username": username}, "/upgrade/pin")
        step("/upgrade/pin", {"pin": "2580", "pin_confirmation": "2580"}, "/upgrade/profile")
        step("/upgrade/profile", {"display_name": username, "discoverability": "nobody"}, "/upgrade/done")
    return http


def wrk(url, cookie, threads, connections, duration, headers=(), body=None):
    """One wrk run as a browser navigation with `cookie` (a `name=value` pair, or None) and `headers` ("Name: value"
    each), or with `body`, a form posted: req/s, p50 and p99 in ms. Error answers or socket errors make it fail: a
    benchmark of error pages measures nothing."""
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}", "--latency", "-H", "Sec-Fetch-Dest: document"]
    if body is not None:
        script = Path(tempfile.gettempdir()) / f"gatehouse-wrk-post-{os.getpid()}.lua"
        script.write_text(f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n')
        command += ["-s", str(script)]
    if cookie:
        command += ["-H", f"Cookie: {cookie}"]
    for header in headers:
        command += ["-H", header]
    output = subprocess.run(command + [url], check=True, capture_output=True, text=True).stdout
    if "Non-2xx or 3xx responses" in output or "Socket errors" in output:
        raise RuntimeError(f"{url} had errors:\n{output}")

    def milliseconds(label):
        value = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
        number, unit = float(value.group(1)), value.group(2)
        return number / 1000 if unit == "us" else number * 1000 if unit == "s" else number

    return float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)), milliseconds("50%"), milliseconds("99%")


def h2load(url, cookie, threads, connections, duration, headers=()):
    """One h2load run over HTTP/2 (one stream at a time per connection, as wrk's): req/s, and the mean and the
    slowest request's time in ms (h2load reports no percentiles)."""
    command = ["h2load", f"-t{threads}", f"-c{connections}", "-m1", f"-D{duration.rstrip('s')}", "-H", "sec-fetch-dest: document"]
    if cookie:
        command += ["-H", f"cookie: {cookie}"]
    for header in headers:
        command += ["-H", header.lower()]
    output = subprocess.run(command + [url], check=True, capture_output=True, text=True).stdout
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", output)
    if not done or done.group(3) != "0" or done.group(4) != "0" or re.search(r"status codes: \d+ 2xx, \d+ 3xx, [1-9]", output):
        raise RuntimeError(f"{url} had errors:\n{output}")

    def milliseconds(text):
        number, unit = float(re.match(r"([\d.]+)(us|ms|s)", text).group(1)), re.match(r"[\d.]+(us|ms|s)", text).group(1)
        return number / 1000 if unit == "us" else number * 1000 if unit == "s" else number

    timing = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", output)
    return float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", output).group(1)), milliseconds(timing.group(3)), milliseconds(timing.group(2))


def memory_mib(pid):
    """The process's resident memory now and at its peak (`VmRSS`, `VmHWM`), in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return {key: int(re.search(rf"{key}:\s+(\d+)", status).group(1)) // 1024 for key in ["VmRSS", "VmHWM"]}
