"""Web Push when no gateway page is open, end to end on a real Synapse: Bob's browser subscribes (the test holds the
browser's keys, as a browser would, with a push service stand-in on loopback: browsers' own services are out of
reach here), the gateway sets his pusher at the homeserver, and with every page of his closed, Alice's message and
her call reach the stand-in, which checks the gateway's VAPID token and opens each push with the subscription's keys
(`http_ece`): her name, no text until Bob allows previews, then the text. The gateway refuses push services outside
its list, keys that are no keys, a post without the page's token, and the homeserver's pushes for keys it never gave;
a subscription the push service says is gone is forgotten, and so is the pusher with the session. Chromium's own
service worker shows a pushed payload as a notification (`ServiceWorker.deliverPushMessage`). Axe clean, English
and Arabic at 390 px."""

import base64
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from selenium.webdriver.common.by import By

from conftest import start_browser, start_gateway
from test_calls import members_in_a_direct_chat
from test_browser_journey import clicked, path_of, sign_out, wait
from test_chat_homeserver import SERVER_NAME, admin, chat_config, choose_language
from test_chats import write
from test_notifications import homeserver  # noqa: F401 (the fixture)
from test_upgrade_journey import Checker, screenshots


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StandIn:
    """A push service on loopback: takes what the gateway pushes to `/push/<name>`, checks its VAPID token against
    the key it names, and opens it with the subscription's keys. `gone` names subscriptions it answers 410 for."""

    def __init__(self):
        self.keys, self.received, self.gone = {}, [], set()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                name = self.path.rsplit("/", 1)[-1]
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if name in stand_in.gone:
                    self.send_response(410)
                    self.end_headers()
                    return
                stand_in.received.append(stand_in.opened(name, self.headers, body))
                self.send_response(201)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def subscription(self, name):
        """A browser's subscription: its endpoint here, its P-256 key and its auth secret."""
        key, auth = ec.generate_private_key(ec.SECP256R1()), uuid.uuid4().bytes
        self.keys[name] = (key, auth)
        point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return {"endpoint": f"{self.origin}/push/{name}", "keys": {"p256dh": b64(point), "auth": b64(auth)}}

    def opened(self, name, headers, body):
        assert headers["Content-Encoding"] == "aes128gcm" and int(headers["TTL"]) > 0 and headers["Urgency"] in ("normal", "high")
        token, key = [part.split("=", 1)[1] for part in headers["Authorization"].removeprefix("vapid ").split(", ")]
        head, claims, signature = token.split(".")
        assert json.loads(unb64(head)) == {"alg": "ES256", "typ": "JWT"}
        claims = json.loads(unb64(claims))
        assert claims["aud"] == self.origin and 0 < claims["exp"] - time.time() <= 24 * 3600, claims
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(key))
        raw = unb64(signature)
        der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(der, f"{head}.{token.split('.')[1]}".encode(), ec.ECDSA(hashes.SHA256()))
        private, auth = self.keys[name]
        return {"name": name, "key": key, "urgency": headers["Urgency"],
                "payload": json.loads(http_ece.decrypt(body, private_key=private, auth_secret=auth, version="aes128gcm"))}

    def pushes(self, count, timeout=60):
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            assert time.monotonic() < deadline, f"{len(self.received)} pushes of {count}: {self.received}"
            time.sleep(0.2)
        return self.received


def post_json(browser, body, token=True):
    """What the Chats page's script posts to `/chats/push`, with its page token (or without)."""
    return browser.execute_async_script("""
        var done = arguments[arguments.length - 1], headers = { "Content-Type": "application/json", "Accept": "application/json" };
        if (arguments[1]) { headers["X-Gatehouse-CSRF"] = document.querySelector("input[name=csrf]").value; }
        fetch("/chats/push", { method: "POST", credentials: "same-origin", headers: headers, body: JSON.stringify(arguments[0]) })
          .then(function (answer) { return answer.json().then(function (json) { done([answer.status, json]); }); });""", body, token)


def pushers(homeserver, user_id):
    status, answer = admin(homeserver, "GET", f"/_synapse/admin/v1/users/{user_id}/pushers")
    assert status == 200, answer
    return answer["pushers"]


