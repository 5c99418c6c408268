"""Gatehouse as the forward-auth backend of an organization's own ingress, with Debian's real nginx (`auth_request`)
and Caddy (`forward_auth`) in front of an app of their own: signed out → the gateway's sign-in → back on the original
URL → the app sees the member's identity and an assertion PyJWT verifies; a path the member's roles do not open is
refused with 403; a sign-out at the gateway ends access through the ingress too."""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import jwt
import pytest
import requests

from conftest import Running, free_port, start_gateway, wait_for
from replicas import start_nginx


class App(BaseHTTPRequestHandler):
    """The organization's app: it answers with the headers it received, as JSON."""

    def do_GET(self):
        body = json.dumps({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


def nginx_server(port, gateway_port, app_port):
    """nginx's `server` for the app: `auth_request` to Gatehouse, its headers copied to the app, 401 to sign-in."""
    return f"""
  server {{
    listen 127.0.0.1:{port};
    location = /_gatehouse {{
      internal;
      proxy_pass http://127.0.0.1:{gateway_port}/auth/verify;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
      proxy_set_header X-Original-Method $request_method;
    }}
    location / {{
      auth_request /_gatehouse;
      auth_request_set $gatehouse_user $upstream_http_x_forwarded_user;
      auth_request_set $gatehouse_assertion $upstream_http_x_gatehouse_assertion;
      auth_request_set $gatehouse_sign_in $upstream_http_location;
      error_page 401 = @sign_in;
      proxy_set_header X-Forwarded-User $gatehouse_user;
      proxy_set_header X-Gatehouse-Assertion $gatehouse_assertion;
      proxy_pass http://127.0.0.1:{app_port};
    }}
    location @sign_in {{
      return 302 $gatehouse_sign_in;
    }}
  }}
"""


def caddy_config(port, gateway_port, app_port):
    return f"""{{
  admin off
  auto_https off
}}
http://127.0.0.1:{port} {{
  forward_auth 127.0.0.1:{gateway_port} {{
    uri /auth/verify?redirect=1
    copy_headers X-Forwarded-User X-Gatehouse-Assertion
  }}
  reverse_proxy 127.0.0.1:{app_port}
}}
"""


@pytest.fixture
def ingresses(tmp_path):
    """The app, nginx and Caddy in front of it, and Gatehouse knowing both ingresses' origins as external apps."""
    app = ThreadingHTTPServer(("127.0.0.1", 0), App)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    app_port = app.server_address[1]
    nginx_port, caddy_port = free_port(), free_port()
    rules = [{"paths": ["/audit/*"], "require": {"roles": ["auditor"]}}]
    gw = start_gateway(tmp_path, "dev", extra={
        "listen": {"trusted_proxies": ["127.0.0.1"]},
        "apps": [
            {"slug": "behind-nginx", "name": "Behind nginx", "upstream": f"http://127.0.0.1:{nginx_port}/", "mount": "external", "rules": rules},
            {"slug": "behind-caddy", "name": "Behind Caddy", "upstream": f"http://127.0.0.1:{caddy_port}/", "mount": "external", "rules": rules},
        ],
    })
    nginx = start_nginx(tmp_path / "nginx", nginx_server(nginx_port, gw.port, app_port), tmp_path / "nginx.log")
    (tmp_path / "Caddyfile").write_text(caddy_config(caddy_port, gw.port, app_port))
    caddy = Running(["caddy", "run", "--config", str(tmp_path / "Caddyfile"), "--adapter", "caddyfile"], tmp_path / "caddy.log")
    try:
        for port, ingress in ((nginx_port, nginx), (caddy_port, caddy)):
            try:
                wait_for(f"http://127.0.0.1:{port}/", process=ingress.process)
            except RuntimeError as error:
                raise RuntimeError(f"{error}; its log:\n{ingress.output()[-3000:]}") from error
        yield gw, {"nginx": f"http://127.0.0.1:{nginx_port}", "caddy": f"http://127.0.0.1:{caddy_port}"}
    finally:
        for process in (nginx, caddy):
            process.stop()
        app.shutdown()
        gw.running.stop()


def sign_in_at(gw, http, response):
    """The ingress sent a signed-out member to the gateway's sign-in page: on through the development provider's form,
    and back wherever the gateway sends them."""
    assert response.status_code == 302 and response.headers["Location"].startswith(gw.url + "/signin?return_to="), response.headers
    page = http.get(response.headers["Location"], timeout=10)
    return_to = re.search(r'name="return_to" value="([^"]+)"', page.text).group(1).replace("&amp;", "&")
    return gw.sign_in_by_form(http, "alice", return_to)


@pytest.mark.parametrize("ingress", ["nginx", "caddy"])
def test_an_ingress_asks_the_gateway_who_the_member_is(ingresses, ingress):
    gw, origins = ingresses
    origin = origins[ingress]
    http = requests.Session()
    first = http.get(origin + "/reports/q3?view=1", allow_redirects=False, timeout=10)
    landed = sign_in_at(gw, http, first)
    # Back on the original URL, through the ingress, and the app knows the member.
    assert landed.url == origin + "/reports/q3?view=1", landed.url
    seen = landed.json()
    assert seen["path"] == "/reports/q3?view=1"
    token = seen["headers"]["x-gatehouse-assertion"]
    keys = jwt.PyJWKClient(gw.url + "/.well-known/jwks.json")
    claims = jwt.decode(token, keys.get_signing_key_from_jwt(token).key, algorithms=["ES256"], audience=origin, issuer=gw.url)
    assert claims["preferred_username"] == "alice" and seen["headers"]["x-forwarded-user"] == claims["sub"]
    # A header the client forges is not what the app gets.
    forged = http.get(origin + "/x", headers={"X-Gatehouse-Assertion": "forged", "X-Forwarded-User": "admin"}, timeout=10).json()
    assert forged["headers"]["x-gatehouse-assertion"] != "forged" and forged["headers"]["x-forwarded-user"] == claims["sub"]
    # The app's rules: a role the member lacks.
    assert http.get(origin + "/audit/2026", allow_redirects=False, timeout=10).status_code == 403
    # Signed out at the gateway: the ingress sends the member to sign in again.
    page = http.get(gw.url + "/signout", timeout=10)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    http.post(gw.url + "/signout", data={"csrf": csrf}, allow_redirects=False, timeout=10)
    again = http.get(origin + "/reports/q3", allow_redirects=False, timeout=10)
    assert again.status_code == 302 and urlparse(again.headers["Location"]).path == "/signin"
