"""HTTPS on the members' listener, as `gatehouse dev --tls` serves it: a development authority made under ./data,
curl over HTTP/1.1 and HTTP/2 trusting it (and refused without it), the whole journey in Chromium over HTTP/2
(sign-in, a proxied app with its bar, the upgrade flow to the end), the browser trusting exactly the listener's key;
and HTTP/2's hazards by hand-written frames: too many streams, huge header lists, rapid resets, CONTINUATION and
PING floods, HTTP/1.1 framing smuggled in fields, each refused while other members are served."""

import base64
import hashlib
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from conftest import BINARY, Running, free_port, start_browser
from test_browser_journey import in_bar, path_of, wait
from test_upgrade_journey import code_to_profile, replaced, sign_in, submit


class TLSGateway:
    def __init__(self, folder, authority=None, **settings):
        """`gatehouse dev --tls` in `folder`: with its own development authority, or with the listener certificate the
        settings name and the `authority` that issued it."""
        self.port = free_port()
        self.url = f"https://localhost:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
        env.update(
            GATEHOUSE_PUBLIC_URL=self.url,
            GATEHOUSE_DEVELOPMENT_DEMO_APPS_PORT=str(free_port()),
            GATEHOUSE_METRICS_PORT=str(free_port()),
            GATEHOUSE_LOG_LEVEL="info",
            **settings,
        )
        self.running = Running([str(BINARY), "dev", "--tls"], folder / "gatehouse.log", env=env, cwd=folder)
        self.authority = authority or folder / "data" / "tls" / "development-ca.pem"
        self.certificate = Path(settings.get("GATEHOUSE_LISTEN_TLS_CERTIFICATE_FILE", folder / "data" / "tls" / "localhost.pem"))
        deadline = time.monotonic() + 60
        while self.curl("/healthz").stdout != "ok\n":
            assert self.running.process.poll() is None and time.monotonic() < deadline, self.running.output()
            time.sleep(0.2)

    def curl(self, path, *arguments):
        return subprocess.run(
            ["curl", "-sS", "--max-time", "10", "--cacert", str(self.authority), *arguments, self.url + path],
            capture_output=True, text=True)

    @property
    def dev_password(self):
        return re.search(r"password for all of them this run: (\S+)\)", self.running.output()).group(1)

    def leaf_spki_hash(self):
        """base64 SHA-256 of the leaf certificate's public key: what Chromium's --ignore-certificate-errors-spki-list takes."""
        leaf = self.certificate.read_text().split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----\n"
        key = subprocess.run(["openssl", "x509", "-pubkey", "-noout"], input=leaf, capture_output=True, text=True, check=True).stdout
        der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=key.encode(), capture_output=True, check=True).stdout
        return base64.b64encode(hashlib.sha256(der).digest()).decode()


@pytest.fixture
def tls_gateway(tmp_path):
    gateway = TLSGateway(tmp_path)
    yield gateway
    gateway.running.stop()


def test_curl_over_https_trusts_the_development_authority_only(tls_gateway):
    gw = tls_gateway
    answer = gw.curl("/signin", "--http1.1", "-D", "-", "-o", "/dev/null")
    assert answer.returncode == 0, answer.stderr
    assert re.search(r"^HTTP/1.1 200", answer.stdout, re.M) and "strict-transport-security: max-age=31536000" in answer.stdout.lower()
    # Without the authority curl refuses the certificate; plain HTTP on the TLS port gets no answer.
    untrusted = subprocess.run(["curl", "-sS", "--max-time", "10", gw.url + "/healthz"], capture_output=True, text=True)
    assert untrusted.returncode == 60, untrusted  # SSL certificate problem
    plain = subprocess.run(["curl", "-sS", "--max-time", "10", f"http://localhost:{gw.port}/healthz"], capture_output=True, text=True)
    assert plain.returncode != 0 or "ok" not in plain.stdout
    # TLS 1.1 is refused; 1.2 and 1.3 are served.
    assert gw.curl("/healthz", "--tlsv1.1", "--tls-max", "1.1").returncode != 0
    assert gw.curl("/healthz", "--tlsv1.2", "--tls-max", "1.2").stdout == "ok\n"
    assert gw.curl("/healthz", "--tlsv1.3").stdout == "ok\n"


