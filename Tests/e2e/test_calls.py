"""Calls through the gateway in two real browsers with fake cameras and microphones, on a real Synapse that hands out
credentials for a real TURN server (coturn from Debian, on loopback): alice calls bob by video; bob, on a proxied app,
hears the ring in the bar and accepts; both see the other's video playing over a connected WebRTC connection relayed
by the TURN server; alice hangs up and both see the call's time. An audio call never turns the camera on, and rings
out as a missed call for bob, listed in Calls and in the chat. Hostile signals (a room bob is not in, candidates for
addresses outside loopback, markup in names) are refused or shown as text. Then a story: alice posts one, bob sees
it first as new, opens it, and alice sees him among its viewers (Tests/GatehouseTests/Chat/StoriesTests.swift has the
rest: a member with no direct chat, and the day after)."""

import json
import os
import subprocess
import time
import uuid
from urllib.parse import quote

import pytest
from selenium.webdriver.common.by import By

from conftest import ROOT, start_browser, start_gateway
from test_browser_journey import bar, bar_has, clicked, in_bar, path_of, wait
from test_chat_homeserver import SERVER_NAME, chat_config, started_homeserver, stop_homeserver
from test_chats import upgrade
from test_upgrade_journey import register_by_http, sign_in, submit

COTURN = str(ROOT / "scripts" / "coturn")
MEDIA = ("--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream", "--autoplay-policy=no-user-gesture-required")


@pytest.fixture
def turn(tmp_path):
    folder = tmp_path / "coturn"
    started = subprocess.run(["bash", COTURN, "start", str(folder)], capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    yield {"uri": f"turn:127.0.0.1:{started.stdout.strip()}?transport=udp", "secret_file": str(folder / "turn_secret"), "folder": folder}
    subprocess.run(["bash", COTURN, "stop", str(folder)], check=False)


@pytest.fixture
def homeserver(tmp_path, turn, monkeypatch):
    """A homeserver of the test's own that hands members credentials for the TURN server."""
    monkeypatch.setenv("SYNAPSE_TURN_URI", turn["uri"])
    monkeypatch.setenv("SYNAPSE_TURN_SECRET_FILE", turn["secret_file"])
    started = started_homeserver(tmp_path / "synapse")
    yield started
    stop_homeserver(started)


def calls_gateway(tmp_path, homeserver):
    # Everything relayed by the TURN server on loopback: no other address is ever a candidate.
    chat = chat_config(homeserver, calls={"relay_only": True, "candidate_networks": ["127.0.0.0/8", "::1/128"]})
    return start_gateway(tmp_path, "dev", extra={"chat": chat})


# Every line of the recent calls: what happened not cut short, and its time overlapping neither name nor text.
WHOLE_AND_CLEAR = """
return Array.from(document.querySelectorAll('#recent-calls li.call')).every(function (line) {
  var what = line.querySelector('.call-what'), time = line.querySelector('.room-time').getBoundingClientRect();
  var apart = function (r) { return r.right <= time.left + 0.5 || r.left >= time.right - 0.5 || r.bottom <= time.top || r.top >= time.bottom; };
  return what.scrollWidth <= what.clientWidth + 1 && apart(what.getBoundingClientRect())
    && apart(line.querySelector('.room-name').getBoundingClientRect());
});
"""


def call_state(browser):
    return browser.find_element(By.ID, "main").get_attribute("data-state")


def video_playing(browser, element_id="remote-video"):
    """Whether the other's video plays: it has a size and its time advances."""
    first = browser.execute_script(f"var v = document.getElementById('{element_id}'); return [v.videoWidth, v.currentTime]")
    time.sleep(0.6)
    second = browser.execute_script(f"var v = document.getElementById('{element_id}'); return [v.videoWidth, v.currentTime]")
    return first[0] > 0 and second[1] > first[1]


def ring(browser):
    """The ring in the bar (an app's page) or on a gateway page, once shown."""
    root = bar(browser) if browser.find_elements(By.ID, "gatehouse-bar") else browser
    found = root.find_elements(By.CSS_SELECTOR, "#ring:not([hidden])")
    return found[0] if found else None


def post_signal(browser, body):
    """A signal posted from the member's own page, as its script would: the status and the answer."""
    return browser.execute_async_script(
        """
        var done = arguments[arguments.length - 1];
        var csrf = document.querySelector("input[name=csrf]").value;
        fetch("/calls/signal", {method: "POST", credentials: "same-origin", body: JSON.stringify(arguments[0]),
          headers: {"Content-Type": "application/json", "Accept": "application/json", "X-Gatehouse-CSRF": csrf}})
          .then(function (r) { return r.text().then(function (t) { done([r.status, t]); }); });
        """,
        body,
    )


def direct_chat(alice_browser, bob_browser, gw, bob_name):
    """Alice opens the direct chat with Bob, Bob joins it: its room id."""
    alice_browser.get(gw.url + "/chats/new")
    submit(alice_browser, "chat-search", bob_name, "chat-search-button")
    alice_browser.find_element(By.CSS_SELECTOR, f'button[data-username="{bob_name}"]').click()
    wait(alice_browser, lambda b: path_of(b).startswith("/chats/room?"))
    room = alice_browser.find_element(By.ID, "main").get_attribute("data-room")
    bob_browser.get(gw.url + "/chats")
    wait(bob_browser, lambda b: b.find_elements(By.CSS_SELECTOR, f'li[data-room="{room}"] button[value="join"]'), timeout=40)
    wait(bob_browser, clicked(f'li[data-room="{room}"] button[value="join"]'))
    wait(bob_browser, lambda b: path_of(b).startswith("/chats/room?"))
    return room


def members_in_a_direct_chat(alice_browser, bob_browser, gw):
    """Alice upgraded in her browser, Bob registered, in a direct chat with Alice on its page: their usernames and
    the room."""
    alice_name, bob_name = "a" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8]
    sign_in(alice_browser, gw, "alice")
    upgrade(alice_browser, gw, alice_name, "+15550100001", "Alice Archer")
    sign_in(bob_browser, gw, "bob")
    register_by_http(gw, "bob", bob_name, display_name="Bob Baker", phone="+15550100002")
    room = direct_chat(alice_browser, bob_browser, gw, bob_name)
    alice_browser.get(gw.url + "/chats/room?id=" + room)
    return alice_name, bob_name, room


