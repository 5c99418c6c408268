"""Sign-in against a real, separately running OIDC provider process (oidc-provider-mock), over HTTP."""

import base64
import os
import re
from urllib.parse import parse_qs, urlparse

import requests

from conftest import CLIENT_ID, KIM, LEE, start_gateway


def sign_in(gateway, member, deep_link="/"):
    """Follows the authorization-code flow like a browser; returns the session and the callback's answer."""
    http = requests.Session()
    first = http.get(gateway.url + deep_link, allow_redirects=False)
    assert first.status_code == 303
    assert first.headers["Location"].startswith("/signin")
    start = http.get(gateway.url + first.headers["Location"].replace("/signin", "/signin/start", 1), allow_redirects=False)
    assert start.status_code == 303
    authorize = start.headers["Location"]
    query = parse_qs(urlparse(authorize).query)
    assert query["code_challenge_method"] == ["S256"] and query["client_id"] == [CLIENT_ID]
    assert query["nonce"][0] and query["state"][0]
    decision = http.post(authorize, data={"sub": member["sub"]} if member else {"action": "deny"}, allow_redirects=False)
    assert decision.status_code in (302, 303)
    callback = http.get(decision.headers["Location"], allow_redirects=False)
    return http, callback


def test_deep_link_sign_in_and_keycloak_claims(gateway):
    http, callback = sign_in(gateway, KIM, "/calls?from=e2e")
    assert callback.status_code == 303
    assert callback.headers["Location"] == "/calls?from=e2e"
    cookie = next(c for c in http.cookies if c.name == "gatehouse_session")
    assert cookie.has_nonstandard_attr("HttpOnly") and not cookie.secure

    page = http.get(gateway.url + "/calls?from=e2e")
    assert page.status_code == 200
    assert "Kim Keycloak" in page.text
    portal = http.get(gateway.url + "/")
    roles = re.findall(r'<span class="role">([^<]*)</span>', portal.text)
    # Realm roles plus this client's roles; another client's roles never count; the provider's own
    # (`offline_access`) are not shown to the member (the gateway still has them).
    assert roles == ["user", "app-user"]
    assert 'id="member-email"' in portal.text


def test_member_without_phone_claim_signs_in(gateway):
    http, callback = sign_in(gateway, LEE)
    assert callback.headers["Location"] == "/"
    assert "Lee Nophone" in http.get(gateway.url + "/").text


def test_denied_at_the_provider_returns_to_sign_in_with_a_message(gateway):
    http, callback = sign_in(gateway, None, "/stories")
    # This provider leaves `state` out of error redirects, so the deep link cannot be matched (Keycloak keeps it).
    assert callback.headers["Location"].startswith("/signin?error=access_denied")
    page = http.get(gateway.url + callback.headers["Location"])
    assert "Sign-in was cancelled" in page.text
    assert not any(c.name == "gatehouse_session" for c in http.cookies)
    assert http.get(gateway.url + "/", allow_redirects=False).status_code == 303


def test_sign_out_ends_the_provider_session_too(gateway, mock_idp):
    http, _ = sign_in(gateway, KIM)
    portal = http.get(gateway.url + "/")
    csrf = re.search(r'name="csrf" value="([^"]+)"', portal.text).group(1)
    out = http.post(gateway.url + "/signout", data={"csrf": csrf}, allow_redirects=False)
    assert out.status_code == 303
    end_session = urlparse(out.headers["Location"])
    assert f"{end_session.scheme}://{end_session.netloc}" == mock_idp
    query = parse_qs(end_session.query)
    assert query["post_logout_redirect_uri"] == [gateway.url + "/signed-out"]
    assert query["id_token_hint"][0].count(".") == 2
    landed = http.get(out.headers["Location"])
    assert landed.url.endswith("/signed-out") or "post_logout_redirect_uri" in landed.text or landed.status_code == 200
    assert http.get(gateway.url + "/", allow_redirects=False).status_code == 303


def test_unreachable_provider_gives_a_clear_message(tmp_path):
    from conftest import free_port

    gateway = start_gateway(tmp_path, "serve", issuer=f"http://127.0.0.1:{free_port()}")
    try:
        http = requests.Session()
        start = http.get(gateway.url + "/signin/start?return_to=%2Fchats", allow_redirects=False)
        assert start.headers["Location"] == "/signin?error=provider_unreachable&return_to=%2Fchats"
        assert "cannot be reached" in http.get(gateway.url + start.headers["Location"]).text
        assert "sso_login_failure" in gateway.running.output()
    finally:
        gateway.running.stop()


