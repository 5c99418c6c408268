"""Gatehouse side by side with its peers, in one run, on one upstream (see bench/peers.sh, which installs and builds).

Targets, each asked as a browser navigation (`Sec-Fetch-Dest: document`) through wrk:
  direct          the upstream nginx itself
  nginx           nginx reverse proxy, banner by sub_filter after <body>, CSP header, no sign-in
  apache-oidc     Apache 2.4 + mod_auth_openidc with a real signed-in session (oidc-provider-mock), proxy,
                  banner by mod_substitute, CSP header
  gatehouse-sso   Gatehouse, a member at level sso: the app's cookie from the jar, CSP merge, URL rewriting, banner
  gatehouse-reg   Gatehouse, a registered member (no banner)
  gatehouse-host  gatehouse-sso on a host-mounted app, on its own host (`bench-host.apps.localhost`, its grant cookie)
  gatehouse-post  gatehouse-sso posting a 4 KB form to the path-mounted app, which answers with the page
  gatehouse-sso-noassertion  gatehouse-sso on an app with `assertion: false`: what the signed identity assertion costs
  gatehouse-traced  gatehouse-sso on a gateway exporting its spans over OTLP/HTTP to a sink: what tracing costs
  caddy           Caddy reverse_proxy with a CSP header, no banner (Debian's Caddy has no body rewriting), no sign-in
  nginx-gzip, gatehouse-sso-gzip  the same two asked with `Accept-Encoding: gzip`: nginx gzips at `gzip_comp_level 1`,
                  Gatehouse compresses the page it rewrote (`proxy.compress_pages`); the table gives the bytes on the wire
  nginx-tls, caddy-tls, gatehouse-tls  the same over HTTPS/1.1 (wrk), one ECDSA P-256 certificate for all
  nginx-h2, gatehouse-h2  nginx and Gatehouse over HTTP/2 (h2load, one stream per connection as wrk's; its latency
                  columns are the mean and the slowest request, h2load has no percentiles)
  ceiling-hummingbird  what the design Gatehouse serves with today allows: a minimal Hummingbird + async-http-client
                  streaming proxy (bench/ceilings), nothing else
  ceiling-nio     what a channel-level design allows: a minimal NIO proxy, the browser's connection glued to a kept-alive
                  upstream connection of the same event loop (bench/ceilings), nothing else
  ceiling-splice  what NIO's channel layer itself costs: each browser connection's bytes copied to and from an upstream
                  connection of its own, no HTTP codec at all (bench/ceilings)
Pages: a 10 KB HTML page and a 1 MB JSON file. Within a page every target runs once per round, in an order rotated
every round, so slow drifts of a shared machine hit every target alike; the table shows medians over the rounds.
Then a 100 MB HTML page through Gatehouse's injector, with the growth of its peak RSS.

The ceilings add no CSP and no banner: they show what each design leaves for Gatehouse's own work.

Environment: GATEHOUSE_BIN (release binary), CEILINGS_BIN (the folder of bench/ceilings' release build, for the
ceilings), GATEHOUSE_BASELINE_BIN (an earlier build, measured beside it as
gatehouse-*-baseline), DURATION (10s), CONNECTIONS (32), THREADS (2), ROUNDS (3), TARGETS, PAGES, PHASES (1: with perf
installed, a profile of gatehouse-sso's page split into the data plane's phases, bench/phases.py; 0: none).
"""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urljoin

import requests