def test_a_member_with_no_page_open_is_pushed_messages_and_calls(tmp_path, homeserver):
    stand_in = StandIn()
    gw = start_gateway(tmp_path, "dev", extra={"chat": chat_config(homeserver, push={"services": [stand_in.origin]})})
    alice_browser = start_browser(("--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"))
    bob_browser = start_browser()
    try:
        bob_browser.execute_cdp_cmd("Browser.grantPermissions", {"origin": gw.url, "permissions": ["notifications"]})
        # Alice and Bob have a direct chat.
        _, bob_name, room = members_in_a_direct_chat(alice_browser, bob_browser, gw)
        bob_id = f"@{bob_name}:{SERVER_NAME}"

        # Bob's Chats page offers pushes; his browser's own push service is out of reach here, which the page says.
        bob_browser.get(gw.url + "/chats")
        bob_browser.find_element(By.CSS_SELECTOR, "#notify-settings summary").click()
        box = wait(bob_browser, lambda b: b.find_element(By.ID, "notify-push-settings") if b.find_element(By.ID, "notify-push-settings").is_displayed() else None)
        assert "Also when no Gatehouse page is open" in box.text
        vapid_key = box.get_attribute("data-key")
        assert not bob_browser.find_element(By.ID, "notify-previews").is_enabled()
        bob_browser.find_element(By.ID, "notify-push").click()
        error = wait(bob_browser, lambda b: b.find_element(By.ID, "notify-push-error") if b.find_element(By.ID, "notify-push-error").is_displayed() else None,
                     timeout=60)
        assert "could not be set up" in error.text
        assert not bob_browser.find_element(By.ID, "notify-push").is_selected()
        bob_check = Checker(bob_browser, gw, screenshots(tmp_path))
        bob_check.page("chats-push-failed")

        # Hostile subscriptions: another host than the push services, keys that are no keys, no page token.
        good = stand_in.subscription("bob")
        for hostile in (
            {"subscription": dict(good, endpoint="https://evil.example/push/bob")},
            {"subscription": dict(good, endpoint="http://127.0.0.1:9/push/bob")},
            {"subscription": dict(good, endpoint=stand_in.origin.replace("http:", "http://user@").replace("//", "", 1) + "/push/bob")},
            {"subscription": dict(good, keys={"p256dh": good["keys"]["p256dh"][:-4] + "AAAA", "auth": good["keys"]["auth"]})},
            {"subscription": dict(good, keys={"p256dh": good["keys"]["p256dh"], "auth": "short"})},
            {"subscription": {"endpoint": good["endpoint"]}},
            {"previews": True},
        ):
            status, answer = post_json(bob_browser, hostile)
            assert status == 400 and answer["error"] == "chat_invalid_message", (hostile, status, answer)
        status, answer = post_json(bob_browser, {"subscription": good}, token=False)
        assert status == 403, answer
        assert pushers(homeserver, bob_id) == []

        # Bob's browser subscribes: his pusher at the homeserver points at the gateway.
        assert post_json(bob_browser, {"subscription": good, "previews": False}) == [200, {"push": True, "previews": False}]
        [pusher] = pushers(homeserver, bob_id)
        assert pusher["app_id"] == "org.gatehouse.web" and pusher["data"]["url"] == gw.url + "/_matrix/push/v1/notify", pusher
        bob_browser.refresh()
        bob_browser.find_element(By.CSS_SELECTOR, "#notify-settings summary").click()
        wait(bob_browser, lambda b: b.find_element(By.ID, "notify-push").is_selected())
        assert bob_browser.find_element(By.ID, "notify-previews").is_enabled()

        # The homeserver's side refuses what it did not give: keys it never had, a body that is no notification.
        answer = requests.post(gw.url + "/_matrix/push/v1/notify", json={"notification": {
            "event_id": "$x", "room_id": room, "type": "m.room.message", "devices": [{"app_id": "org.gatehouse.web", "pushkey": "forged"}]}},
            timeout=10)
        assert answer.status_code == 200 and answer.json() == {"rejected": ["forged"]}, answer.text
        answer = requests.post(gw.url + "/_matrix/push/v1/notify", data="not json", timeout=10)
        assert answer.status_code == 400 and answer.json()["errcode"] == "M_BAD_JSON"

        # Every page of Bob's closed: Alice's message is pushed, naming her, without its text.
        bob_browser.get("about:blank")
        write(alice_browser, "Are you there?")
        [message] = stand_in.pushes(1)
        assert message["key"] == vapid_key and message["payload"]["kind"] == "message", message
        assert message["payload"]["title"] == "Alice Archer" and message["payload"]["body"] == "New message", message
        assert message["payload"]["url"] == gw.url + "/chats/room?id=" + requests.utils.quote(room, safe=""), message

        # Bob allows previews: the next one carries the text.
        bob_browser.get(gw.url + "/chats")
        bob_browser.find_element(By.CSS_SELECTOR, "#notify-settings summary").click()
        wait(bob_browser, clicked("#notify-previews"))
        wait(bob_browser, lambda b: post_json(b, {"previews": True})[1] == {"push": True, "previews": True})
        bob_browser.get("about:blank")
        write(alice_browser, "Lunch at noon?")
        assert stand_in.pushes(2)[1]["payload"]["body"] == "Lunch at noon?"

        # Alice calls: the ring is pushed, urgent, and opens the call.
        alice_browser.find_element(By.ID, "room-call-audio").click()
        wait(alice_browser, lambda b: path_of(b).startswith("/calls/call?"))
        call = next(push for push in stand_in.pushes(3) if push["payload"]["kind"] == "call")
        assert call["urgency"] == "high" and call["payload"]["title"] == "Incoming call", call
        assert "Alice Archer is calling you (audio)" in call["payload"]["body"] and "/calls/call?id=" in call["payload"]["url"], call
        alice_browser.find_element(By.ID, "call-hangup").click()
        alice_browser.get(gw.url + "/chats/room?id=" + room)

        # Chromium's service worker (registered by Bob's page above) shows what was pushed.
        bob_browser.get(gw.url + "/chats")
        shown = deliver(bob_browser, gw.url, message["payload"])
        assert shown == [{"title": "Alice Archer", "body": "New message", "tag": message["payload"]["tag"]}], shown

        # The push service says the subscription is gone: the gateway forgets it and the homeserver its pusher.
        stand_in.gone.add("bob")
        bob_browser.get("about:blank")
        write(alice_browser, "Still there?")
        wait(alice_browser, lambda b: pushers(homeserver, bob_id) == [], timeout=60)

        # Subscribed again (in Arabic, on a phone's width: the settings say so), then signed out: the pusher goes
        # with the session.
        stand_in.gone.clear()
        choose_language(bob_browser, gw, "ar")
        bob_browser.set_window_size(390, 900)
        bob_browser.get(gw.url + "/chats")
        assert post_json(bob_browser, {"subscription": stand_in.subscription("bob2")})[0] == 200
        assert len(pushers(homeserver, bob_id)) == 1
        bob_browser.refresh()
        bob_browser.find_element(By.CSS_SELECTOR, "#notify-settings summary").click()
        wait(bob_browser, lambda b: b.find_element(By.ID, "notify-push").is_selected())
        bob_check.page("chats-push-ar-390")
        sign_out(bob_browser)
        wait(bob_browser, lambda b: pushers(homeserver, bob_id) == [] or None, timeout=60)
    finally:
        alice_browser.quit()
        bob_browser.quit()
        stand_in.server.shutdown()