def test_tokens_are_refreshed_one_at_a_time(tmp_path, mock_idp):
    # Every access token is inside the refresh window, so every request refreshes; parallel requests must share it.
    gateway = start_gateway(tmp_path, "serve", issuer=mock_idp, extra={"session": {"refresh_window_seconds": 3600}})
    try:
        http, _ = sign_in(gateway, KIM)
        from concurrent.futures import ThreadPoolExecutor

        def load(_):
            return http.get(gateway.url + "/", allow_redirects=False).status_code

        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(load, range(16)))
        assert statuses == [200] * 16
        assert "token refresh failed" not in gateway.running.output()
    finally:
        gateway.running.stop()


def test_check_config_lists_every_problem(tmp_path):
    import subprocess

    from conftest import BINARY

    broken = tmp_path / "broken.json"
    broken.write_text(
        '{"public_url": "http://gate.example.org", "oidc": {"client_secret": "x"}, "listen": {"port": 0},'
        ' "apps": [{"slug": "A B", "upstream": "https://outside.example.net", "name": "A"}], "colour": "blue"}'
    )
    result = subprocess.run([str(BINARY), "check-config", "--config", str(broken)], capture_output=True, text=True)
    assert result.returncode != 0
    for key_path in ("public_url:", "oidc.issuer:", "oidc.client_id:", "oidc.client_secret:", "listen.port:",
                     "apps[0].slug:", "apps[0].upstream:", "colour:"):
        assert key_path in result.stdout, result.stdout


def test_the_readmes_deployment_example_passes_check_config(tmp_path):
    import subprocess

    from conftest import BINARY, ROOT

    readme = (ROOT / "README.md").read_text()
    example = re.search(r"A configuration for the first deployment:\n\n```json\n(.*?)\n```", readme, re.S).group(1)
    # It serves HTTPS: a certificate and key where it names them (check-config reads them).
    assert '"tls"' in example
    certificate, key = tmp_path / "fullchain.pem", tmp_path / "privkey.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
         "-subj", "/CN=gate.homesteadheritage.org", "-keyout", str(key), "-out", str(certificate)],
        check=True, capture_output=True)
    storage_key = tmp_path / "storage.key"
    storage_key.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    example = (example.replace("/etc/gatehouse/tls/fullchain.pem", str(certificate)).replace("/etc/gatehouse/tls/privkey.pem", str(key))
               .replace("/etc/gatehouse/storage.key", str(storage_key)))
    path = tmp_path / "gatehouse.json"
    path.write_text(example)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GATEHOUSE_")}
    result = subprocess.run([str(BINARY), "check-config", "--config", str(path)], capture_output=True, text=True, cwd=ROOT, env=environment)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "configuration OK" in result.stdout


def test_a_group_taken_away_at_the_provider_takes_its_app_away_at_the_next_refresh(tmp_path, mock_idp):
    """The member's groups follow the provider: `oidc.refresh_seconds` after sign-in, the next request refreshes the
    tokens and reads the member again, and an app that needs a group the provider no longer lists is refused."""
    import json
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from conftest import CLIENT_ID

    class App(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<!doctype html><title>Staff</title><p id=staff>staff only</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    app = ThreadingHTTPServer(("127.0.0.1", 0), App)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    pat = {"sub": "kc-pat-0003", "name": "Pat Staff", "email": "pat@example.org", "preferred_username": "pat",
           "realm_access": {"roles": ["user"]}, "resource_access": {CLIENT_ID: {"roles": ["app-user"]}}, "groups": ["/staff"]}
    assert requests.put(f"{mock_idp}/users/{pat['sub']}", json=pat, timeout=10).status_code == 204
    gateway = start_gateway(tmp_path, "serve", issuer=mock_idp, extra={
        "oidc": {"issuer": mock_idp, "client_id": CLIENT_ID, "refresh_seconds": 5},
        "apps": [{"slug": "staff", "name": "Staff", "upstream": f"http://127.0.0.1:{app.server_address[1]}/", "required_groups": ["/staff"]}],
        "allowlist": ["127.0.0.1"], "proxy": {"allow_http_loopback": True},
    })
    try:
        http, callback = sign_in(gateway, pat, "/apps/staff/")
        assert callback.status_code == 303
        assert http.get(gateway.url + "/apps/staff/", timeout=10).status_code == 200
        # Taken out of the group at the provider: still in until the next refresh, out after it.
        assert requests.put(f"{mock_idp}/users/{pat['sub']}", json={**pat, "groups": []}, timeout=10).status_code == 204
        time.sleep(6)
        refused = http.get(gateway.url + "/apps/staff/", timeout=10)
        assert refused.status_code == 403, refused.status_code
        assert "tokens refreshed" in gateway.running.output()
        # Back in the group: back in the app at the refresh after.
        assert requests.put(f"{mock_idp}/users/{pat['sub']}", json=pat, timeout=10).status_code == 204
        time.sleep(6)
        assert http.get(gateway.url + "/apps/staff/", timeout=10).status_code == 200
    finally:
        gateway.running.stop()
        app.shutdown()