import gatehouse
import phases
from gatehouse import Process, answers, free_port, wait_until
BANNER = '<div id="gw-banner" style="background:#fc0;padding:4px">GATEWAY BANNER</div>'
CSP = "default-src 'self'; frame-ancestors 'none'; object-src 'none'"
DURATION = os.environ.get("DURATION", "10s")
CONNECTIONS = os.environ.get("CONNECTIONS", "32")
THREADS = os.environ.get("THREADS", "2")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
TARGETS = os.environ.get(
    "TARGETS",
    "direct nginx nginx-gzip nginx-tls nginx-h2 apache-oidc caddy caddy-tls ceiling-hummingbird ceiling-nio ceiling-splice "
    "gatehouse-sso gatehouse-sso-gzip gatehouse-sso-noassertion gatehouse-reg gatehouse-host gatehouse-post gatehouse-traced gatehouse-tls gatehouse-h2",
).split()
GZIP = ("Accept-Encoding: gzip",)
# A form of 4 KB posted from the gateway's own page (the origin checks of unsafe methods pass), as wrk sends it.
POST_BODY = "field=" + "x" * (4096 - len("field="))
POST = ("Content-Type: application/x-www-form-urlencoded", "Sec-Fetch-Site: same-origin")
CERTIFICATE = [None]  # the run's certificate, which the checks trust
PAGES = os.environ.get("PAGES", "page10k.html data1m.json").split()
USER = {
    "sub": "f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
    "preferred_username": "alice",
    "email": "alice@example.com",
    "name": "Alice Example",
    "realm_access": {"roles": ["user"]},
    "groups": ["staff"],
}


def wait_http(url, what):
    wait_until(lambda: answers(url) is not None, f"peers: {what} did not come up at {url}")