def test_the_journey_over_https_in_a_browser(tls_gateway):
    gw = tls_gateway
    browser = start_browser(extra_arguments=[f"--ignore-certificate-errors-spki-list={gw.leaf_spki_hash()}"])
    try:
        sign_in(browser, gw, "alice")
        assert browser.current_url.startswith(gw.url)
        # Chromium takes HTTP/2 when offered: the journey below runs over it.
        assert browser.execute_script("return performance.getEntriesByType('navigation')[0].nextHopProtocol") == "h2"
        browser.get(gw.url + "/apps/links/")
        wait(browser, lambda b: in_bar(b, "#gatehouse-banner-button").is_displayed())
        in_bar(browser, "#gatehouse-banner-button").click()
        wait(browser, lambda b: path_of(b) == "/upgrade/phone")
        submit(browser, "phone", "+1 555 010 0001", "send-code")
        wait(browser, lambda b: path_of(b) == "/upgrade/code")
        code_to_profile(browser, gw, "alice.tls")
        browser.find_element(By.CSS_SELECTOR, "input[name=discoverability]").click()
        page = browser.find_element(By.TAG_NAME, "html")
        browser.find_element(By.ID, "finish").click()
        wait(browser, replaced(page))
        wait(browser, lambda b: path_of(b).startswith("/upgrade/done"))
        # Back in the app where the upgrade started, now registered: no banner; the session cookie is Secure.
        browser.find_element(By.ID, "continue").click()
        wait(browser, lambda b: path_of(b).startswith("/apps/links/"))
        assert not browser.execute_script("return !!document.getElementById('gatehouse-bar').shadowRoot.getElementById('gatehouse-banner')")
        session = [c for c in browser.get_cookies() if c["name"] == "gatehouse_session"][0]
        assert session["secure"] and session["httpOnly"]
    finally:
        browser.quit()


def authority_issued(folder):
    """A test authority and a certificate it issued for localhost, as mkcert or an organization's CA make them: the
    certificate's file holds the leaf alone, and nothing but the browser (here: the clients below) trusts the authority."""
    folder.mkdir()

    def openssl(*arguments):
        subprocess.run(["openssl", *arguments], cwd=folder, capture_output=True, check=True)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=Gatehouse Test Authority", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "localhost-key.pem", "-out", "localhost.csr",
            "-subj", "/CN=localhost")
    (folder / "leaf.ext").write_text("subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", "localhost.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-days", "2",
            "-extfile", "leaf.ext", "-out", "localhost.pem")
    assert (folder / "localhost.pem").read_text().count("BEGIN CERTIFICATE") == 1
    return folder / "ca.pem", folder / "localhost.pem", folder / "localhost-key.pem"


def test_development_mode_signs_in_with_a_certificate_an_authority_issued(tmp_path):
    """The built-in provider is the gateway itself, asked in-process: a listener certificate whose authority the gateway
    has no file of still signs members in, over HTTP/1.1 and over HTTP/2."""
    import requests

    from conftest import Gateway

    authority, certificate, key = authority_issued(tmp_path / "authority")
    gw = TLSGateway(
        tmp_path, GATEHOUSE_LISTEN_TLS_CERTIFICATE_FILE=str(certificate), GATEHOUSE_LISTEN_TLS_PRIVATE_KEY_FILE=str(key),
        authority=str(authority))
    try:
        assert gw.curl("/healthz", "--http1.1").stdout == "ok\n"
        member = requests.Session()
        member.verify = str(authority)
        member.trust_env = False  # else REQUESTS_CA_BUNDLE in the environment replaces `verify`
        landed = Gateway.sign_in_by_form(gw, member, "alice")
        assert landed.url.rstrip("/") == gw.url, landed.url
        assert "Alice Archer" in landed.text and "provider_unreachable" not in landed.text
        browser = start_browser(extra_arguments=[f"--ignore-certificate-errors-spki-list={gw.leaf_spki_hash()}"])
        try:
            sign_in(browser, gw, "bob")
            assert browser.execute_script("return performance.getEntriesByType('navigation')[0].nextHopProtocol") == "h2"
            assert path_of(browser) == "/"
        finally:
            browser.quit()
    finally:
        gw.running.stop()


# ---------------------------------------------------------------- HTTP/2 and its hazards


import hpack  # noqa: E402  (installed with h2)
import hyperframe.frame  # noqa: E402


def h2_connection(gw):
    """A raw HTTP/2 connection (TLS with ALPN h2, the preface and settings exchanged) to frame by hand."""
    import socket
    import ssl

    import h2.config
    import h2.connection
    import h2.events

    context = ssl.create_default_context(cafile=str(gw.authority))
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(socket.create_connection(("localhost", gw.port), timeout=10), server_hostname="localhost")
    assert sock.selected_alpn_protocol() == "h2"
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    # The server's SETTINGS read and acknowledged: its limits are known before anything is sent.
    read_events(sock, connection, lambda events: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in events))
    return sock, connection


def request_headers(gw, path="/healthz", extra=()):
    return [(":method", "GET"), (":path", path), (":scheme", "https"), (":authority", f"localhost:{gw.port}"), *extra]