def deliver(browser, origin, payload):
    """A push delivered to the page's push worker through the DevTools protocol, and the notifications it shows."""
    registration = browser.execute_async_script("""
        var done = arguments[arguments.length - 1];
        navigator.serviceWorker.getRegistration("/static/push/").then(function (r) { done(r ? r.scope : null); });""")
    assert registration, "no push worker registered"
    browser.execute_cdp_cmd("ServiceWorker.enable", {})
    targets = browser.execute_cdp_cmd("Target.getTargets", {})["targetInfos"]
    worker = [t for t in targets if t["type"] == "service_worker" and "/static/gatehouse-push.js" in t["url"]]
    assert worker, targets
    # The registration's id: Chromium numbers them per profile, and the push worker is the profile's only one.
    browser.execute_cdp_cmd("ServiceWorker.deliverPushMessage", {"origin": origin, "registrationId": "0", "data": json.dumps(payload)})
    return wait(browser, lambda b: b.execute_async_script("""
        var done = arguments[arguments.length - 1];
        navigator.serviceWorker.getRegistration("/static/push/").then(function (r) { return r.getNotifications(); }).then(function (list) {
          done(list.length ? list.map(function (n) { return { title: n.title, body: n.body, tag: n.tag }; }) : null); });"""), timeout=20)