class Run:
    def __init__(self):
        self.work = Path(tempfile.mkdtemp(prefix="gatehouse-peers-"))
        self.work.chmod(0o755)  # nginx's and Apache's workers run as another user
        self.processes = []
        self.stops = []
        self.ports = {
            name: free_port()
            for name in ["upstream", "nginx", "nginx-tls", "apache", "idp", "caddy", "caddy-tls", "ceiling-hummingbird", "ceiling-nio", "ceiling-splice"]
        }
        self.certificate, self.key = self.work / "localhost.pem", self.work / "localhost-key.pem"

    def close(self):
        for stop in reversed(self.stops):
            subprocess.run(stop, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for process in self.processes:
            process.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def spawn(self, arguments, log):
        process = Process(arguments, self.work / log)
        self.processes.append(process)
        return process

    # ---------------------------------------------------------------- content and upstream

    def content(self):
        """The page shape of the peers' own benchmark: a stylesheet link, rows of text with attributes, one link."""
        www = self.work / "www"
        www.mkdir()
        text = "Gatehouse benchmark row: ordinary words of a page, about as long as a paragraph of an internal app's."
        head = (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>page</title>\n'
            '<link rel="stylesheet" href="/style.css">\n</head>\n<body class="x">\n<h1 id="title">page</h1>\n'
        )
        tail = '<p id="end"><a href="/page10k.html">again</a></p>\n</body>\n</html>\n'

        def page(size):
            rows, number = [], 0
            while len(head) + sum(map(len, rows)) + len(tail) + 200 < size:
                rows.append(f'<p class="row" data-i="{number}">{number:05d} {text}</p>\n')
                number += 1
            document = head + "".join(rows)
            padding = size - len(document) - len(tail) - len("<!---->\n")
            return document + "<!--" + "p" * padding + "-->\n" + tail

        (www / "page10k.html").write_text(page(10240))
        items = json.dumps([{"id": i, "name": f"item {i}", "tags": ["a", "b"], "value": i * 3.25} for i in range(20000)])
        (www / "data1m.json").write_text(items[: (1 << 20) - 1] + "]")
        paragraph = page(10240)[len(head) : -len(tail)]
        with open(www / "page100m.html", "w") as big:
            big.write(head)
            chunk = paragraph * 100
            for _ in range((100 << 20) // len(chunk)):
                big.write(chunk)
            big.write(tail)
        self.run_dir = self.work / "run"
        for directory in ["run", "run/tmp", "apache"]:
            (self.work / directory).mkdir()
        shutil.chown(self.work / "run/tmp", "www-data")

    def nginx_configuration(self, name, server):
        temp = self.work / "run/tmp"
        return f"""
{"user www-data;" if os.geteuid() == 0 else ""}
worker_processes auto;
pid {self.work}/run/{name}.pid;
error_log {self.work}/{name}-error.log warn;
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    access_log off;
    sendfile on; tcp_nodelay on;
    keepalive_requests 1000000;
    client_body_temp_path {temp}/{name}-body; proxy_temp_path {temp}/{name}-proxy;
    fastcgi_temp_path {temp}/{name}-fcgi; uwsgi_temp_path {temp}/{name}-uwsgi; scgi_temp_path {temp}/{name}-scgi;
    {server}
}}
"""

    def upstream(self):
        server = f"""
    server {{
        listen 127.0.0.1:{self.ports["upstream"]};
        root {self.work}/www;
        etag off;
        # A POST to a page is read whole, then answered with the page, as an app answers a form (nginx's static files
        # refuse POST, and would answer before reading the body): through nginx's own proxy to this server, as a GET.
        location / {{
            if ($request_method = POST) {{ rewrite ^(.*)$ /read-then-serve$1 last; }}
        }}
        location /read-then-serve/ {{
            internal;
            proxy_method GET;
            proxy_pass http://127.0.0.1:{self.ports["upstream"]}/;
        }}
        location = /setcookie {{
            add_header Set-Cookie "app_session=$request_id; Path=/; HttpOnly; SameSite=Lax";
            default_type text/html; return 200 "<!doctype html><title>set</title><body>set</body>";
        }}
    }}"""
        self.start_nginx("upstream", server)
        wait_http(f"http://127.0.0.1:{self.ports['upstream']}/page10k.html", "upstream nginx")

    def start_nginx(self, name, server):
        path = self.work / f"{name}.conf"
        path.write_text(self.nginx_configuration(name, server))
        subprocess.run(["nginx", "-q", "-p", str(self.work), "-e", str(self.work / f"{name}-error.log"), "-c", str(path)], check=True)
        self.stops.append(["nginx", "-q", "-p", str(self.work), "-e", str(self.work / f"{name}-error.log"), "-c", str(path), "-s", "stop"])

    # ---------------------------------------------------------------- peers

    def certificates(self):
        """One ECDSA P-256 certificate for localhost, for every target over TLS."""
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
             "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
             "-keyout", str(self.key), "-out", str(self.certificate)],
            check=True, capture_output=True)
        self.key.chmod(0o644)  # nginx's workers read it as another user

    def nginx_proxy(self):
        server = f"""
    upstream app {{ server 127.0.0.1:{self.ports["upstream"]}; keepalive 64; keepalive_requests 1000000; }}
    server {{
        listen 127.0.0.1:{self.ports["nginx"]};
        listen 127.0.0.1:{self.ports["nginx-tls"]} ssl http2;
        ssl_certificate {self.certificate}; ssl_certificate_key {self.key};
        ssl_session_cache shared:tls:10m;
        location / {{
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header Accept-Encoding "";
            proxy_buffers 64 16k; proxy_buffer_size 16k;
            sub_filter '<body class="x">' '<body class="x">{BANNER}';
            sub_filter '<body>' '<body>{BANNER}';
            sub_filter_once on;
            proxy_hide_header Content-Security-Policy;
            add_header Content-Security-Policy "{CSP}" always;
            gzip on; gzip_comp_level 1; gzip_min_length 1024; gzip_vary on;
        }}
    }}"""
        self.start_nginx("nginx-proxy", server)
        wait_http(f"http://127.0.0.1:{self.ports['nginx']}/page10k.html", "nginx proxy")

    def caddy(self):
        """Peer C of ../shared/peers: Caddy's reverse_proxy with pooled connections, the CSP replacing the upstream's."""
        proxy = f"""
    reverse_proxy 127.0.0.1:{self.ports["upstream"]} {{
        header_up -Accept-Encoding
        header_down Content-Security-Policy "{CSP}"
        transport http {{
            keepalive 65s
            keepalive_idle_conns 64
            keepalive_idle_conns_per_host 64
        }}
    }}"""
        path = self.work / "Caddyfile"
        path.write_text(f"""{{
    admin off
    auto_https off
    storage file_system {self.work}/caddy-data
    log {{
        output file {self.work}/caddy.log
        level WARN
    }}
}}
http://127.0.0.1:{self.ports["caddy"]} {{
    bind 127.0.0.1{proxy}
}}
https://localhost:{self.ports["caddy-tls"]} {{
    bind 127.0.0.1
    tls {self.certificate} {self.key}{proxy}
}}
""")
        process = self.spawn(["caddy", "run", "--config", str(path), "--adapter", "caddyfile"], "caddy.log.out")
        wait_http(f"http://127.0.0.1:{self.ports['caddy']}/page10k.html", "caddy")
        return process.process.pid

    def ceiling(self, name):
        """One of bench/ceilings' proxies, in front of the same upstream."""
        binary = Path(os.environ["CEILINGS_BIN"]) / name
        process = self.spawn([str(binary), str(self.ports[name]), str(self.ports["upstream"])], f"{name}.log")
        wait_http(f"http://127.0.0.1:{self.ports[name]}/page10k.html", name)
        return process.process.pid

    def identity_provider(self):
        self.spawn(
            ["oidc-provider-mock", "--host", "127.0.0.1", "--port", str(self.ports["idp"]), "--user-claims", json.dumps(USER)],
            "idp.log",
        )
        wait_http(f"http://127.0.0.1:{self.ports['idp']}/.well-known/openid-configuration", "oidc-provider-mock")

    def apache(self):
        port, idp, upstream = self.ports["apache"], self.ports["idp"], self.ports["upstream"]
        modules = "/usr/lib/apache2/modules"
        configuration = f"""
ServerRoot "{self.work}/apache"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile "{self.work}/run/apache.pid"
Mutex file:{self.work}/apache
DefaultRuntimeDir "{self.work}/apache"
ErrorLog "{self.work}/apache-error.log"
LogLevel warn
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule authz_user_module {modules}/mod_authz_user.so
LoadModule authn_core_module {modules}/mod_authn_core.so
LoadModule mime_module {modules}/mod_mime.so
LoadModule filter_module {modules}/mod_filter.so
LoadModule headers_module {modules}/mod_headers.so
LoadModule substitute_module {modules}/mod_substitute.so
LoadModule proxy_module {modules}/mod_proxy.so
LoadModule proxy_http_module {modules}/mod_proxy_http.so
LoadModule auth_openidc_module {modules}/mod_auth_openidc.so
User www-data
Group www-data
TypesConfig /etc/mime.types
StartServers 4
ServerLimit 4
ThreadsPerChild 32
MaxRequestWorkers 128
MinSpareThreads 32
MaxSpareThreads 128
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 65
OIDCProviderMetadataURL http://127.0.0.1:{idp}/.well-known/openid-configuration
OIDCClientID gateway
OIDCClientSecret gateway-secret
OIDCRedirectURI http://127.0.0.1:{port}/oidc/callback
OIDCCryptoPassphrase "{os.urandom(18).hex()}"
OIDCScope "openid email profile"
OIDCPKCEMethod S256
OIDCSessionType server-cache
OIDCCacheType shm
OIDCSessionInactivityTimeout 3600
OIDCRemoteUserClaim preferred_username
OIDCPassClaimsAs headers
OIDCStripCookies mod_auth_openidc_session mod_auth_openidc_session_chunks
<VirtualHost 127.0.0.1:{port}>
    ProxyRequests Off
    ProxyPreserveHost On
    ProxyPass /oidc/callback !
    ProxyPass / http://127.0.0.1:{upstream}/
    ProxyPassReverse / http://127.0.0.1:{upstream}/
    <Location />
        AuthType openid-connect
        Require valid-user
    </Location>
    RequestHeader unset Accept-Encoding
    Header unset Content-Security-Policy
    Header always set Content-Security-Policy "{CSP}"
    AddOutputFilterByType SUBSTITUTE text/html
    Substitute 's|(<body[^>]*>)|$1{BANNER}|iq'
</VirtualHost>
"""
        path = self.work / "apache.conf"
        path.write_text(configuration)
        shutil.chown(self.work / "apache", "www-data")
        command = ["apache2", "-d", str(self.work / "apache"), "-f", str(path)]
        subprocess.run(command + ["-k", "start"], check=True)
        self.stops.append(command + ["-k", "stop"])
        wait_http(f"http://127.0.0.1:{port}/page10k.html", "Apache")
        # Sign in as a browser would: the protected page sends us to the provider, whose form we answer.
        http = requests.Session()
        reply = http.get(f"http://127.0.0.1:{port}/page10k.html", allow_redirects=False)
        authorize = reply.headers["Location"]
        http.get(authorize)
        reply = http.post(authorize, data={"sub": USER["sub"]}, allow_redirects=False)
        while reply.status_code in (302, 303) and "mod_auth_openidc_session" not in http.cookies:
            reply = http.get(urljoin(reply.url, reply.headers["Location"]), allow_redirects=False)
        session = http.cookies.get("mod_auth_openidc_session")
        if not session:
            sys.exit(f"peers: signing in through Apache failed ({reply.status_code}); see {self.work}/apache-error.log")
        return f"mod_auth_openidc_session={session}"

    def gatehouse(self, binary, name, tls=False, settings=None):
        """Gatehouse in front of the upstream, with a member at level `sso` and a registered one, each with the app's
        own session cookie in their jar (every measured request carries it upstream); with `tls`, over HTTPS."""
        process, origin, password = gatehouse.start(
            binary, self.work, name, f"http://127.0.0.1:{self.ports['upstream']}/", tls=(self.certificate, self.key) if tls else None,
            settings=settings)
        self.processes.append(process)

        def member(*arguments):
            http = gatehouse.sign_in(origin, password, *arguments, verify=str(self.certificate) if tls else True)
            http.get(f"{origin}/apps/bench/setcookie").raise_for_status()
            return f"gatehouse_session={http.cookies['gatehouse_session']}"

        return process, origin, password, member("alice"), member("bob", ("bob.bench", "+15550100123"))

    @staticmethod
    def host_grant(origin, password, tls=False):
        """A member signed in and let into the host-mounted `bench-host` app (its handoff, as a browser makes it): the
        base URL on the gateway's listener, the app host's `Host` header and the grant cookie."""
        verify = str(CERTIFICATE[0]) if tls else True
        http = gatehouse.sign_in(origin, password, "olive", verify=verify)
        host = f"bench-host.apps.localhost:{origin.rsplit(':', 1)[1]}"
        first = requests.get(f"{origin}/setcookie", headers={"Host": host}, allow_redirects=False, verify=verify)
        state = first.cookies["gatehouse_app_state"]
        handoff = http.get(first.headers["Location"], allow_redirects=False).headers["Location"]
        path = handoff.split(host, 1)[1]
        redeemed = requests.get(
            origin + path, headers={"Host": host, "Cookie": f"gatehouse_app_state={state}"}, allow_redirects=False, verify=verify)
        grant = f"gatehouse_app={redeemed.cookies['gatehouse_app']}"
        # The app's own session cookie in the jar, as for the path-mounted members.
        requests.get(f"{origin}/setcookie", headers={"Host": host, "Cookie": grant}, verify=verify).raise_for_status()
        return origin + "/", f"Host: {host}", grant


