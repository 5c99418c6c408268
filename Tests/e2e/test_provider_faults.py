"""The identity provider failing under a running gateway: a provider process of the test's own (oidc-provider-mock),
stopped with SIGSTOP so that it takes connections and never answers (the costly kind of down), then let go again.
Members already signed in go on; sign-ins fail with a clear page, at once after two timeouts; everything recovers
without a restart (docs/operations.md, "When something fails")."""

import json
import signal
import sys
import time
from contextlib import contextmanager
from urllib.parse import urlparse

import pytest
import requests

from conftest import KIM, LEE, Running, free_port, start_gateway, wait_for
from test_oidc_interop import sign_in

TIMEOUT = 2
PAUSE = 3


@pytest.fixture
def provider(tmp_path):
    port = free_port()
    args = [sys.executable, "-m", "oidc_provider_mock", "--port", str(port), "--require-nonce", "true"]
    for user in (KIM, LEE):
        args += ["--user-claims", json.dumps(user)]
    running = Running(args, tmp_path / "provider.log")
    issuer = f"http://127.0.0.1:{port}"
    wait_for(issuer + "/.well-known/openid-configuration", process=running.process)
    yield running, issuer
    running.process.send_signal(signal.SIGCONT)
    running.stop()


@contextmanager
def frozen(running):
    """The provider takes connections (the kernel still accepts them) and answers none."""
    running.process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        running.process.send_signal(signal.SIGCONT)


def gateway_for(tmp_path, issuer, **extra):
    oidc = {"issuer": issuer, "timeout_seconds": TIMEOUT, "pause_after_timeouts_seconds": PAUSE}
    return start_gateway(tmp_path, "serve", issuer=issuer, extra={"oidc": {**oidc, "client_id": "gatehouse-e2e"}, **extra})


def timed(call):
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


def half_signed_in(gateway, member):
    """Through the provider's page up to the callback, which is returned unvisited (the provider answered so far)."""
    http = requests.Session()
    start = http.get(gateway.url + "/signin/start", allow_redirects=False)
    decision = http.post(start.headers["Location"], data={"sub": member["sub"]}, allow_redirects=False)
    return http, decision.headers["Location"]


def test_sign_in_fails_clearly_and_fast_then_recovers(tmp_path, provider):
    running, issuer = provider
    gateway = gateway_for(tmp_path, issuer)
    try:
        signed_in, _ = sign_in(gateway, KIM)
        waiting = [half_signed_in(gateway, LEE) for _ in range(3)]
        with frozen(running):
            # The first two wait out the timeout each; then the gateway stops waiting and says so at once.
            for http, callback in waiting[:2]:
                answer, took = timed(lambda: http.get(callback, allow_redirects=False))
                assert answer.headers["Location"].startswith("/signin?error=provider_unreachable"), answer.headers
                assert TIMEOUT - 0.5 < took < TIMEOUT + 2, took
            http, callback = waiting[2]
            answer, took = timed(lambda: http.get(callback, allow_redirects=False))
            assert answer.headers["Location"].startswith("/signin?error=provider_not_answering") and took < 0.5, (answer.headers, took)
            page = http.get(gateway.url + answer.headers["Location"])
            assert "The sign-in service is not answering" in page.text
            # A member signed in before goes on meanwhile: pages and apps need no provider.
            portal, took = timed(lambda: signed_in.get(gateway.url + "/", allow_redirects=False))
            assert portal.status_code == 200 and took < 1.0
            # Signing out meanwhile ends the gateway's session and says the provider could not be told.
            csrf = portal.text.split('name="csrf" value="')[1].split('"')[0]
            out = signed_in.post(gateway.url + "/signout", data={"csrf": csrf}, headers={"Origin": gateway.url}, allow_redirects=False)
            assert out.headers["Location"] == "/signed-out?provider=down"
            assert "may still be signed in" in signed_in.get(gateway.url + out.headers["Location"]).text
            assert signed_in.get(gateway.url + "/", allow_redirects=False).status_code == 303
        # Let go: after the pause one sign-in tries the provider again, and it answers; no restart.
        time.sleep(PAUSE + 0.5)
        again, callback = sign_in(gateway, LEE)
        assert callback.status_code == 303 and urlparse(callback.headers["Location"]).path == "/", callback.headers
        assert again.get(gateway.url + "/", allow_redirects=False).status_code == 200
    finally:
        gateway.running.stop()


def test_sessions_go_on_while_the_provider_cannot_refresh_them(tmp_path, provider):
    running, issuer = provider
    # Every access token is inside the refresh window: every request wants a refresh.
    gateway = gateway_for(tmp_path, issuer, session={"refresh_window_seconds": 3600})
    try:
        http, _ = sign_in(gateway, KIM)
        assert http.get(gateway.url + "/", allow_redirects=False).status_code == 200
        with frozen(running):
            took = []
            for _ in range(5):
                reply, seconds = timed(lambda: http.get(gateway.url + "/", allow_redirects=False))
                assert reply.status_code == 200, reply.headers  # never signed out for the provider's silence
                took.append(seconds)
            assert all(seconds < 0.5 for seconds in took[2:]), took  # after two timeouts, no more waiting
        assert "token refresh postponed" in gateway.running.output()
        time.sleep(PAUSE + 0.5)
        assert http.get(gateway.url + "/", allow_redirects=False).status_code == 200
        # Refreshed again once the provider answers: nothing waits any more.
        _, seconds = timed(lambda: http.get(gateway.url + "/", allow_redirects=False))
        assert seconds < 1.0
    finally:
        gateway.running.stop()
