"""The gateway's own chat in real browsers, on a real Synapse configured as the docs recommend (no sign-in of its own
for browsers, the gateway's JWT login only): alice and bob upgrade in two Chromium browsers and chat live through the
gateway; bob's bar on a proxied app (on the gateway's host and on an app host of its own) counts alice's message
without a reload; a group of three with an invite declined; the room list reordered by new messages; sign-out logs
the Matrix device out; a member at `sso` gets the onboarding prompt and leaves no trace on the homeserver. English and
Arabic (right to left), 390 and 1280 px, axe clean."""

import urllib.parse
import uuid

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import start_browser, start_gateway
from test_browser_journey import bar, bar_has, clicked, path_of, wait
from test_gateway_bar import shown
from test_chat_homeserver import SERVER_NAME, admin, chat_config, choose_language, started_homeserver, stop_homeserver
from test_upgrade_journey import Checker, code_to_profile, register_by_http, screenshots, sign_in, sign_out, submit

SUBS = {"alice": "3f6c2a8e-5b1d-4c7a-9e2f-0a1b2c3d4e01", "bob": "3f6c2a8e-5b1d-4c7a-9e2f-0a1b2c3d4e02",
        "olive": "3f6c2a8e-5b1d-4c7a-9e2f-0a1b2c3d4e03"}


@pytest.fixture
def homeserver(tmp_path):
    """A homeserver of the test's own, as docs/operations.md recommends for the gateway's own chat."""
    started = started_homeserver(tmp_path / "synapse")
    yield started
    stop_homeserver(started)


def devices(homeserver, user_id):
    status, answer = admin(homeserver, "GET", f"/_synapse/admin/v2/users/{user_id}/devices")
    assert status == 200, answer
    return answer["devices"]


def upgrade(browser, gw, username, phone, display_name):
    """The upgrade in the browser, discoverable by everybody; ends on the done page."""
    browser.get(gw.url + "/upgrade?from=portal")
    wait(browser, lambda b: path_of(b) == "/upgrade/phone")
    submit(browser, "phone", phone, "send-code")
    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    code_to_profile(browser, gw, username)
    browser.find_element(By.ID, "discoverable-everybody").click()
    submit(browser, "display-name", display_name, "finish")
    wait(browser, lambda b: path_of(b).startswith("/upgrade/done"))


def write(browser, text):
    """Types into the composer and presses Enter. Text outside the Basic Multilingual Plane (an emoji) is put in as a
    paste would, which chromedriver's typing cannot do; Enter is a real key press either way."""
    field = wait(browser, lambda b: b.find_element(By.ID, "composer-text"))
    browser.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", field, text)
    field.send_keys(Keys.END, Keys.ENTER)


