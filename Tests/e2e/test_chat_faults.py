"""The chat when its homeserver fails, in real browsers on a real Synapse: stopped, Alice's room says the chat server
is not answering and her message is clearly not sent (Retry); started again, the page says nothing more and sends
it by itself, and Bob gets it once. Frozen (a homeserver too slow to answer), her next message fails after the
gateway's timeout (the homeserver may still take it when it wakes): sent again with the same transaction, Bob gets
it once, never twice."""

import os
import signal
import subprocess

from selenium.webdriver.common.by import By

from conftest import start_browser, start_gateway
from test_browser_journey import wait
from test_calls import members_in_a_direct_chat
from test_chat_homeserver import SYNAPSE, chat_config, started_homeserver
from test_chats import timeline, write
from test_notifications import homeserver  # noqa: F401 (the fixture)


def line_status(browser, text):
    """The status under the member's own line that holds `text` ("Sent", "Not sent…"), and whether it offers Retry."""
    lines = [item for item in browser.find_elements(By.CSS_SELECTOR, "#timeline li.message") if text in item.text]
    if not lines:
        return None
    status = lines[-1].find_elements(By.CLASS_NAME, "status")
    return (status[0].text, bool(status[0].find_elements(By.TAG_NAME, "button"))) if status else ("", False)


def is_sent(browser, text):
    """Whether the member's line holding `text` is sent: neither pending nor failed (said "Sent", or already the line
    the live stream brought in its place)."""
    lines = [item for item in browser.find_elements(By.CSS_SELECTOR, "#timeline li.message") if text in item.text]
    return bool(lines) and not {"pending", "failed"} & set(lines[-1].get_attribute("class").split())


def offline_shown(browser):
    return browser.find_element(By.ID, "chat-offline").is_displayed()


def test_a_message_sent_while_the_homeserver_fails_is_sent_once_it_is_back(tmp_path, homeserver):
    gw = start_gateway(tmp_path, "dev", extra={"chat": chat_config(homeserver, timeout_seconds=3)})
    alice_browser, bob_browser = start_browser(), start_browser()
    try:
        room = members_in_a_direct_chat(alice_browser, bob_browser, gw)[2]
        write(alice_browser, "Before")
        wait(bob_browser, lambda b: timeline(b) == ["Before"], timeout=30)
        assert not offline_shown(alice_browser)

        # Stopped: the page says so; what Alice sends is clearly not sent.
        subprocess.run(["bash", SYNAPSE, "stop", str(homeserver["folder"])], check=True)
        wait(alice_browser, offline_shown, timeout=40)
        write(alice_browser, "While it was down")
        status = wait(alice_browser, lambda b: line_status(b, "While it was down") if line_status(b, "While it was down")[1] else None, timeout=30)
        assert status[0].startswith("Not sent"), status

        # Started again: the page recovers by itself and sends it; Bob gets it once.
        started_homeserver(homeserver["folder"])
        wait(alice_browser, lambda b: not offline_shown(b), timeout=60)
        wait(alice_browser, lambda b: is_sent(b, "While it was down"), timeout=30)
        wait(bob_browser, lambda b: timeline(b) == ["Before", "While it was down"], timeout=60)

        # Frozen: the send fails after the gateway's timeout (the homeserver may still take it when it wakes). Sent
        # again, it is the same message: Bob has it once.
        pid = int((homeserver["folder"] / "homeserver.pid").read_text().strip())
        os.kill(pid, signal.SIGSTOP)
        try:
            write(alice_browser, "Slowly")
            status = wait(alice_browser, lambda b: line_status(b, "Slowly") if line_status(b, "Slowly")[1] else None, timeout=30)
            assert status[0].startswith("Not sent"), status
        finally:
            os.kill(pid, signal.SIGCONT)
        # Awake: Alice sends it again (unless her page did, told that the homeserver answers again).
        def sent_again(browser):
            for retry in browser.find_elements(By.CSS_SELECTOR, "#timeline li.failed .status button"):
                retry.click()
            return is_sent(browser, "Slowly")
        wait(alice_browser, sent_again, timeout=90)
        bob_browser.refresh()
        wait(bob_browser, lambda b: timeline(b)[-1:] == ["Slowly"], timeout=30)
        assert timeline(bob_browser).count("Slowly") == 1, timeline(bob_browser)
        alice_browser.refresh()
        wait(alice_browser, lambda b: timeline(b)[-1:] == ["Slowly"], timeout=30)
        assert timeline(alice_browser).count("Slowly") == 1 and timeline(alice_browser).count("While it was down") == 1
    finally:
        alice_browser.quit()
        bob_browser.quit()
