"""Signed identity assertions, checked by a JOSE implementation other than the gateway's (PyJWT with the
`cryptography` package): the Who Am I demo app's header, verified with the keys published at
`/.well-known/jwks.json` for the app's own audience; a header forged by the client never arriving; the same key after
a restart (kept in the store); never in the log."""

import html
import re

import jwt


def assertion_on(page):
    """The assertion the Who Am I app received, from its table of identity headers."""
    match = re.search(r'<th scope="row">X-Gatehouse-Assertion</th><td><code>([^<]+)</code>', page, re.I)
    assert match, page
    return html.unescape(match.group(1))


def verify(gw, token, audience):
    keys = jwt.PyJWKClient(gw.url + "/.well-known/jwks.json")
    key = keys.get_signing_key_from_jwt(token)
    return key.key_id, jwt.decode(token, key.key, algorithms=["ES256"], audience=audience, issuer=gw.url)


def test_apps_get_an_assertion_any_jwt_library_verifies(dev_gateway):
    gw = dev_gateway
    member = gw.member_session("alice")
    page = member.get(gw.url + "/apps/whoami/", headers={"X-Gatehouse-Assertion": "forged.by.client"}, timeout=10)
    assert page.status_code == 200
    # The app's own check (its page) and PyJWT's agree.
    assert "Verified: signed with a key published at" in page.text, page.text
    token = assertion_on(page.text)
    assert token != "forged.by.client"
    # The request can be followed from the gateway into the app: the app's traceparent names the trace that the
    # gateway's log lines for the request carry.
    traceparent = re.search(r'<th scope="row">traceparent</th><td><code>([^<]+)</code>', page.text).group(1)
    trace_id = traceparent.split("-")[1]
    assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", traceparent) and f"trace_id={trace_id}" in gw.log(), traceparent
    audience = re.search(r'<dd id="claim-aud">([^<]+)</dd>', page.text).group(1)
    kid, claims = verify(gw, token, audience)
    assert claims["preferred_username"] == "alice" and claims["level"] == "sso" and claims["exp"] - claims["iat"] == 300
    assert set(claims) >= {"iss", "aud", "sub", "name", "email", "groups", "roles", "level", "sid", "iat", "exp"}
    # Addressed to this app only: another audience is refused, and so is a payload changed under the signature.
    try:
        verify(gw, token, "http://127.0.0.1:1")
        raise AssertionError("an assertion for another app was accepted")
    except jwt.InvalidAudienceError:
        pass
    header, payload, signature = token.split(".")
    forged_payload = jwt.utils.base64url_encode(jwt.utils.base64url_decode(payload).replace(b'"sso"', b'"registered"')).decode()
    try:
        verify(gw, ".".join([header, forged_payload, signature]), audience)
        raise AssertionError("a changed assertion was accepted")
    except jwt.InvalidSignatureError:
        pass

    # The key is kept in the store: after a restart the same key signs, and the assertion made before still verifies.
    gw.restart()
    again = member.get(gw.url + "/apps/whoami/", timeout=10)
    assert verify(gw, assertion_on(again.text), audience)[0] == kid
    assert verify(gw, token, audience)[0] == kid
    gw.assert_log_holds_none_of({"assertion": token, "signature": signature})
