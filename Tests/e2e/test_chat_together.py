"""The other side of a chat, in three real browsers on a real Synapse: Alice, Bob (in Arabic) and Olive (on a 390 px
phone). Bob types and Alice sees it, and sees it stop when he sends; Alice's line says "Seen" once Bob has read it,
and in a group "Seen by 2" with the names; Alice reacts from the keyboard alone (a quick one, then any emoji typed),
Bob sees each live and adds his own, Alice takes hers back; a reaction of 10,000 emoji (or 17) and one to a line
about the room are refused by the gateway, and one of 500 emoji sent by another client straight to the homeserver is
shown cut. Alice adds Olive to a group from its details and mentions her (`@` and the suggestion; a flood of
mentions is bounded to the room's members); Olive, away while the group talks, opens it at a "New messages" line
above the first she has not read, and "Jump to the latest" takes her to the end; Alice renames the group, gives it a
topic, makes Bob an admin and removes Olive, each said in the timeline, while Bob as a member is offered none of it
and refused by the gateway. Alice searches messages in every room and in one, chats and people in the same box, and
a result opens its room at the message. Axe clean, English, Arabic and 390 px."""

import uuid

import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import start_browser, start_gateway
from test_browser_journey import clicked, path_of, wait
from test_chat_homeserver import SERVER_NAME, admin, chat_config, choose_language
from test_chats import homeserver, timeline, upgrade, write  # noqa: F401 (homeserver: the fixture)
from test_upgrade_journey import Checker, register_by_http, screenshots, sign_in, submit


def line(browser, text):
    """The timeline's last line whose text holds `text`."""
    found = [item for item in browser.find_elements(By.CSS_SELECTOR, "#timeline li.message") if text in item.text]
    return found[-1] if found else None


def reactions(browser, text):
    """A line's reactions as shown: key, count and whether the member's own is among them."""
    item = line(browser, text)
    if item is None:
        return None
    return [
        (button.find_element(By.CLASS_NAME, "reaction-key").text, button.find_element(By.CLASS_NAME, "reaction-count").text,
         button.get_attribute("aria-pressed") == "true")
        for button in item.find_elements(By.CSS_SELECTOR, ".reactions button.reaction")
    ]


def typing(browser):
    return browser.find_element(By.ID, "typing").text.replace("\u2068", "").replace("\u2069", "")


def seen(browser):
    """The "Seen" mark: the line it is under, its words, and the names it gives."""
    marks = browser.find_elements(By.CSS_SELECTOR, "#timeline li.message .seen")
    if not marks:
        return None
    mark = marks[0]
    body = mark.find_element(By.XPATH, "ancestor::li[1]").find_element(By.CLASS_NAME, "body").text
    return body, mark.find_element(By.CLASS_NAME, "seen-text").text, mark.get_attribute("title").replace("\u2068", "").replace("\u2069", "")


def press(browser, element):
    """Clicks `element` once it is in the middle of the view (clear of the composer, which stays at the bottom)."""
    browser.execute_script("arguments[0].scrollIntoView({ block: 'center' })", element)
    element.click()


def notes(browser):
    """The timeline's lines about the room (who joined, was added, removed; its name and topic), as read."""
    return [item.text.replace("\u2068", "").replace("\u2069", "") for item in browser.find_elements(By.CSS_SELECTOR, "#timeline li .note")]


def post_from_page(browser, path, fields):
    """A form post of the page's own script (its CSRF token), answered in JSON: the status and the answer."""
    return browser.execute_async_script("""
        var done = arguments[arguments.length - 1], csrf = document.querySelector("input[name=csrf]").value;
        var body = new URLSearchParams(Object.assign({ csrf: csrf }, arguments[1]));
        fetch(arguments[0], { method: "POST", credentials: "same-origin", body: body,
          headers: { "Accept": "application/json", "X-Gatehouse-CSRF": csrf } })
          .then(function (answer) { return answer.json().then(function (json) { done([answer.status, json]); }); });""", path, fields)


