"""A recent sign-in for what matters, against a real, separately running OIDC provider (oidc-provider-mock, which
authenticates the member anew at every authorization and says so in `auth_time`)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import requests

from conftest import CLIENT_ID, KIM, start_gateway


def serve_app():
    """A small HR app: every path answers with itself."""

    class App(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    app = ThreadingHTTPServer(("127.0.0.1", 0), App)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    return app


def through_provider(http, location, member):
    """From a gateway sign-in link through the provider's form back to the callback; the callback's answer and the
    authorization request's parameters."""
    start = http.get(location, allow_redirects=False, timeout=10)
    assert start.status_code == 303, start.status_code
    authorize = start.headers["Location"]
    decision = http.post(authorize, data={"sub": member["sub"]}, allow_redirects=False, timeout=10)
    assert decision.status_code in (302, 303)
    callback = http.get(decision.headers["Location"], allow_redirects=False, timeout=10)
    return callback, parse_qs(urlparse(authorize).query)


def test_a_stale_sign_in_goes_to_the_provider_with_max_age_and_returns_to_the_path(tmp_path, mock_idp):
    app = serve_app()
    gateway = start_gateway(tmp_path, "serve", issuer=mock_idp, extra={
        "apps": [{"slug": "hr", "name": "HR", "upstream": f"http://127.0.0.1:{app.server_address[1]}/",
                  "rules": [{"paths": ["/payroll/*"], "require": {"auth_age_seconds": 5}}]}],
        "allowlist": ["127.0.0.1"], "proxy": {"allow_http_loopback": True},
    })
    try:
        http = requests.Session()
        payroll = gateway.url + "/apps/hr/payroll/slips?month=3"
        first = http.get(payroll, allow_redirects=False, timeout=10)
        assert first.status_code == 303 and first.headers["Location"].startswith("/signin")
        callback, asked = through_provider(http, gateway.url + first.headers["Location"].replace("/signin", "/signin/start", 1), KIM)
        assert "max_age" not in asked and "prompt" not in asked
        assert callback.headers["Location"] == "/apps/hr/payroll/slips?month=3"
        session = http.cookies.get("gatehouse_session")
        assert http.get(payroll, timeout=10).json() == {"path": "/payroll/slips?month=3"}

        time.sleep(7)
        # A script's request learns where to sign in; a page is sent there.
        api = http.get(payroll, headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
        assert api.status_code == 401 and api.json()["error"] == "reauthentication_required"
        stale = http.get(payroll, headers={"Accept": "text/html", "Sec-Fetch-Mode": "navigate"}, allow_redirects=False, timeout=10)
        assert stale.status_code == 303 and stale.headers["Location"] == api.json()["sign_in_url"]
        # Elsewhere in the app nothing changed.
        assert http.get(gateway.url + "/apps/hr/home", timeout=10).status_code == 200

        callback, asked = through_provider(http, stale.headers["Location"], KIM)
        assert asked["max_age"] == ["5"] and asked["prompt"] == ["login"] and asked["client_id"] == [CLIENT_ID]
        assert callback.status_code == 303 and callback.headers["Location"] == "/apps/hr/payroll/slips?month=3"
        # The same session goes on, with the apps' cookies it holds.
        assert http.cookies.get("gatehouse_session") == session
        assert http.get(payroll, timeout=10).json() == {"path": "/payroll/slips?month=3"}
        assert gateway.metrics()['gatehouse_step_ups_total{reason="sign_in"}'] == 1
    finally:
        gateway.running.stop()
        app.shutdown()
