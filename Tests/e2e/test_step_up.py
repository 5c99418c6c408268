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


def serve_forms():
    """An app with a long form: what it received is listed at /done (each submission once)."""
    received = []

    class Forms(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.startswith("/done"):
                items = "".join(f"<li>{entry}</li>" for entry in received)
                body = f"<!doctype html><title>Done</title><h1>Received</h1><ul id='received'>{items}</ul>"
            else:
                body = ("<!doctype html><title>Leave request</title><h1>Leave request</h1>"
                        "<form method='post' action='submit'><textarea id='reason' name='reason'></textarea>"
                        "<button id='send' type='submit'>Send</button></form>")
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            received.append(parse_qs(self.rfile.read(length).decode())["reason"][0])
            self.send_response(303)
            self.send_header("Location", "done")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    app = ThreadingHTTPServer(("127.0.0.1", 0), Forms)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    return app, received


def test_the_warning_then_a_form_posted_after_the_session_ended_goes_on_once_after_the_sign_in(tmp_path, browser):
    """A short idle limit: the bar warns, "Stay signed in" keeps the session; later the session runs out while the
    member writes; their form is kept through the sign-in and sent once."""
    from selenium.webdriver.common.by import By
    from test_browser_journey import in_bar, path_of, wait
    from test_proxy_journey import sign_in_as_alice

    app, received = serve_forms()
    gateway = start_gateway(tmp_path, "dev", extra={
        "apps": [{"slug": "forms", "name": "Forms", "upstream": f"http://127.0.0.1:{app.server_address[1]}/"}],
        "session": {"idle_timeout_seconds": 60, "warning_seconds": 55},
    })
    try:
        sign_in_as_alice(browser, gateway, "/apps/forms/")
        # Five seconds in, the bar says how long is left, as an alert.
        warning = wait(browser, lambda b: b.execute_script(
            "const w = document.getElementById('gatehouse-bar').shadowRoot.getElementById('session-warning');"
            " return w && !w.hidden && w.getAttribute('role') === 'alert' && w.textContent"), timeout=15)
        assert "Your session ends in 0:5" in warning and "Stay signed in" in warning
        in_bar(browser, "#stay-signed-in").click()
        wait(browser, lambda b: b.execute_script(
            "return document.getElementById('gatehouse-bar').shadowRoot.getElementById('session-warning').hidden"))

        # The member writes; the session runs out meanwhile (60 s idle); they send.
        browser.find_element(By.ID, "reason").send_keys("Family visit, 3 days")
        time.sleep(62)
        browser.find_element(By.ID, "send").click()
        wait(browser, lambda b: path_of(b).startswith("/signin?"))
        assert "Your form is kept" in browser.find_element(By.ID, "signin-notice").text
        browser.find_element(By.ID, "sign-in").click()
        wait(browser, lambda b: "/dev-idp/authorize" in b.current_url)
        browser.find_element(By.ID, "account-alice").click()
        browser.find_element(By.ID, "password").send_keys(gateway.dev_password)
        browser.find_element(By.ID, "dev-continue").click()
        # The kept form's page says so and sends it on by itself.
        wait(browser, lambda b: path_of(b) == "/apps/forms/done", timeout=20)
        assert browser.find_element(By.ID, "received").text == "Family visit, 3 days"
        assert received == ["Family visit, 3 days"]
        # The kept form's page left no entry in the history; going back, and loading again, sends nothing twice.
        browser.back()
        time.sleep(1)
        browser.refresh()
        time.sleep(1)
        assert received == ["Family visit, 3 days"]
    finally:
        gateway.running.stop()
        app.shutdown()
