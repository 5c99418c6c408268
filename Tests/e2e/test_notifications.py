"""Members are told of messages and calls wherever a gateway page is open, in real browsers on a real Synapse: Bob
works in a proxied app's page in a background tab (the tab that holds the browser's one live stream) with a gateway
page in front; Alice's invite, her message and her call each make one desktop notification naming her, with a
sound, the count in the bar and in the title at once; nothing for the room Bob has in view, nothing while the chat
is muted. The notifications are read through the browser's own Notification API, wrapped by the test before any
script of the page runs (`Page.addScriptToEvaluateOnNewDocument`), with the permission granted as a member would
grant it (`Browser.grantPermissions`); the permission is otherwise asked only from the Chats page's button."""

import json
import time
import uuid

import pytest
from selenium.webdriver.common.by import By

from conftest import start_browser, start_gateway
from test_browser_journey import bar, clicked, path_of, wait
from test_chat_homeserver import chat_config, started_homeserver, stop_homeserver
from test_chats import bar_badge, timeline, upgrade, write
from test_upgrade_journey import Checker, screenshots, sign_in

MEDIA = ("--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream")

# What the page shows and plays, kept in the origin's storage where any of its tabs can read it.
RECORDER = """
(function () {
  function record(key, value) {
    try {
      var list = JSON.parse(window.localStorage.getItem(key) || "[]");
      list.push(value);
      window.localStorage.setItem(key, JSON.stringify(list));
    } catch (error) {}
  }
  var Real = window.Notification;
  if (Real) {
    var Recorded = function (title, options) {
      record("test-notifications", { title: title, body: (options || {}).body, tag: (options || {}).tag });
      return new Real(title, options);
    };
    Recorded.prototype = Real.prototype;
    Object.defineProperty(Recorded, "permission", { get: function () { return Real.permission; } });
    Recorded.requestPermission = function () { return Real.requestPermission.apply(Real, arguments); };
    window.Notification = Recorded;
  }
  var Context = window.AudioContext;
  if (Context) {
    var make = Context.prototype.createOscillator;
    Context.prototype.createOscillator = function () {
      var made = make.call(this), start = made.start;
      made.start = function () { record("test-sounds", made.frequency.value); return start.apply(made, arguments); };
      return made;
    };
  }
})();
"""


@pytest.fixture
def homeserver(tmp_path):
    started = started_homeserver(tmp_path / "synapse")
    yield started
    stop_homeserver(started)


def record(browser):
    """The recorder in every document the browser's current tab loads from now on (a tab's own, not its others')."""
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})


def recorded(browser, key="test-notifications"):
    return json.loads(browser.execute_script(f"return window.localStorage.getItem('{key}') || '[]'"))


def told(browser, count):
    """The notifications shown so far, once there are `count`."""
    return wait(browser, lambda b: recorded(b) if len(recorded(b)) >= count else None, timeout=30)


