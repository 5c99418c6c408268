"""The configuration read again by the running process, as an operator changes it: `systemctl reload` (`SIGHUP`) and an
edit of the file, in production mode against a real OIDC provider. Nothing ends the process, and a member signed in
before a change stays signed in after it."""

import json
import os
import signal
import time

import requests

from conftest import KIM, start_gateway
from test_step_up import serve_app, through_provider


def reloads(gateway, result):
    return gateway.metrics().get(f'gatehouse_config_reloads_total{{result="{result}"}}', 0)


def log_lines(gateway, message):
    """The gateway's JSON log lines with `message`."""
    return [line for line in map(json.loads, filter(None, gateway.log().splitlines())) if line.get("message") == message]


def eventually(check, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def test_sighup_and_an_edited_file_change_the_apps_of_the_running_gateway(tmp_path, mock_idp):
    app = serve_app()
    upstream = f"http://127.0.0.1:{app.server_address[1]}/"
    gateway = start_gateway(tmp_path, "serve", issuer=mock_idp, extra={
        "apps": [{"slug": "hr", "name": "HR", "upstream": upstream}],
        "allowlist": ["127.0.0.1"], "proxy": {"allow_http_loopback": True},
    })
    config_file = tmp_path / "gatehouse.json"
    config = json.loads(config_file.read_text())
    try:
        http = requests.Session()
        first = http.get(gateway.url + "/apps/hr/home", allow_redirects=False, timeout=10)
        through_provider(http, gateway.url + first.headers["Location"].replace("/signin", "/signin/start", 1), KIM)
        assert http.get(gateway.url + "/apps/hr/home", timeout=10).json() == {"path": "/home"}

        # `systemctl reload` with nothing changed: the gateway lives on (no TLS here, where SIGHUP once ended it).
        os.kill(gateway.running.process.pid, signal.SIGHUP)
        assert eventually(lambda: reloads(gateway, "applied") >= 1)
        assert gateway.running.running()

        # An app added and one removed, then a signal: the new app is served to the member already signed in.
        config["apps"] = [{"slug": "wiki", "name": "Wiki", "upstream": upstream}]
        config_file.write_text(json.dumps(config))
        os.kill(gateway.running.process.pid, signal.SIGHUP)
        assert eventually(lambda: http.get(gateway.url + "/apps/wiki/page", timeout=10).status_code == 200)
        assert http.get(gateway.url + "/apps/wiki/page", timeout=10).json() == {"path": "/page"}
        assert http.get(gateway.url + "/apps/hr/home", timeout=10).status_code == 404
        portal = http.get(gateway.url + "/", timeout=10).text
        assert "Wiki" in portal and ">HR<" not in portal

        # A broken edit, noticed without a signal: refused with its key path, the running configuration kept.
        applied = reloads(gateway, "applied")
        broken = dict(config, apps=[{"slug": "wiki", "name": "Wiki", "upstream": "ftp://wiki"}])
        config_file.write_text(json.dumps(broken))
        assert eventually(lambda: reloads(gateway, "refused") >= 1)
        assert "apps[0].upstream" in [line["key"] for line in log_lines(gateway, "configuration reload refused, the running configuration is kept")]
        assert http.get(gateway.url + "/apps/wiki/page", timeout=10).status_code == 200
        assert reloads(gateway, "applied") == applied

        # What only a restart changes is said, and the running value kept: the gateway still listens where it did.
        moved = dict(config, listen=dict(config.get("listen", {}), port=gateway.port + 1))
        config_file.write_text(json.dumps(moved))
        assert eventually(lambda: reloads(gateway, "applied") > applied)
        kept = [line["key"] for line in log_lines(gateway, "configuration reload: a change takes a restart, the running value is kept")]
        assert kept == ["listen"], kept
        assert http.get(gateway.url + "/apps/wiki/page", timeout=10).status_code == 200
        assert gateway.running.running()
    finally:
        gateway.running.stop()
        app.shutdown()