def read_events(sock, connection, until, seconds=10):
    """Reads frames until `until(events so far)` holds or the connection ends; returns the events."""
    import h2.events

    events, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline and not until(events):
        try:
            data = sock.recv(65536)
        except (TimeoutError, OSError):
            break
        if not data:
            events.append(h2.events.ConnectionTerminated())
            break
        try:
            events += connection.receive_data(data)
        except Exception as error:  # noqa: BLE001 (the server broke the protocol's rules for the client: a finding)
            raise AssertionError(f"the server's frames did not parse: {error}")
        sock.sendall(connection.data_to_send())
    return events


def server_frames(sock, seconds):
    """The frames the server sends, parsed as they arrive, for `seconds`; None once when it closes the connection."""
    buffer, deadline = b"", time.monotonic() + seconds
    sock.settimeout(0.5)
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except (TimeoutError, OSError):
            continue
        if not data:
            yield None
            return
        buffer += data
        while len(buffer) >= 9:
            frame, length = hyperframe.frame.Frame.parse_frame_header(memoryview(buffer[:9]))
            if len(buffer) < 9 + length:
                break
            frame.parse_body(memoryview(buffer[9 : 9 + length]))
            buffer = buffer[9 + length :]
            yield frame


def raw_frames(sock, seconds):
    """What the server does, for `seconds` or until it closes: the streams it reset as refused (or as a protocol
    error), and the GOAWAY it sent (its error code and last stream), if any."""
    refused, goaway = [], None
    for frame in server_frames(sock, seconds):
        if isinstance(frame, hyperframe.frame.RstStreamFrame) and frame.error_code in (1, 7):
            refused.append(frame.stream_id)
        if isinstance(frame, hyperframe.frame.GoAwayFrame):
            goaway = (frame.error_code, frame.last_stream_id)
            break
    return refused, goaway


def terminated(events):
    import h2.events

    return any(isinstance(event, h2.events.ConnectionTerminated) for event in events)


def open_streams(gw, count):
    """Opens `count` streams at once on a fresh connection, by hand-written HEADERS frames that do not end them, and
    returns what the server did (`raw_frames`); with `count` None, only the server's concurrent-stream limit."""
    sock, connection = h2_connection(gw)
    if count is None:
        sock.close()
        return connection.remote_settings.max_concurrent_streams
    encoder = hpack.Encoder()
    sock.sendall(b"".join(
        hyperframe.frame.HeadersFrame(stream, data=encoder.encode(request_headers(gw)), flags=["END_HEADERS"]).serialize()
        for stream in range(1, 2 * count, 2)))
    try:
        return raw_frames(sock, seconds=2)
    finally:
        sock.close()


def one_request(gw, headers):
    """One request with exactly these header fields (HPACK by hand, so nothing is checked on the way): the status,
    and whether the stream or the connection was reset instead."""
    sock, connection = h2_connection(gw)
    block = hpack.Encoder().encode(headers)
    sock.sendall(hyperframe.frame.HeadersFrame(1, data=block, flags=["END_HEADERS", "END_STREAM"]).serialize())
    status, reset, decoder = None, False, hpack.Decoder()
    for frame in server_frames(sock, 5):
        if isinstance(frame, hyperframe.frame.HeadersFrame) and frame.stream_id == 1:
            status = dict(decoder.decode(frame.data)).get(":status")
        reset = frame is None or isinstance(frame, (hyperframe.frame.RstStreamFrame, hyperframe.frame.GoAwayFrame))
        if status is not None or reset:
            break
    sock.close()
    return status, reset


def still_serving(gw):
    """Another member, on a connection of their own, is served meanwhile."""
    answer = gw.curl("/healthz", "--http2")
    return answer.stdout == "ok\n"


