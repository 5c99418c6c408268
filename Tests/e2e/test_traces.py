"""Traces exported over OTLP/HTTP (JSON, swift-otel) to a receiver of the test's own: a proxied page's spans (the
request and its upstream exchange, the data plane's way) and a request the application answers (the session's store
look-up, the access decision, the upstream exchange of a form), with the app's `traceparent` naming the gateway's span as its
parent in the same trace."""

import base64
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import start_gateway


class Receiver(BaseHTTPRequestHandler):
    spans = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/traces":
            document = json.loads(body)
            for resource in document.get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    Receiver.spans.extend(scope.get("spans", []))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *arguments):
        pass


def hex_id(value):
    """OTLP/JSON writes ids in hex; a plain protobuf JSON mapping would write base64."""
    if value and not re.fullmatch(r"[0-9a-f]+", value):
        return base64.b64decode(value).hex()
    return value or ""


@pytest.fixture
def receiver():
    Receiver.spans = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def spans_of(trace_id, names, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = {s["name"]: s for s in Receiver.spans if hex_id(s.get("traceId")) == trace_id}
        if names <= set(found):
            return found
        time.sleep(0.2)
    raise AssertionError(f"spans of {trace_id}: {sorted(found)}; all: {[s['name'] for s in Receiver.spans]}")


def test_a_request_is_followed_from_the_gateway_into_the_app(tmp_path, receiver, monkeypatch):
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    gw = start_gateway(tmp_path, "dev", extra={"tracing": {"otlp_endpoint": receiver}})
    try:
        member = gw.member_session("alice")
        page = member.get(gw.url + "/apps/whoami/", timeout=10).text
        traceparent = re.search(r'<th scope="row">traceparent</th><td><code>([^<]+)</code>', page).group(1)
        _, trace_id, parent, _ = traceparent.split("-")
        spans = spans_of(trace_id, {"GET proxy", "upstream exchange"})
        exchange, request = spans["upstream exchange"], spans["GET proxy"]
        # The app's parent is the gateway's exchange span, itself inside the request's span.
        assert hex_id(exchange["spanId"]) == parent and hex_id(exchange["parentSpanId"]) == hex_id(request["spanId"])
        assert f"trace_id={trace_id}" in gw.log()

        # A form of no stated length (chunked) goes the application's way: its spans are the session's look-up, the
        # access decision, the exchange. (With a length, a form is the data plane's, traced as the page above.)
        posted = member.post(
            gw.url + "/apps/visits/login", data=iter([b"name=Alice"]), allow_redirects=False, timeout=10,
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert posted.status_code == 303
        traced = [s for s in Receiver.spans if s["name"] == "POST proxy"]
        deadline = time.monotonic() + 20
        while not traced and time.monotonic() < deadline:
            time.sleep(0.2)
            traced = [s for s in Receiver.spans if s["name"] == "POST proxy"]
        assert traced, [s["name"] for s in Receiver.spans]
        children = spans_of(hex_id(traced[0]["traceId"]), {"session look-up", "access decision", "upstream exchange"})
        for child in children.values():
            if child["name"] != "POST proxy":
                assert hex_id(child["parentSpanId"]) == hex_id(traced[0]["spanId"]), child["name"]
    finally:
        gw.running.stop()