def timeline(browser):
    return [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#timeline li.message .body")]


def senders(browser):
    """Who wrote each line, as read (the isolates around a name, which keep the words around it in their direction,
    left out)."""
    return [item.text.strip("\u2068\u2069") for item in browser.find_elements(By.CSS_SELECTOR, "#timeline li.message.kind-text .sender")]


def room_order(browser):
    return [item.get_attribute("data-room") for item in browser.find_elements(By.CSS_SELECTOR, "#room-list li.room")]


def bar_badge(browser):
    """The unread count on the bar's Chats tab, or None."""
    badges = bar(browser).find_elements(By.CSS_SELECTOR, "#bar-chats .bar-badge")
    return badges[0].get_attribute("textContent") if badges else None


def test_two_members_who_upgraded_chat_live_through_the_gateway(browser, tmp_path, homeserver):
    gw = start_gateway(tmp_path, "dev", extra={"chat": chat_config(homeserver)})
    bob_browser = olive_browser = None
    try:
        alice_browser = browser
        alice_check = Checker(alice_browser, gw, screenshots(tmp_path))
        bob_browser = start_browser()
        bob_check = Checker(bob_browser, gw, screenshots(tmp_path))
        olive_browser = start_browser(("--window-size=390,900",))
        olive_check = Checker(olive_browser, gw, screenshots(tmp_path))

        # A member at `sso`: Chats is the onboarding prompt; the homeserver never hears of her.
        sign_in(olive_browser, gw, "olive")
        olive_browser.get(gw.url + "/chats")
        assert olive_browser.find_element(By.ID, "add-features").is_displayed()
        assert not olive_browser.find_elements(By.ID, "chat-start")
        olive_check.page()
        assert admin(homeserver, "GET", f"/_synapse/admin/v1/auth_providers/oidc/users/{SUBS['olive']}")[0] == 404
        assert admin(homeserver, "GET", f"/_synapse/admin/v2/users/@olive:{SERVER_NAME}")[0] == 404

        # Alice and Bob upgrade, each in a browser of their own; Bob reads the gateway in Arabic.
        alice_name, bob_name, olive_name = ("a" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8], "o" + uuid.uuid4().hex[:8])
        alice_id, bob_id = f"@{alice_name}:{SERVER_NAME}", f"@{bob_name}:{SERVER_NAME}"
        sign_in(alice_browser, gw, "alice")
        upgrade(alice_browser, gw, alice_name, "+15550100001", "Alice Archer")
        sign_in(bob_browser, gw, "bob")
        choose_language(bob_browser, gw, "ar")
        upgrade(bob_browser, gw, bob_name, "+15550100002", "Bob Baker")
        # Olive upgrades without a browser (her browser's session is raised with her registration).
        register_by_http(gw, "olive", olive_name)

        # Bob is on a proxied app: the bar's Chats tab has no count yet.
        bob_browser.get(gw.url + "/apps/whoami/")
        wait(bob_browser, lambda b: bar_has(b, "#bar-chats"))
        assert bar_badge(bob_browser) is None

        # Alice finds Bob by his name and opens the direct chat.
        alice_browser.get(gw.url + "/chats")
        alice_check.every_width_and_scheme("chats-empty")
        alice_browser.find_element(By.ID, "chat-start").click()
        wait(alice_browser, lambda b: path_of(b) == "/chats/new")
        submit(alice_browser, "chat-search", "Bob", "chat-search-button")
        alice_check.page("chat-new")
        alice_browser.find_element(By.CSS_SELECTOR, f'button[data-username="{bob_name}"]').click()
        wait(alice_browser, lambda b: path_of(b).startswith("/chats/room?"))
        direct = alice_browser.find_element(By.ID, "main").get_attribute("data-room")
        write(alice_browser, "Hello Bob 👋")
        wait(alice_browser, lambda b: timeline(b) == ["Hello Bob 👋"])
        wait(alice_browser, lambda b: not b.find_elements(By.CSS_SELECTOR, "#timeline li.pending"))
        # Her own line names her as the page names it once rendered by the server.
        assert senders(alice_browser) == ["Alice Archer"]
        alice_browser.refresh()
        wait(alice_browser, lambda b: senders(b) == ["Alice Archer"])
        alice_check.every_width_and_scheme("chat-room")

        # Bob's bar counts the invite without a reload; so does the bar of an app on a host of its own.
        wait(bob_browser, lambda b: bar_badge(b) == "1", timeout=40)
        bob_check.page()
        # On a phone the Chats tab is inside the switcher's menu: the count is on the switcher's button instead.
        bob_browser.set_window_size(390, 900)
        wait(bob_browser, lambda b: shown(b, "#switcher-unread") and bar(b).find_element(By.ID, "switcher-unread").get_attribute("textContent") == "1")
        bob_check.page("bar-unread-390")
        bob_browser.set_window_size(1280, 900)
        bob_browser.switch_to.new_window("tab")
        bob_browser.get(gw.url + "/open/hosted")
        wait(bob_browser, lambda b: b.current_url.startswith(f"http://hosted.apps.localhost:{gw.port}/") and bar_has(b, "#bar-chats"))
        wait(bob_browser, lambda b: bar_badge(b) == "1", timeout=40)

        # Bob opens Chats: the invite on top, accepted; Alice's message is there; he replies.
        bob_browser.get(gw.url + "/chats")
        wait(bob_browser, lambda b: room_order(b) == [direct])
        bob_check.every_width_and_scheme("chats-invite-ar")
        wait(bob_browser, clicked(f'li[data-room="{direct}"] button[value="join"]'))
        wait(bob_browser, lambda b: path_of(b).startswith("/chats/room?"))
        wait(bob_browser, lambda b: timeline(b) == ["Hello Bob 👋"])
        assert bob_browser.find_element(By.TAG_NAME, "html").get_attribute("dir") == "rtl"
        bob_check.every_width_and_scheme("chat-room-ar")
        # 40,000 Arabic letters pasted (80,000 bytes, over a message's 32,768): refused before sending, in Bob's
        # language, the text whole in the composer; nothing pending, nothing sent.
        long = "ب" * 40_000
        write(bob_browser, long)
        error = wait(bob_browser, lambda b: b.find_element(By.ID, "composer-error") if b.find_element(By.ID, "composer-error").is_displayed() else None)
        assert "أطول من أن تُرسل" in error.text and "245" in error.text, error.text
        field = bob_browser.find_element(By.ID, "composer-text")
        assert field.get_attribute("value") == long and field.get_attribute("aria-invalid") == "true"
        assert not bob_browser.find_elements(By.CSS_SELECTOR, "#timeline li.pending, #timeline li.failed")
        bob_browser.execute_script("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input'))", field)
        assert not bob_browser.find_element(By.ID, "composer-error").is_displayed()
        write(bob_browser, "Hi Alice, nice to hear from you")
        # Alice's open room shows the reply without a reload.
        wait(alice_browser, lambda b: timeline(b) == ["Hello Bob 👋", "Hi Alice, nice to hear from you"], timeout=30)
        # 45 lines more from Alice: the room opens on its latest 40, and the older ones come in at the top when she
        # scrolls there (rendered by the gateway as the page's own), each once, in order.
        sent = alice_browser.execute_async_script("""
            var done = arguments[arguments.length - 1], room = document.getElementById("main").getAttribute("data-room");
            var csrf = document.querySelector("input[name=csrf]").value, count = 0;
            (function next() {
              if (count === 45) { done(count); return; }
              var body = new URLSearchParams({ csrf: csrf, room: room, text: "line " + count, txn: "older-" + count });
              fetch("/chats/send", { method: "POST", credentials: "same-origin", body: body,
                headers: { "Accept": "application/json", "X-Gatehouse-CSRF": csrf } }).then(function (answer) {
                if (!answer.ok) { done("refused: " + answer.status); return; }
                count += 1; next();
              });
            })();""")
        assert sent == 45, sent
        lines = ["Hello Bob 👋", "Hi Alice, nice to hear from you"] + [f"line {n}" for n in range(45)]
        wait(alice_browser, lambda b: timeline(b) == lines, timeout=30)
        alice_browser.refresh()
        wait(alice_browser, lambda b: timeline(b) == lines[-40:])
        alice_browser.execute_script("window.scrollTo(0, 0)")
        wait(alice_browser, lambda b: timeline(b) == lines, timeout=20)
        days = [item.get_attribute("data-day") for item in alice_browser.find_elements(By.CSS_SELECTOR, "#timeline li.day")]
        assert days and len(days) == len(set(days)), days

        # Bob writes in Markdown with a link pasted and a `javascript:` one: Alice sees the formatting, the link opens
        # in a tab of its own with no way back to the page, through the leaving page, and the script's address is text.
        write(bob_browser, "**Look** at `the docs` on https://example.org/docs_v2 and javascript:alert(1)")
        body = wait(alice_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#timeline li.message:last-child .body strong"), timeout=30)
        line = alice_browser.find_element(By.CSS_SELECTOR, "#timeline li.message:last-child .body")
        assert body[0].text == "Look" and line.find_element(By.TAG_NAME, "code").text == "the docs", line.get_attribute("innerHTML")
        links = line.find_elements(By.TAG_NAME, "a")
        # (example.org is outside the development allowlist: the link goes through the leaving page, as an app's would.)
        leaving = gw.url + "/leaving?to=" + urllib.parse.quote("https://example.org/docs_v2", safe="")
        assert [a.get_attribute("href") for a in links] == [leaving], line.get_attribute("innerHTML")
        assert links[0].text == "https://example.org/docs_v2"
        assert links[0].get_attribute("target") == "_blank" and "noopener" in links[0].get_attribute("rel")
        assert "javascript:alert(1)" in line.text
        alice_check.page("chat-room-formatted")
        # Bob edits it from the keyboard alone (Up in the empty composer takes his last message), then deletes it:
        # Alice sees each live, in its place.
        field = bob_browser.find_element(By.ID, "composer-text")
        field.send_keys(Keys.ARROW_UP)
        wait(bob_browser, lambda b: b.find_element(By.ID, "composer-editing").is_displayed())
        assert field.get_attribute("value").startswith("Look at the docs on https://example.org/docs_v2"), field.get_attribute("value")
        bob_browser.execute_script("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input'))", field)
        field.send_keys("Look again, *now*", Keys.ENTER)
        wait(bob_browser, lambda b: not b.find_element(By.ID, "composer-editing").is_displayed())
        edited = wait(alice_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#timeline li.message:last-child .body em"), timeout=30)
        assert edited[0].text == "now"
        last = alice_browser.find_element(By.CSS_SELECTOR, "#timeline li.message:last-child")
        assert last.find_elements(By.CSS_SELECTOR, ".edited") and "docs_v2" not in last.text
        # Alice's own lines offer Edit and Delete; Bob's lines on her page Reply and React alone.
        assert [b.get_attribute("data-action") for b in last.find_elements(By.CSS_SELECTOR, ".line-actions button")] == ["reply", "react"]
        assert alice_browser.find_elements(By.CSS_SELECTOR, "#timeline li.message.mine .line-actions:not([hidden]) button[data-action=edit]")
        mine = bob_browser.find_elements(By.CSS_SELECTOR, "#timeline li.message.mine")[-1]
        mine.find_element(By.CSS_SELECTOR, "button[data-action=delete]").click()
        bob_browser.switch_to.alert.accept()
        wait(alice_browser, lambda b: "kind-deleted" in b.find_element(By.CSS_SELECTOR, "#timeline li.message:last-child").get_attribute("class"), timeout=30)
        assert "Look again" not in alice_browser.find_element(By.ID, "timeline").text
        # Bob answers Alice's last line: the composer says what he answers; Alice's page quotes it with the reply, and
        # the quote takes her to the line.
        answered = [line for line in bob_browser.find_elements(By.CSS_SELECTOR, "#timeline li.message") if "line 44" in line.text][-1]
        answered.find_element(By.CSS_SELECTOR, "button[data-action=reply]").click()
        note = wait(bob_browser, lambda b: b.find_element(By.ID, "composer-replying") if b.find_element(By.ID, "composer-replying").is_displayed() else None)
        assert "Alice Archer\u2069: line 44" in note.text, note.text
        write(bob_browser, "That was the last one")
        wait(bob_browser, lambda b: not b.find_element(By.ID, "composer-replying").is_displayed())
        quote = wait(alice_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#timeline li.message:last-child .reply-to"), timeout=30)[0]
        assert "Alice Archer" in quote.text and "line 44" in quote.text, quote.text
        alice_browser.execute_script("arguments[0].scrollIntoView({ block: 'center' })", quote)
        quote.click()
        wait(alice_browser, lambda b: "line 44" in b.switch_to.active_element.text)
        # A draft waits in its room while Bob goes elsewhere and comes back, and while he edits a message.
        room_url = bob_browser.current_url
        bob_browser.find_element(By.ID, "composer-text").send_keys("half a thought")
        bob_browser.get(gw.url + "/chats")
        bob_browser.get(room_url)
        field = wait(bob_browser, lambda b: b.find_element(By.ID, "composer-text"))
        wait(bob_browser, lambda b: field.get_attribute("value") == "half a thought")
        mine = bob_browser.find_elements(By.CSS_SELECTOR, "#timeline li.message.mine .line-actions button[data-action=edit]")[-1]
        mine.click()
        wait(bob_browser, lambda b: b.find_element(By.ID, "composer-editing").is_displayed())
        field.send_keys(Keys.ESCAPE)
        wait(bob_browser, lambda b: field.get_attribute("value") == "half a thought")
        bob_browser.execute_script("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input'))", field)

        # A group of three: Bob accepts, Olive declines, each from the invite as it arrived live on an open list.
        bob_browser.get(gw.url + "/chats")
        olive_browser.get(gw.url + "/chats")
        alice_browser.get(gw.url + "/chats/new")
        alice_browser.find_element(By.ID, "group-name").send_keys("Garden club")
        submit(alice_browser, "group-members", f"{bob_name}, {olive_name}", "group-create")
        wait(alice_browser, lambda b: path_of(b).startswith("/chats/room?"))
        group = alice_browser.find_element(By.ID, "main").get_attribute("data-room")
        wait(bob_browser, lambda b: b.find_elements(By.CSS_SELECTOR, f'li[data-room="{group}"] button[value="join"]'), timeout=30)
        assert room_order(bob_browser)[0] == group  # invites first
        wait(bob_browser, clicked(f'li[data-room="{group}"] button[value="join"]'))
        wait(bob_browser, lambda b: path_of(b).startswith("/chats/room?"))
        wait(olive_browser, lambda b: b.find_elements(By.CSS_SELECTOR, f'li[data-room="{group}"] button[value="decline"]'), timeout=30)
        olive_check.page("chats-invite-390")
        wait(olive_browser, clicked(f'li[data-room="{group}"] button[value="decline"]'))
        wait(olive_browser, lambda b: b.find_elements(By.ID, "chat-notice"))
        assert group not in room_order(olive_browser)
        olive_check.page()

        # The room list follows the newest message: Alice's list, live, as messages arrive in each room.
        alice_browser.get(gw.url + "/chats")
        wait(alice_browser, lambda b: set(room_order(b)) == {direct, group})
        bob_browser.get(gw.url + "/chats/room?id=" + group)
        write(bob_browser, "Tomatoes on Saturday?")
        wait(alice_browser, lambda b: room_order(b) == [group, direct], timeout=30)
        bob_browser.get(gw.url + "/chats/room?id=" + direct)
        write(bob_browser, "And one more thing")
        wait(alice_browser, lambda b: room_order(b) == [direct, group], timeout=30)
        alice_check.page("chats-list")

        # Signing out logs the session's Matrix device out: the homeserver lists none of Bob's.
        assert len(devices(homeserver, bob_id)) == 1
        sign_out(bob_browser)
        assert devices(homeserver, bob_id) == []
        assert len(devices(homeserver, alice_id)) == 1
    finally:
        for other in (bob_browser, olive_browser):
            if other:
                other.quit()
        gw.running.stop()