def test_members_see_each_other_type_read_and_react(browser, tmp_path, homeserver):
    gw = start_gateway(tmp_path, "dev", extra={"chat": chat_config(homeserver)})
    bob_browser = olive_browser = None
    try:
        alice_browser = browser
        bob_browser = start_browser()
        olive_browser = start_browser(("--window-size=390,900",))
        alice_check = Checker(alice_browser, gw, screenshots(tmp_path))
        bob_check = Checker(bob_browser, gw, screenshots(tmp_path))
        olive_check = Checker(olive_browser, gw, screenshots(tmp_path))
        alice_name, bob_name, olive_name = ("a" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8], "o" + uuid.uuid4().hex[:8])
        bob_id, olive_id = f"@{bob_name}:{SERVER_NAME}", f"@{olive_name}:{SERVER_NAME}"
        sign_in(alice_browser, gw, "alice")
        upgrade(alice_browser, gw, alice_name, "+15550100001", "Alice Archer")
        sign_in(bob_browser, gw, "bob")
        choose_language(bob_browser, gw, "ar")
        register_by_http(gw, "bob", bob_name, display_name="Bob Baker", phone="+15550100002")
        sign_in(olive_browser, gw, "olive")
        register_by_http(gw, "olive", olive_name, display_name="Olive Ortiz")

        # Alice starts a direct chat with Bob; he accepts it from his list.
        alice_browser.get(gw.url + "/chats/new")
        submit(alice_browser, "chat-search", bob_name, "chat-search-button")
        wait(alice_browser, clicked(f'button[data-username="{bob_name}"]'))
        wait(alice_browser, lambda b: path_of(b).startswith("/chats/room?"))
        direct = alice_browser.find_element(By.ID, "main").get_attribute("data-room")
        write(alice_browser, "Lunch at noon?")
        wait(alice_browser, lambda b: not b.find_elements(By.CSS_SELECTOR, "#timeline li.pending"))
        assert seen(alice_browser) is None
        bob_browser.get(gw.url + "/chats")
        wait(bob_browser, clicked(f'li[data-room="{direct}"] button[value="join"]'), timeout=30)
        wait(bob_browser, lambda b: timeline(b) == ["Lunch at noon?"], timeout=30)

        # Bob has read it: Alice's line says so. He types: Alice sees it, and sees it end when he sends.
        assert wait(alice_browser, lambda b: seen(b), timeout=30) == ("Lunch at noon?", "Seen", "Seen by Bob Baker")
        bob_browser.find_element(By.ID, "composer-text").send_keys("Yes, at the")
        wait(alice_browser, lambda b: typing(b) == "Bob Baker is typing…", timeout=15)
        alice_check.page("chat-typing")
        bob_browser.find_element(By.ID, "composer-text").send_keys(" usual place", Keys.ENTER)
        wait(alice_browser, lambda b: timeline(b) == ["Lunch at noon?", "Yes, at the usual place"], timeout=30)
        wait(alice_browser, lambda b: typing(b) == "", timeout=15)

        # Alice reacts to Bob's line from the keyboard alone: React, the first quick reaction, Enter.
        react = line(alice_browser, "usual place").find_element(By.CSS_SELECTOR, "button[data-action=react]")
        react.send_keys(Keys.ENTER)
        choice = wait(alice_browser, lambda b: b.switch_to.active_element if "reaction-choice" in (b.switch_to.active_element.get_attribute("class") or "") else None)
        assert choice.text == "👍"
        alice_check.page("chat-reaction-picker")
        alice_browser.set_window_size(390, 900)
        alice_check.page("chat-reaction-picker-390")
        alice_browser.set_window_size(1280, 900)
        choice.send_keys(Keys.ENTER)
        wait(alice_browser, lambda b: b.switch_to.active_element == react)
        wait(bob_browser, lambda b: reactions(b, "usual place") == [("👍", "1", False)], timeout=30)
        wait(alice_browser, lambda b: reactions(b, "usual place") == [("👍", "1", True)], timeout=30)
        # Any other emoji, typed into the picker's field (put in as a paste would: chromedriver types none).
        react.send_keys(Keys.ENTER)
        field = wait(alice_browser, lambda b: b.find_element(By.CSS_SELECTOR, ".reaction-picker input[name=key]"))
        alice_browser.execute_script("arguments[0].value = arguments[1]", field, "🎉")
        field.send_keys(Keys.ENTER)
        wait(bob_browser, lambda b: reactions(b, "usual place") == [("👍", "1", False), ("🎉", "1", False)], timeout=30)
        # Escape closes the picker and gives the focus back.
        react.send_keys(Keys.ENTER)
        wait(alice_browser, lambda b: b.find_elements(By.CSS_SELECTOR, ".reaction-picker"))
        alice_browser.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait(alice_browser, lambda b: not b.find_elements(By.CSS_SELECTOR, ".reaction-picker") and b.switch_to.active_element == react)
        # Bob adds his own 👍 by pressing it; Alice takes hers back by pressing it again.
        line(bob_browser, "usual place").find_element(By.CSS_SELECTOR, "button.reaction[data-key='👍']").click()
        wait(alice_browser, lambda b: reactions(b, "usual place") == [("👍", "2", True), ("🎉", "1", True)], timeout=30)
        bob_check.page("chat-reactions-ar")
        line(alice_browser, "usual place").find_element(By.CSS_SELECTOR, "button.reaction[data-key='👍']").click()
        wait(bob_browser, lambda b: reactions(b, "usual place") == [("👍", "1", True), ("🎉", "1", False)], timeout=30)
        label = line(bob_browser, "usual place").find_element(By.CSS_SELECTOR, "button.reaction[data-key='🎉']").get_attribute("aria-label")
        assert "Alice Archer" in label, label

        # Hostile reactions: 10,000 emoji (too large a form), 17, two lines, a blank, and a reaction to a line about the
        # room, each refused by the gateway in JSON.
        bob_line = line(alice_browser, "usual place").get_attribute("data-id")
        status, answer = post_from_page(alice_browser, "/chats/react", {"room": direct, "event": bob_line, "key": "😀" * 10_000})
        assert status == 413 and answer["error"] == "request_body_too_large", answer
        for key in ("😀" * 17, "two\nlines", " "):
            status, answer = post_from_page(alice_browser, "/chats/react", {"room": direct, "event": bob_line, "key": key})
            assert status == 400 and answer["error"] == "chat_invalid_reaction", (key, answer)
        joined = alice_browser.find_element(By.CSS_SELECTOR, "#timeline li.kind-membership").get_attribute("data-id")
        status, answer = post_from_page(alice_browser, "/chats/react", {"room": direct, "event": joined, "key": "👍"})
        assert status == 400 and answer["error"] == "chat_invalid_reaction", answer
        # Another client of Bob's sends 500 emoji (Synapse's most for a key) straight to the homeserver: Alice's page
        # shows them cut.
        status, login = admin(homeserver, "POST", f"/_synapse/admin/v1/users/{bob_id}/login", {})
        assert status == 200, login
        flood = requests.put(
            f"{homeserver['url']}/_matrix/client/v3/rooms/{direct}/send/m.reaction/flood-{uuid.uuid4().hex}",
            json={"m.relates_to": {"rel_type": "m.annotation", "event_id": bob_line, "key": "😀" * 500}},
            headers={"Authorization": f"Bearer {login['access_token']}"}, timeout=30)
        assert flood.status_code == 200, flood.text
        shown = wait(alice_browser, lambda b: [key for key, _, _ in reactions(b, "usual place") if key.startswith("😀")], timeout=30)
        assert len(shown[0]) <= 18 and shown[0].endswith("…"), shown

        # A group: Alice makes it with Bob, then adds Olive from its details (the people search, by username).
        alice_browser.get(gw.url + "/chats/new")
        alice_browser.find_element(By.ID, "group-name").send_keys("Lunch club")
        submit(alice_browser, "group-members", bob_name, "group-create")
        wait(alice_browser, lambda b: path_of(b).startswith("/chats/room?"))
        group = alice_browser.find_element(By.ID, "main").get_attribute("data-room")
        alice_browser.find_element(By.CSS_SELECTOR, "#room-details summary").click()
        submit(alice_browser, "group-find", olive_name, "group-find-button")
        wait(alice_browser, lambda b: b.find_element(By.ID, "room-details").get_attribute("open") is not None)
        alice_check.page("chat-group-find")
        wait(alice_browser, clicked(f'#group-found button[data-username="{olive_name}"]'))
        wait(alice_browser, lambda b: b.find_element(By.ID, "chat-notice").text == "They were invited to the group.")
        wait(alice_browser, lambda b: "Alice Archer invited Olive Ortiz" in notes(b), timeout=30)
        for member in (bob_browser, olive_browser):
            member.get(gw.url + "/chats")
            wait(member, clicked(f'li[data-room="{group}"] button[value="join"]'), timeout=30)
            wait(member, lambda b: path_of(b).startswith("/chats/room?"))
        # Olive is away while Alice and Bob talk; she opens it at the first line she has not read.
        write(alice_browser, "Who is in?")
        wait(olive_browser, lambda b: "Who is in?" in timeline(b), timeout=30)
        wait(bob_browser, lambda b: "Who is in?" in timeline(b), timeout=30)
        # Both have read it: "Seen by 2", with their names.
        mark = wait(alice_browser, lambda b: seen(b) if seen(b) and seen(b)[1] == "Seen by 2" else None, timeout=30)
        assert mark[0] == "Who is in?" and "Bob Baker" in mark[2] and "Olive Ortiz" in mark[2], mark
        # Alice mentions Olive: `@Ol` suggests her, Enter takes her name; Olive's line says it mentions her, Bob's
        # does not.
        field = alice_browser.find_element(By.ID, "composer-text")
        field.send_keys("Lunch, @Ol")
        wait(alice_browser, lambda b: [item.text for item in b.find_elements(By.CSS_SELECTOR, "#mention-list li")] == [f"Olive Ortiz {olive_id}"])
        alice_check.page("chat-mention-suggestions")
        field.send_keys(Keys.ENTER)
        wait(alice_browser, lambda b: field.get_attribute("value") == "Lunch, @Olive Ortiz " and not b.find_element(By.ID, "mention-list").is_displayed())
        field.send_keys("are you in?", Keys.ENTER)
        mention = wait(olive_browser, lambda b: line(b, "are you in?"), timeout=30)
        wait(olive_browser, lambda b: "mentions-me" in line(b, "are you in?").get_attribute("class"))
        assert "mentions you" in mention.text
        wait(bob_browser, lambda b: line(b, "are you in?"), timeout=30)
        assert "mentions-me" not in line(bob_browser, "are you in?").get_attribute("class")
        # A flood of mentions (people of no room of hers, and the two members) mentions the members alone.
        flood = ",".join([f"@nobody{n}:{SERVER_NAME}" for n in range(30)] + [bob_id, olive_id])
        status, sent = post_from_page(alice_browser, "/chats/send", {"room": group, "text": "everyone?", "txn": "flood-1", "mentions": flood})
        assert status == 200, sent
        event = requests.get(
            f"{homeserver['url']}/_matrix/client/v3/rooms/{group}/event/{sent['event_id']}", headers={"Authorization": f"Bearer {login['access_token']}"},
            timeout=30).json()
        assert event["content"]["m.mentions"] == {"user_ids": [bob_id, olive_id]}, event
        olive_browser.get(gw.url + "/chats")
        for n in range(30):
            status, _ = post_from_page(alice_browser, "/chats/send", {"room": group, "text": f"plan {n}", "txn": f"plan-{n}"})
            assert status == 200
        wait(bob_browser, lambda b: "plan 29" in timeline(b), timeout=30)
        olive_browser.get(gw.url + "/chats/room?id=" + group)
        first_new = wait(olive_browser, lambda b: b.find_element(By.ID, "new-messages"))
        after = first_new.find_element(By.XPATH, "following-sibling::li[contains(@class, 'message')][1]")
        assert "plan 0" in after.text, after.text
        # The page opened there, not at the end: the line is in view, and "Jump to the latest" is offered.
        top = olive_browser.execute_script("return arguments[0].getBoundingClientRect().top", first_new)
        assert 0 <= top < 450, top
        jump = wait(olive_browser, lambda b: b.find_element(By.ID, "jump-latest") if b.find_element(By.ID, "jump-latest").is_displayed() else None)
        olive_check.page("chat-new-messages-390")
        jump.click()
        wait(olive_browser, lambda b: b.execute_script("return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120"))
        wait(olive_browser, lambda b: not b.find_element(By.ID, "jump-latest").is_displayed())
        # Read now, across her devices: opened again, the page has no "New messages" line.
        def opened_again(b):
            b.refresh()
            wait(b, lambda b: "plan 29" in timeline(b))
            return not b.find_elements(By.ID, "new-messages")
        wait(olive_browser, opened_again, timeout=30)

        # Alice renames the group and gives it a topic: the timeline says so, on Bob's page live.
        alice_browser.get(gw.url + "/chats/room?id=" + group)
        alice_browser.find_element(By.CSS_SELECTOR, "#room-details summary").click()
        field = alice_browser.find_element(By.ID, "group-rename")
        field.clear()
        field.send_keys("Lunch crew")
        press(alice_browser, alice_browser.find_element(By.ID, "group-rename-save"))
        wait(alice_browser, lambda b: b.find_element(By.ID, "room-title").text.strip("\u2068\u2069") == "Lunch crew")
        # (Bob reads the gateway in Arabic.)
        wait(bob_browser, lambda b: "سمّى Alice Archer المجموعة «Lunch crew»" in notes(b), timeout=30)
        alice_browser.find_element(By.CSS_SELECTOR, "#room-details summary").click()
        alice_browser.find_element(By.ID, "group-topic").send_keys("Fridays at noon")
        press(alice_browser, alice_browser.find_element(By.ID, "group-topic-save"))
        wait(alice_browser, lambda b: b.find_element(By.ID, "room-topic").text == "Fridays at noon")
        wait(alice_browser, lambda b: "Alice Archer set the topic to “Fridays at noon”" in notes(b))
        wait(bob_browser, lambda b: "غيّر Alice Archer الموضوع إلى «Fridays at noon»" in notes(b), timeout=30)
        # Bob, a member, may add people (the room lets every member invite) but is offered nothing else, and is
        # refused by the gateway when he tries; so is any change of a direct chat.
        bob_browser.refresh()
        wait(bob_browser, lambda b: b.find_elements(By.ID, "room-members"))
        assert bob_browser.find_elements(By.ID, "group-find")
        assert not bob_browser.find_elements(By.CSS_SELECTOR, "#group-rename, #group-topic, .member-remove, .member-admin")
        status, answer = post_from_page(bob_browser, "/chats/manage", {"room": group, "action": "remove", "user": olive_id})
        assert status == 403 and answer["error"] == "chat_not_permitted", answer
        status, answer = post_from_page(alice_browser, "/chats/manage", {"room": direct, "action": "rename", "name": "Ours"})
        assert status == 409 and answer["error"] == "chat_direct_chat", answer
        # A script asking in JSON is answered in JSON when what it sends cannot be used (no name, a name of 101).
        for name in ("", "n" * 101):
            status, answer = post_from_page(alice_browser, "/chats/manage", {"room": group, "action": "rename", "name": name})
            assert status == 422 and answer["error"] == "chat_group_error_name" and answer["message"], answer
        # Alice makes Bob an admin, then removes Olive: Olive's open room takes her back to her list.
        olive_browser.get(gw.url + "/chats/room?id=" + group)
        alice_browser.find_element(By.CSS_SELECTOR, "#room-details summary").click()
        press(alice_browser, alice_browser.find_element(By.CSS_SELECTOR, f'#room-members li[data-user="{bob_id}"] .member-admin'))
        wait(alice_browser, lambda b: "Alice Archer made Bob Baker an admin" in notes(b), timeout=30)
        alice_browser.find_element(By.CSS_SELECTOR, "#room-details summary").click()
        alice_check.page("chat-group-manage")
        alice_browser.set_window_size(390, 900)
        alice_check.page("chat-group-manage-390")
        alice_browser.set_window_size(1280, 900)
        press(alice_browser, alice_browser.find_element(By.CSS_SELECTOR, f'#room-members li[data-user="{olive_id}"] .member-remove'))
        wait(alice_browser, lambda b: "Alice Archer removed Olive Ortiz" in notes(b), timeout=30)
        wait(olive_browser, lambda b: path_of(b) == "/chats" and group not in b.page_source, timeout=30)

        # Search from the list: a message in any room (the homeserver's search), chats by name and people in the same
        # box; a result opens its room at the message.
        alice_browser.get(gw.url + "/chats")
        submit(alice_browser, "chats-search-box", "usual place", "chats-search-button")
        wait(alice_browser, lambda b: path_of(b).startswith("/chats/search"))
        found = wait(alice_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#found-messages li a"), timeout=20)
        assert len(found) == 1 and "Yes, at the usual place" in found[0].text and "Bob Baker" in found[0].text, [f.text for f in found]
        assert alice_browser.find_element(By.ID, "chats-search-box").get_attribute("value") == "usual place"
        alice_check.page("chat-search")
        found[0].click()
        wait(alice_browser, lambda b: "at=" in b.current_url and "usual place" in b.switch_to.active_element.text)
        assert alice_browser.find_element(By.ID, "jump-latest").is_displayed()
        alice_browser.get(gw.url + "/chats/search?q=crew")
        wait(alice_browser, lambda b: [r.get_attribute("data-room") for r in b.find_elements(By.CSS_SELECTOR, "#found-rooms li.room")] == [group])
        alice_browser.get(gw.url + "/chats/search?q=" + bob_name)
        wait(alice_browser, lambda b: b.find_elements(By.CSS_SELECTOR, f'#found-people button[data-username="{bob_name}"]'))
        # In one room, from its details: "plan 7" is found in the group, not elsewhere; nothing is said for words
        # no message has.
        alice_browser.get(gw.url + "/chats/room?id=" + group)
        alice_browser.find_element(By.CSS_SELECTOR, "#room-details summary").click()
        submit(alice_browser, "chats-search-box", "plan 7", "chats-search-button")
        found = wait(alice_browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#found-messages li a"), timeout=20)
        assert all("Lunch crew" in f.text for f in found) and any("plan 7" in f.text for f in found), [f.text for f in found]
        assert alice_browser.find_element(By.ID, "search-scope").is_displayed()
        alice_browser.get(gw.url + "/chats/search?q=zebrafinch")
        assert "zebrafinch" in wait(alice_browser, lambda b: b.find_element(By.ID, "found-none")).text
        # A room the member is not in, and a message of no room, are refused.
        alice_browser.get(gw.url + f"/chats/search?q=x&room=!nowhere:{SERVER_NAME}")
        assert alice_browser.find_element(By.TAG_NAME, "h1").text != "Search chats"
    finally:
        for other in (bob_browser, olive_browser):
            if other:
                other.quit()
        gw.running.stop()