def test_http2_serves_the_same_gateway_and_holds_its_limits(tls_gateway):
    import h2.events
    import h2.exceptions

    gw = tls_gateway
    answer = gw.curl("/signin", "--http2", "-D", "-", "-o", "/dev/null")
    assert re.search(r"^HTTP/2 200", answer.stdout, re.M) and "content-security-policy" in answer.stdout.lower(), answer.stdout

    # More streams at once than the server allows: HEADERS frames written by hand (the client library would hold
    # back by itself), none of them ended. As many as its SETTINGS allow are taken; 20 more and the server refuses
    # them (RST_STREAM) or ends the connection (NIOHTTP2 sends GOAWAY PROTOCOL_ERROR); others are served meanwhile.
    allowed = open_streams(gw, None)
    assert allowed <= 128, allowed
    assert open_streams(gw, allowed) == ([], None)
    refused, goaway = open_streams(gw, allowed + 20)
    assert goaway or len(refused) >= 20, (len(refused), goaway)
    assert still_serving(gw)

    # What HTTP/1.1 would read as framing or a second header has no place in HTTP/2: a field value with CR LF, a
    # Transfer-Encoding, a Connection header. Each request is refused before the application (no downgrade smuggling).
    for field in [("x-note", "a\r\nx-injected: 1"), ("transfer-encoding", "chunked"), ("connection", "keep-alive")]:
        status, reset = one_request(gw, request_headers(gw, "/healthz", extra=[field]))
        assert reset or status == "400", (field, status)
    assert one_request(gw, request_headers(gw, "/healthz")) == ("200", False)

    # A header list far over the limit: refused (the stream or the connection), nothing reaches the application.
    sock, connection = h2_connection(gw)
    connection.send_headers(1, request_headers(gw, extra=[("x-padding", "a" * 60000)]), end_stream=True)
    sock.sendall(connection.data_to_send())
    events = read_events(sock, connection, lambda events: terminated(events) or any(isinstance(e, (h2.events.StreamReset, h2.events.ResponseReceived)) for e in events))
    responses = [e for e in events if isinstance(e, h2.events.ResponseReceived)]
    assert terminated(events) or any(isinstance(e, h2.events.StreamReset) for e in events) or (
        responses and dict(responses[0].headers).get(":status") == "431"), events
    sock.close()
    assert still_serving(gw)

    # Rapid reset (CVE-2023-44487): streams opened and reset at once, by the thousand. The server ends the
    # connection (GOAWAY) instead of working on every one.
    sock, connection = h2_connection(gw)
    ended = False
    for _ in range(2000):
        try:
            stream = connection.get_next_available_stream_id()
            connection.send_headers(stream, request_headers(gw), end_stream=True)
            connection.reset_stream(stream)
            sock.sendall(connection.data_to_send())
        except (h2.exceptions.ProtocolError, OSError):
            ended = True
            break
    events = read_events(sock, connection, terminated, seconds=5)
    assert ended or terminated(events), "2000 reset streams did not end the connection"
    sock.close()
    assert still_serving(gw)

    # A flood of CONTINUATION frames after a HEADERS frame that never ends its block: cut off.
    sock, connection = h2_connection(gw)
    encoded = connection.encoder.encode(request_headers(gw))
    first = hyperframe.frame.HeadersFrame(1, data=encoded)  # no END_HEADERS
    sent = first.serialize()
    try:
        sock.sendall(sent)
        for _ in range(5000):
            frame = hyperframe.frame.ContinuationFrame(1, data=b"")
            sock.sendall(frame.serialize())
    except OSError:
        pass
    events = read_events(sock, connection, terminated, seconds=5)
    assert terminated(events) or sock.fileno() == -1 or not sock.recv(1), events
    sock.close()

    # A flood of PINGs the client never reads the answers to: the server stops before its buffers grow without end.
    sock, connection = h2_connection(gw)
    ping = hyperframe.frame.PingFrame(0, opaque_data=b"12345678").serialize()
    sent_bytes = 0
    try:
        for _ in range(200000):
            sock.sendall(ping)
            sent_bytes += len(ping)
    except OSError:
        pass
    sock.close()
    assert still_serving(gw)
    assert gw.running.process.poll() is None


def test_http2_connections_end_when_idle_or_closed_by_the_client(tmp_path):
    """An HTTP/2 connection without streams for `listen.idle_timeout_seconds` is ended by a graceful GOAWAY; one the
    client closes its side of is closed at once, and neither holds the gateway's shutdown."""
    import socket
    import ssl

    gw = TLSGateway(tmp_path, GATEHOUSE_LISTEN_IDLE_TIMEOUT_SECONDS="2")
    try:
        sock, connection = h2_connection(gw)
        started, goaway, closed = time.monotonic(), None, False
        for frame in server_frames(sock, 8):
            if frame is None:
                closed = True
            elif isinstance(frame, hyperframe.frame.GoAwayFrame):
                goaway = goaway or (frame.error_code, time.monotonic() - started)
            elif isinstance(frame, hyperframe.frame.PingFrame) and "ACK" not in frame.flags:
                acknowledgement = hyperframe.frame.PingFrame(0, opaque_data=frame.opaque_data, flags=["ACK"])
                sock.sendall(acknowledgement.serialize())
        sock.close()
        assert goaway is not None and goaway[0] == 0 and 1.5 <= goaway[1] < 6 and closed, goaway

        sock, connection = h2_connection(gw)
        sock.sendall(hyperframe.frame.HeadersFrame(1, data=hpack.Encoder().encode(request_headers(gw)), flags=["END_HEADERS", "END_STREAM"]).serialize())
        try:
            sock.unwrap()  # TLS close_notify: the client's side closed, cleanly, the socket still open for reading
        except ssl.SSLError:
            pass  # the close_notify went out; the server's answer, sent before it saw it, is not read as TLS here
        sock.settimeout(5)
        started = time.monotonic()
        while socket.socket.recv(sock, 65536):
            pass
        assert time.monotonic() - started < 1.5
        sock.close()

        stopping = time.monotonic()
        gw.running.stop()
        assert time.monotonic() - stopping < 10
    finally:
        gw.running.stop()