def test_two_members_call_by_video_and_by_audio_through_the_gateway(tmp_path, homeserver, turn):
    gw = calls_gateway(tmp_path, homeserver)
    alice_browser = start_browser(MEDIA)
    bob_browser = start_browser(MEDIA)
    try:
        alice_name, bob_name = "a" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8]
        sign_in(alice_browser, gw, "alice")
        upgrade(alice_browser, gw, alice_name, "+15550100001", "Alice <b>Archer</b>")
        sign_in(bob_browser, gw, "bob")
        upgrade(bob_browser, gw, bob_name, "+15550100002", "Bob Baker")
        room = direct_chat(alice_browser, bob_browser, gw, bob_name)

        # Bob is on a proxied app on a host of its own; alice starts a video call from their chat.
        bob_browser.get(gw.url + "/open/hosted")
        wait(bob_browser, lambda b: b.current_url.startswith(f"http://hosted.apps.localhost:{gw.port}/") and bar_has(b, "#ring"))
        alice_browser.get(gw.url + "/chats/room?id=" + room)
        alice_browser.find_element(By.ID, "room-call-video").click()
        wait(alice_browser, lambda b: path_of(b).startswith("/calls/call?"))
        # The call's page is the only one that may use the camera and the microphone.
        wait(alice_browser, lambda b: call_state(b) == "calling", timeout=30)

        # The ring in Bob's bar: the caller's name as text (markup and all), Accept and Decline.
        prompt = wait(bob_browser, ring, timeout=30)
        assert "Alice <b>Archer</b>" in prompt.find_element(By.CSS_SELECTOR, ".ring-text").text
        assert not prompt.find_elements(By.CSS_SELECTOR, ".ring-text b")
        assert prompt.find_element(By.ID, "ring-accept").get_attribute("href").startswith(gw.url + "/calls/call?id=")
        prompt.find_element(By.ID, "ring-accept").click()
        wait(bob_browser, lambda b: path_of(b).startswith("/calls/call?id="))

        # Both pages: connected, the other's video playing, relayed by the TURN server on loopback.
        for browser in (alice_browser, bob_browser):
            wait(browser, lambda b: call_state(b) == "connected", timeout=40)
            wait(browser, lambda b: b.find_element(By.ID, "main").get_attribute("data-connection") == "connected")
            wait(browser, video_playing, timeout=20)
            assert browser.find_element(By.ID, "main").get_attribute("data-local-tracks") == "audio video"
        # The call's controls are in view without scrolling.
        assert bob_browser.execute_script(
            "var r = document.getElementById('call-hangup').getBoundingClientRect(); return r.bottom <= window.innerHeight && r.top >= 0")

        # Bob opens his web apps from the call's page: they open in a new tab and the call goes on in its own. Every
        # other page of his says he is in a call, with the way back to the call's window (found by its name).
        call_window = bob_browser.current_window_handle
        bob_browser.find_element(By.CSS_SELECTOR, "nav.tabs li:first-child a").click()
        wait(bob_browser, lambda b: len(b.window_handles) == 2)
        bob_browser.switch_to.window([handle for handle in bob_browser.window_handles if handle != call_window][0])
        wait(bob_browser, lambda b: path_of(b) == "/")
        note = wait(bob_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#ring.in-call:not([hidden])"), timeout=20)[0]
        assert "In a call with \u2068Alice <b>Archer</b>\u2069" in note.text and note.find_element(By.ID, "ring-back").is_displayed()
        # This page reaches the call's window (it was opened from it) and brings it forward; it never loads it again.
        assert bob_browser.execute_script("return window.opener && window.opener.location.pathname") == "/calls/call"
        note.find_element(By.ID, "ring-back").click()
        time.sleep(0.5)
        assert len(bob_browser.window_handles) == 2 and path_of(bob_browser) == "/"
        # An app's page says so too; its way back is Calls (an app's page is kept from the gateway's windows).
        bob_browser.get(gw.url + "/apps/visits/")
        wait(bob_browser, lambda b: bar_has(b, "#ring.in-call:not([hidden])"), timeout=20)
        assert in_bar(bob_browser, "#ring-back").get_attribute("href") == gw.url + "/calls"
        assert bob_browser.execute_script("return window.opener") is None
        bob_browser.close()
        bob_browser.switch_to.window(call_window)
        assert call_state(bob_browser) == "connected" and video_playing(bob_browser)
        time.sleep(2)
        alice_browser.find_element(By.ID, "call-hangup").click()
        for browser in (alice_browser, bob_browser):
            wait(browser, lambda b: call_state(b) == "ended", timeout=20)
            status = browser.find_element(By.ID, "call-status").text
            assert status.startswith("Call ended · 0:0"), status
        # Calls lists it on both sides, with its time.
        bob_browser.get(gw.url + "/calls")
        line = bob_browser.find_element(By.CSS_SELECTOR, "#recent-calls li.call").text
        assert "Incoming video call · 0:0" in line, line
        # On a phone, in English and in Arabic, what happened is read whole and the time stays clear of the name.
        bob_browser.set_window_size(390, 900)
        for language in ("ar", "en"):
            bob_browser.find_element(By.ID, "member-menu-button").click()
            wait(bob_browser, lambda b: b.find_element(By.ID, f"language-{language}").is_displayed())
            bob_browser.find_element(By.ID, f"language-{language}").click()
            wait(bob_browser, lambda b: b.find_element(By.TAG_NAME, "html").get_attribute("lang") == language)
            bob_browser.get(gw.url + "/calls")
            assert bob_browser.execute_script(WHOLE_AND_CLEAR), language
        bob_browser.set_window_size(1280, 900)

        # An audio call: the camera is never asked for; unanswered, it rings out after 60 seconds.
        bob_browser.get(gw.url + "/")
        wait(bob_browser, lambda b: b.find_elements(By.ID, "ring"))
        alice_browser.get(gw.url + "/calls")
        alice_browser.find_element(By.CSS_SELECTOR, f'#call-contacts li[data-room="{room}"] button[value="audio"]').click()
        wait(alice_browser, lambda b: call_state(b) == "calling", timeout=30)
        assert alice_browser.find_element(By.ID, "main").get_attribute("data-local-tracks") == "audio"
        assert not alice_browser.find_element(By.ID, "call-camera").is_displayed()
        prompt = wait(bob_browser, ring, timeout=30)
        assert prompt.get_attribute("data-media") == "audio"
        wait(alice_browser, lambda b: call_state(b) == "ended", timeout=75)
        assert alice_browser.find_element(By.ID, "call-status").text == "No answer"
        wait(bob_browser, lambda b: ring(b) is None, timeout=10)
        bob_browser.get(gw.url + "/calls")
        missed = bob_browser.find_element(By.CSS_SELECTOR, "#recent-calls li.call")
        assert "missed" in missed.get_attribute("class") and "Missed audio call" in missed.text
        bob_browser.get(gw.url + "/chats/room?id=" + room)
        notes = [item.text for item in bob_browser.find_elements(By.CSS_SELECTOR, "#timeline li.kind-call .note")]
        assert notes[-1] == "Missed call", notes

        # Hostile signals from Bob's own page: refused with a reason, nothing sent.
        bob_browser.get(gw.url + "/calls")
        offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
        status, answer = post_signal(bob_browser, {"type": "invite", "room": f"!nobodys:{SERVER_NAME}", "call_id": "c1", "sdp": offer})
        assert status == 403, answer
        status, answer = post_signal(
            bob_browser,
            {"type": "invite", "room": room, "call_id": "c2", "sdp": offer + "a=candidate:1 1 udp 2122260223 192.0.2.10 50000 typ host\r\n"})
        assert status == 400 and "outside the allowed networks" in answer, answer
        status, answer = post_signal(
            bob_browser,
            {"type": "candidates", "room": room, "call_id": "c3", "candidates": [{"candidate": "candidate:1 1 udp 1 10.0.0.1 9 typ host"}]})
        assert status == 400, answer
        status, answer = post_signal(bob_browser, {"type": "invite", "room": room, "call_id": "<script>", "sdp": offer})
        assert status == 400, answer
        status, answer = post_signal(bob_browser, {"type": "hangup", "room": room, "call_id": "c4", "reason": "<img src=x>"})
        assert status == 400, answer

        # Stories: alice posts one; bob sees her first, as new, opens it (markup as text); alice sees him among viewers.
        alice_browser.get(gw.url + "/stories")
        # 600 characters (a story holds 500) are refused before posting and stay in the field, none cut.
        field = alice_browser.find_element(By.ID, "story-text")
        alice_browser.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", field, "é" * 600)
        alice_browser.find_element(By.ID, "story-post").click()
        assert "Too long to post: this story is 120 %" in alice_browser.find_element(By.ID, "story-error").text
        assert field.get_attribute("value") == "é" * 600 and path_of(alice_browser) == "/stories"
        field.clear()
        submit(alice_browser, "story-text", "Off to the <b>garden</b>", "story-post")
        wait(alice_browser, lambda b: b.find_elements(By.ID, "story-notice"))
        bob_browser.get(gw.url + "/stories")
        first = wait(bob_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#story-people li.room.new"), timeout=30)[0]
        # (Her story room's invite: opened, joined, by Bob's own form, never by the page's GET.)
        first.find_element(By.CSS_SELECTOR, ".room-name").click()
        wait(bob_browser, lambda b: path_of(b).startswith("/stories/view?"))
        assert bob_browser.find_element(By.CSS_SELECTOR, "#stories .story .body").text == "Off to the <b>garden</b>"
        # (Marked seen by the page's script, which says when the gateway has it.)
        wait(bob_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "main[data-marked-seen]"))
        bob_browser.get(gw.url + "/stories")
        assert not bob_browser.find_elements(By.CSS_SELECTOR, "#story-people li.room.new")
        assert bob_browser.find_elements(By.CSS_SELECTOR, "#story-people li.room")
        alice_browser.get(gw.url + "/stories")
        assert "Bob Baker" in alice_browser.find_element(By.CSS_SELECTOR, "#my-stories .story-viewers").text

        # A browser that refuses the camera and microphone: the page said why it would ask, says how to allow them,
        # and nothing rings for bob.
        refusing = start_browser(("--use-fake-device-for-media-stream", "--deny-permission-prompts"))
        try:
            # Signing in on the call's address leads straight back to it.
            # The call's address reached by a link (here a sign-in's way back) only offers the call: nothing rings
            # and the camera is not asked for until the member chooses to call.
            sign_in(refusing, gw, "alice", deep_link="/calls/call?media=video&room=" + quote(room, safe=""))
            assert call_state(refusing) == "offered" and not refusing.find_elements(By.ID, "remote-video")
            refusing.find_element(By.ID, "call-place").click()
            wait(refusing, lambda b: call_state(b) == "ended", timeout=20)
            assert "Allow them for this site" in refusing.find_element(By.ID, "call-permission").text
            bob_browser.get(gw.url + "/calls")
            time.sleep(3)
            assert ring(bob_browser) is None
        finally:
            refusing.quit()

        # The network drops mid-call (the TURN server every packet goes through stops): both pages say the
        # connection was lost and the call ended. Bob answers from the bar of an app on a path mount, whose URL shim
        # maps the app's own links: Accept still leads to the call's page on the gateway.
        bob_browser.get(gw.url + "/apps/visits/")
        wait(bob_browser, lambda b: bar_has(b, "#ring"))
        alice_browser.get(gw.url + "/chats/room?id=" + room)
        alice_browser.find_element(By.ID, "room-call-audio").click()
        accept = wait(bob_browser, ring, timeout=30).find_element(By.ID, "ring-accept")
        assert accept.get_attribute("href").startswith(gw.url + "/calls/call?id="), accept.get_attribute("href")
        accept.click()
        wait(bob_browser, lambda b: path_of(b).startswith("/calls/call?id="))
        for browser in (alice_browser, bob_browser):
            wait(browser, lambda b: call_state(b) == "connected", timeout=40)
        subprocess.run(["bash", COTURN, "stop", str(turn["folder"])], check=True)
        for browser in (alice_browser, bob_browser):
            wait(browser, lambda b: call_state(b) == "ended", timeout=60)
            assert browser.find_element(By.ID, "call-status").text.startswith("The connection was lost"), browser.find_element(By.ID, "call-status").text
    finally:
        alice_browser.quit()
        bob_browser.quit()
        gw.running.stop()