def otlp_sink():
    """An OTLP/HTTP receiver that reads and drops what it gets, in a thread of this process: its URL."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Sink(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *arguments):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def cpu_seconds(root):
    """User and system CPU seconds of process `root` and every process below it (nginx's workers), from /proc."""
    ticks, parents = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        pid = int(stat.parent.name)
        parents[pid], ticks[pid] = int(fields[1]), int(fields[11]) + int(fields[12])
    tree, grew = {root}, True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        grew = bool(below)
        tree |= below
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


def load(name, url, cookie, headers, duration=None):
    """wrk, or h2load for the HTTP/2 targets; the POST targets post `POST_BODY`."""
    if name.endswith("-h2"):
        return gatehouse.h2load(url, cookie, THREADS, CONNECTIONS, duration or DURATION, headers)
    body = POST_BODY if is_post(name) else None
    return gatehouse.wrk(url, cookie, THREADS, CONNECTIONS, duration or DURATION, headers, body=body)


def is_post(name):
    return name.removesuffix("-baseline").endswith("-post")


def check(name, url, cookie, banner, headers):
    """Every target answers 200, with the CSP, and on HTML with the banner (a marker) or without, before it is measured.
    Returns the body's size on the wire (gzipped where the target compressed it)."""
    asked = {"Cookie": cookie or "", "Sec-Fetch-Dest": "document", "Accept-Encoding": "identity"}
    asked.update(header.split(": ", 1) for header in headers)
    verify = str(CERTIFICATE[0]) if url.startswith("https:") else True
    method, body = ("POST", POST_BODY) if is_post(name) else ("GET", None)
    reply = requests.request(method, url, headers=asked, data=body, allow_redirects=False, stream=True, verify=verify)
    wire = reply.raw.read(decode_content=False)
    reply = requests.request(method, url, headers=asked, data=body, allow_redirects=False, verify=verify)
    if reply.status_code != 200:
        sys.exit(f"peers: {name}: {url} answered {reply.status_code}")
    if name != "direct" and not name.startswith("ceiling-") and "content-security-policy" not in reply.headers:
        sys.exit(f"peers: {name}: {url} has no Content-Security-Policy")
    if banner and url.endswith(".html") and (banner[0] in reply.text) != banner[1]:
        sys.exit(f"peers: {name}: {url}: banner {'missing' if banner[1] else 'present'}")
    if GZIP[0] in headers and url.endswith(".html") and reply.headers.get("Content-Encoding") != "gzip":
        sys.exit(f"peers: {name}: {url} was not gzipped")
    return len(wire)


def main():
    # Stopped by a signal (`timeout`, a terminal closing): still stop every server it started, as at the end.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("peers: stopped"))
    run = Run()
    try:
        run.content()
        run.certificates()
        CERTIFICATE[0] = run.certificate
        run.upstream()
        ports = run.ports
        # name: (base URL, cookie, banner marker and whether it is expected, more request headers)
        targets = {"direct": (f"http://127.0.0.1:{ports['upstream']}/", None, None, ())}
        # The server process whose CPU a target's pages cost (the proxy's, not the upstream's), where the run knows it.
        servers = {}
        if any(name.startswith("nginx") for name in TARGETS):
            run.nginx_proxy()
            targets["nginx"] = (f"http://127.0.0.1:{ports['nginx']}/", None, (BANNER, True), ())
            for name in ("nginx", "nginx-gzip", "nginx-tls", "nginx-h2"):
                servers[name] = int((run.work / "run" / "nginx-proxy.pid").read_text())
            targets["nginx-gzip"] = (f"http://127.0.0.1:{ports['nginx']}/", None, (BANNER, True), GZIP)
            targets["nginx-tls"] = (f"https://localhost:{ports['nginx-tls']}/", None, (BANNER, True), ())
            targets["nginx-h2"] = (f"https://localhost:{ports['nginx-tls']}/", None, (BANNER, True), ())
        if any(name.startswith("caddy") for name in TARGETS):
            servers["caddy"] = servers["caddy-tls"] = run.caddy()
            targets["caddy"] = (f"http://127.0.0.1:{ports['caddy']}/", None, None, ())
            targets["caddy-tls"] = (f"https://localhost:{ports['caddy-tls']}/", None, None, ())
        for name in ("ceiling-hummingbird", "ceiling-nio", "ceiling-splice"):
            if name in TARGETS:
                servers[name] = run.ceiling(name)
                targets[name] = (f"http://127.0.0.1:{ports[name]}/", None, None, ())
        if "apache-oidc" in TARGETS:
            run.identity_provider()
            targets["apache-oidc"] = (f"http://127.0.0.1:{ports['apache']}/", run.apache(), (BANNER, True), ())
            servers["apache-oidc"] = int((run.work / "run" / "apache.pid").read_text())
        # GATEHOUSE_BASELINE_BIN: an earlier build measured beside this one, in the same rounds.
        builds = [("", os.environ["GATEHOUSE_BIN"])]
        if os.environ.get("GATEHOUSE_BASELINE_BIN"):
            builds.append(("-baseline", os.environ["GATEHOUSE_BASELINE_BIN"]))
        for suffix, binary in builds:
            process, origin, password, sso, registered = run.gatehouse(binary, "gatehouse" + suffix)
            base = f"{origin}/apps/bench/"
            if not suffix:
                measured = (process, base, sso)
            targets["gatehouse-sso" + suffix] = (base, sso, ("gatehouse-banner", True), ())
            for measured_name in ("gatehouse-sso", "gatehouse-sso-gzip", "gatehouse-sso-noassertion", "gatehouse-reg", "gatehouse-host", "gatehouse-post"):
                servers[measured_name + suffix] = process.process.pid
            targets["gatehouse-sso-gzip" + suffix] = (base, sso, ("gatehouse-banner", True), GZIP)
            targets["gatehouse-sso-noassertion" + suffix] = (base.replace("/apps/bench/", "/apps/bench-plain/"), sso, ("gatehouse-banner", True), ())
            targets["gatehouse-reg" + suffix] = (base, registered, ("gatehouse-banner", False), ())
            if "gatehouse-host" in TARGETS:
                # The same page from a host-mounted app, on its own host (`bench-host.apps.localhost`).
                host_base, host, grant = run.host_grant(origin, password)
                targets["gatehouse-host" + suffix] = (host_base, grant, ("gatehouse-banner", True), (host,))
            if not suffix:
                # A 4 KB form posted to the path-mounted app, which answers with the page (`POST_BODY`). Not for a
                # baseline: builds before the data plane took bodies lost a connection in about a hundred posts.
                targets["gatehouse-post"] = (base, sso, ("gatehouse-banner", True), POST)
            if not suffix and "gatehouse-traced" in TARGETS:
                # The same gateway exporting its spans over OTLP/HTTP to a sink that takes them and answers at once.
                traced, traced_origin, _, traced_sso, _ = run.gatehouse(binary, "gatehouse-traced", settings={"tracing": {"otlp_endpoint": otlp_sink()}})
                servers["gatehouse-traced"] = traced.process.pid
                targets["gatehouse-traced"] = (f"{traced_origin}/apps/bench/", traced_sso, ("gatehouse-banner", True), ())
            if not suffix and ("gatehouse-tls" in TARGETS or "gatehouse-h2" in TARGETS):
                tls_process, tls_origin, _, tls_sso, _ = run.gatehouse(binary, "gatehouse-tls", tls=True)
                servers["gatehouse-tls"] = servers["gatehouse-h2"] = tls_process.process.pid
                tls_base = f"{tls_origin}/apps/bench/"
                targets["gatehouse-tls"] = (tls_base, tls_sso, ("gatehouse-banner", True), ())
                targets["gatehouse-h2"] = (tls_base, tls_sso, ("gatehouse-banner", True), ())
        targets = {name: value for name, value in targets.items() if name == "direct" or name.removesuffix("-baseline") in TARGETS}
        wire = {}
        for page in PAGES:
            for name, (base, cookie, banner, headers) in targets.items():
                wire[(page, name)] = check(name, base + page, cookie, banner, headers)
                # A warm-up for every target, as ../shared/peers does: pools, caches and the first connections are
                # made before anything is measured.
                load(name, base + page, cookie, headers, "2s")

        cores = os.cpu_count()
        memory = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1)) // (1 << 20)
        print(f"# {time.strftime('%Y-%m-%d')} · {cores} cores, {memory} GiB, {os.uname().sysname} {os.uname().release}")
        print(f"# wrk -t{THREADS} -c{CONNECTIONS} -d{DURATION} --latency, {ROUNDS} rounds, order rotated every round")
        results = {}
        names = list(targets)
        for page in PAGES:
            for round in range(ROUNDS):
                order = names[round % len(names) :] + names[: round % len(names)]
                for name in order:
                    base, cookie, _, headers = targets[name]
                    before = cpu_seconds(servers[name]) if name in servers else None
                    started = time.monotonic()
                    rps, p50, p99 = load(name, base + page, cookie, headers)
                    # CPU per page: the server's CPU time over the pages wrk completed (rate × time taken).
                    cpu = (cpu_seconds(servers[name]) - before) / (rps * (time.monotonic() - started)) * 1e6 if before is not None else None
                    results.setdefault((page, name), []).append((rps, p50, p99, cpu))
                    shown_cpu = f" cpu_us={cpu:.0f}" if cpu is not None else ""
                    print(f"RUN page={page} round={round + 1} target={name} rps={rps:.0f} p50_ms={p50:.2f} p99_ms={p99:.2f}{shown_cpu}", flush=True)
        print()
        # Beside req/s, each target's CPU per page and its multiple of nginx's (the plain proxy's, the TLS one's for
        # the HTTPS and HTTP/2 rows), which moves less with the machine than the rates do.
        print("| page | target | req/s | × direct | p50 | p99 | CPU per page | CPU × nginx | bytes on the wire |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for page in PAGES:
            direct = statistics.median(r[0] for r in results[(page, "direct")])

            def cpu_of(name):
                runs = results.get((page, name))
                return statistics.median(r[3] for r in runs) if runs and runs[0][3] is not None else None

            for name in names:
                runs = results[(page, name)]
                rps = statistics.median(r[0] for r in runs)
                p50 = statistics.median(r[1] for r in runs)
                p99 = statistics.median(r[2] for r in runs)
                # h2load gives the mean and the slowest request instead of percentiles.
                shown = f"{p50:.2f} ms (mean) | {p99:.2f} ms (max)" if name.endswith("-h2") else f"{p50:.2f} ms | {p99:.2f} ms"
                cpu = cpu_of(name)
                reference = cpu_of("nginx-h2" if name.endswith("-h2") else "nginx-tls" if name.endswith("-tls") else "nginx")
                times = f"{cpu / reference:.1f}" if cpu is not None and reference else ""
                shown_cpu = f"{cpu:.0f} µs" if cpu is not None else ""
                print(f"| {page} | {name} | {rps:,.0f} | {rps / direct:.2f} | {shown} | {shown_cpu} | {times} | {wire[(page, name)]:,} |")

        # Where the member's page goes, phase by phase (bench/phases.py), from a profile of one more load of the same
        # page, beside nginx's CPU per page of the rounds above.
        process, base, sso = measured
        if shutil.which("perf") and os.environ.get("PHASES", "1") != "0" and "gatehouse-sso" in names:
            page = PAGES[0]
            recording = subprocess.Popen(
                ["perf", "record", "-e", "cpu-clock", "-g", "-p", str(process.process.pid), "-o", str(run.work / "phases.data")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
            load("gatehouse-sso", base + page, sso, ())
            recording.send_signal(signal.SIGINT)
            recording.wait()
            per_page = statistics.median(r[3] for r in results[(page, "gatehouse-sso")])
            nginx = results.get((page, "nginx"))
            print()
            print(f"Where the CPU of a page at `sso` goes ({page}, perf record -e cpu-clock -g of one more load):")
            print()
            print(phases.table(run.work / "phases.data", per_page, statistics.median(r[3] for r in nginx) if nginx else None))

        # The 100 MB page streamed through the injector: how much the gateway's peak memory grows.
        pid = process.process.pid
        before = gatehouse.memory_mib(pid)["VmRSS"]
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets the peak to the current RSS
        started = time.time()
        reply = requests.get(base + "page100m.html", headers={"Cookie": sso, "Sec-Fetch-Dest": "document"}, stream=True)
        size = sum(len(chunk) for chunk in reply.iter_content(1 << 16))
        elapsed = time.time() - started
        peak = gatehouse.memory_mib(pid)["VmHWM"]
        print()
        print(f"100 MB page through the injector: {size:,} bytes in {elapsed:.1f} s; RSS {before} MiB before, peak {peak} MiB (+{peak - before} MiB)")
    finally:
        run.close()


if __name__ == "__main__":
    main()