def test_members_are_told_of_messages_and_calls_on_any_gateway_page(tmp_path, homeserver):
    gw = start_gateway(tmp_path, "dev", extra={"chat": chat_config(homeserver)})
    alice_browser = start_browser(MEDIA)
    bob_browser = start_browser()
    try:
        record(bob_browser)
        bob_browser.execute_cdp_cmd("Browser.grantPermissions", {"origin": gw.url, "permissions": ["notifications"]})
        alice_name, bob_name = "a" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8]
        sign_in(alice_browser, gw, "alice")
        upgrade(alice_browser, gw, alice_name, "+15550100001", "Alice Archer")
        sign_in(bob_browser, gw, "bob")
        upgrade(bob_browser, gw, bob_name, "+15550100002", "Bob Baker")
        alice_check = Checker(alice_browser, gw, screenshots(tmp_path))

        # Bob works in a proxied app; then a gateway page comes in front, and the app's tab is in the background.
        bob_browser.get(gw.url + "/apps/whoami/")
        app_tab = bob_browser.current_window_handle
        wait(bob_browser, lambda b: bar(b).find_elements(By.CSS_SELECTOR, "#bar-chats"))
        bob_browser.switch_to.new_window("tab")
        record(bob_browser)
        bob_browser.get(gw.url + "/")
        front = bob_browser.current_window_handle
        base_title = bob_browser.title
        assert not base_title.startswith("(")

        # Alice opens a direct chat with Bob and writes: Bob is told of the invite once, naming her; the title and
        # the tab count it at once.
        alice_browser.get(gw.url + "/chats/new")
        alice_browser.find_element(By.ID, "chat-search").send_keys(bob_name)
        alice_browser.find_element(By.ID, "chat-search-button").click()
        wait(alice_browser, clicked(f'button[data-username="{bob_name}"]'))
        wait(alice_browser, lambda b: path_of(b).startswith("/chats/room?"))
        room = alice_browser.find_element(By.ID, "main").get_attribute("data-room")
        write(alice_browser, "Hello Bob")
        invite = told(bob_browser, 1)[0]
        assert invite["title"].strip("\u2068\u2069") == "Alice Archer" and "wants to chat with you" in invite["body"], invite
        wait(bob_browser, lambda b: b.title == "(1) " + base_title, timeout=5)
        assert bob_browser.find_element(By.CSS_SELECTOR, "#tab-chats .tab-badge").text == "1"

        # Bob accepts and reads the room: a message there while it is in view tells him of nothing more.
        bob_browser.get(gw.url + "/chats")
        wait(bob_browser, clicked(f'li[data-room="{room}"] button[value="join"]'))
        wait(bob_browser, lambda b: path_of(b).startswith("/chats/room?"))
        write(alice_browser, "Are you there?")
        wait(bob_browser, lambda b: timeline(b) == ["Hello Bob", "Are you there?"], timeout=30)
        time.sleep(2)
        assert len(recorded(bob_browser)) == 1, recorded(bob_browser)
        wait(bob_browser, lambda b: not b.title.startswith("("), timeout=10)

        # On the list (the room no longer in view, the page used), her next message is told of with a sound.
        bob_browser.get(gw.url + "/chats")
        settings = bob_browser.find_element(By.ID, "notify-settings")
        settings.find_element(By.TAG_NAME, "summary").click()
        assert all(box.is_selected() for box in settings.find_elements(By.CSS_SELECTOR, "input[data-setting]"))
        assert not bob_browser.find_element(By.ID, "notify-ask").is_displayed()
        sent = time.monotonic()
        write(alice_browser, "Ping")
        message = told(bob_browser, 2)[1]
        assert message["title"].strip("\u2068\u2069") == "Alice Archer" and message["body"] == "Ping", message
        assert time.monotonic() - sent < 10
        wait(bob_browser, lambda b: {660, 880} <= set(recorded(b, "test-sounds")), timeout=10)
        wait(bob_browser, lambda b: b.title.startswith("(1) "), timeout=5)
        # The app's tab, brought to the front, shows the same count in its bar.
        bob_browser.switch_to.window(app_tab)
        wait(bob_browser, lambda b: bar_badge(b) == "1", timeout=5)
        bob_browser.switch_to.window(front)

        # Muted, the chat tells of nothing and counts nothing; unmuted, it does again.
        bob_browser.get(gw.url + "/chats/room?id=" + room)
        bob_browser.find_element(By.ID, "room-details").click()
        wait(bob_browser, clicked("#chat-mute"))
        wait(bob_browser, lambda b: b.find_elements(By.ID, "room-muted-note"))
        bob_browser.get(gw.url + "/chats")
        wait(bob_browser, lambda b: b.find_elements(By.CSS_SELECTOR, f'li[data-room="{room}"] .room-muted'))
        write(alice_browser, "Quietly")
        wait(bob_browser, lambda b: "Quietly" in b.find_element(By.CSS_SELECTOR, f'li[data-room="{room}"] .room-last').text, timeout=30)
        time.sleep(2)
        assert len(recorded(bob_browser)) == 2, recorded(bob_browser)
        assert not bob_browser.find_elements(By.CSS_SELECTOR, f'li[data-room="{room}"] .unread-count')
        bob_browser.get(gw.url + "/chats/room?id=" + room)
        bob_browser.find_element(By.ID, "room-details").click()
        wait(bob_browser, clicked("#chat-mute"))
        wait(bob_browser, lambda b: not b.find_elements(By.ID, "room-muted-note"))

        # Alice calls: Bob, on a gateway page that is not the chat, is told with a ringing notification and the
        # prompt; he declines it there.
        bob_browser.get(gw.url + "/")
        # (A click on the page's heading: the member has used this tab, which may then play the ringtone.)
        bob_browser.find_element(By.TAG_NAME, "h1").click()
        alice_browser.get(gw.url + "/chats/room?id=" + room)
        alice_browser.find_element(By.ID, "room-call-audio").click()
        wait(alice_browser, lambda b: path_of(b).startswith("/calls/call?"))
        call = told(bob_browser, 3)[2]
        assert call["title"] == "Incoming call" and call["body"].strip("\u2068\u2069").startswith("Alice Archer"), call
        assert "is calling you (audio)" in call["body"], call
        wait(bob_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#ring:not([hidden]) #ring-decline"), timeout=10)
        wait(bob_browser, lambda b: {523, 659} <= set(recorded(b, "test-sounds")), timeout=10)
        bob_browser.find_element(By.ID, "ring-decline").click()
        wait(alice_browser, lambda b: b.find_element(By.ID, "main").get_attribute("data-state") == "ended", timeout=30)

        # Alice's browser never granted notifications: her Chats page explains them and asks only from its button;
        # "Not now" is kept.
        alice_browser.execute_cdp_cmd("Browser.setPermission", {
            "origin": gw.url, "permission": {"name": "notifications"}, "setting": "prompt"})
        alice_browser.get(gw.url + "/chats")
        ask = wait(alice_browser, lambda b: b.find_element(By.ID, "notify-ask") if b.find_element(By.ID, "notify-ask").is_displayed() else None)
        assert "while you work in an app or another tab" in ask.text
        alice_check.page("chats-notify-ask")
        alice_browser.find_element(By.ID, "notify-later").click()
        assert not ask.is_displayed()
        alice_browser.refresh()
        wait(alice_browser, lambda b: b.find_element(By.ID, "notify-settings").is_displayed())
        assert not alice_browser.find_element(By.ID, "notify-ask").is_displayed()
        alice_browser.execute_cdp_cmd("Browser.setPermission", {
            "origin": gw.url, "permission": {"name": "notifications"}, "setting": "denied"})
        alice_browser.refresh()
        wait(alice_browser, lambda b: b.find_element(By.ID, "notify-settings").is_displayed())
        alice_browser.find_element(By.CSS_SELECTOR, "#notify-settings summary").click()
        assert alice_browser.find_element(By.ID, "notify-blocked").is_displayed()
        assert not alice_browser.find_element(By.ID, "notify-desktop").is_enabled()
    finally:
        alice_browser.quit()
        bob_browser.quit()
        gw.running.stop()
