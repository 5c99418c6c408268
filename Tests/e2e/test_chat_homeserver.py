"""The upgrade with a real Synapse homeserver behind it (from PyPI, started by scripts/synapse), in a real browser:
the account made on the homeserver before the member is told anything, the demo chat app told its Matrix ID, the
account page's changes reaching the homeserver, in English, German and Arabic at 390 px, axe clean."""

import os
import subprocess
import uuid

import pytest
import requests
from selenium.webdriver.common.by import By

from conftest import ROOT, start_gateway
from test_browser_journey import bar_has, path_of, wait
from test_upgrade_journey import Checker, code_to_profile, error_text, screenshots, sign_in, submit

SERVER_NAME = "chat.test"
SYNAPSE = str(ROOT / "scripts" / "synapse")


def started_homeserver(folder, oidc_issuer=None):
    """A homeserver in `folder` (scripts/synapse), signing members in through an OIDC provider entry `oidc` when
    `oidc_issuer` is given, else with no sign-in of its own for browsers (as docs/operations.md recommends for the
    gateway's own chat): its URL, admin token and the files of the token and the JWT login's secret. Stop it with
    `stop_homeserver`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_OIDC")}
    if oidc_issuer:
        env["SYNAPSE_OIDC_ISSUER"] = oidc_issuer
    started = subprocess.run(["bash", SYNAPSE, "start", str(folder), "", SERVER_NAME], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stderr[-3000:]
    return {"url": started.stdout.strip().splitlines()[-1], "folder": folder, "token": (folder / "admin_token").read_text().strip(),
            "token_file": str(folder / "admin_token"), "jwt_secret_file": str(folder / "jwt_secret")}


def chat_config(homeserver, **extra):
    """The gateway's `chat` section for the gateway's own chat on `homeserver` (its admin and its JWT login)."""
    return {
        "backend": "synapse", "homeserver_url": homeserver["url"], "server_name": SERVER_NAME,
        "admin_token_file": homeserver["token_file"], "jwt_secret_file": homeserver["jwt_secret_file"], **extra,
    }


def stop_homeserver(homeserver):
    subprocess.run(["bash", SYNAPSE, "stop", str(homeserver["folder"])], check=False)


@pytest.fixture(scope="module")
def homeserver(tmp_path_factory):
    """One homeserver for the module, signing members in through an OIDC provider entry `oidc`."""
    started = started_homeserver(tmp_path_factory.mktemp("synapse") / "homeserver", "https://idp.example.org/realms/heritage")
    yield started
    stop_homeserver(started)


def admin(homeserver, method, path, body=None):
    answer = requests.request(
        method, homeserver["url"] + path, json=body, headers={"Authorization": f"Bearer {homeserver['token']}"}, timeout=30
    )
    return answer.status_code, answer.json()


@pytest.mark.parametrize("language", ["en", "de", "ar"])
def test_the_upgrade_makes_a_chat_account_the_member_can_change(browser, tmp_path, homeserver, language):
    # Its own provider id per run: the development members' subjects are fixed, the homeserver is shared.
    provider = "oidc-" + uuid.uuid4().hex[:8]
    chat = {
        "backend": "synapse", "homeserver_url": homeserver["url"], "server_name": SERVER_NAME,
        "admin_token_file": homeserver["token_file"], "auth_provider": provider,
    }
    gw = start_gateway(tmp_path, "dev", extra={"chat": chat})
    try:
        checker = Checker(browser, gw, screenshots(tmp_path))
        browser.set_window_size(390, 900)
        sign_in(browser, gw, "bob")
        choose_language(browser, gw, language)
        # The sections at 320 px: all four inside the screen, none clipped or scrolled away.
        browser.set_window_size(320, 800)
        browser.get(gw.url + "/")
        width = browser.execute_script("return document.documentElement.clientWidth")
        for tab in browser.find_elements(By.CSS_SELECTOR, ".tabs a"):
            box = tab.rect
            assert tab.is_displayed() and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (tab.text, box, width)
        checker.page(f"tabs-320-{language}")
        browser.set_window_size(390, 900)

        # The way out: Cancel lands back on Chats, where the upgrade was started, and says so.
        browser.get(gw.url + "/chats")
        browser.find_element(By.ID, "add-features").click()
        wait(browser, lambda b: path_of(b) == "/upgrade/phone")
        browser.find_element(By.ID, "cancel").click()
        wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#toasts .toast"))
        assert path_of(browser) == "/chats"
        checker.page()

        username = "m" + uuid.uuid4().hex[:10]
        browser.get(gw.url + "/upgrade?from=portal")
        wait(browser, lambda b: path_of(b) == "/upgrade/phone")
        submit(browser, "phone", "+49 30 1234567", "send-code")
        wait(browser, lambda b: path_of(b) == "/upgrade/code")
        # The number as its country writes it, one piece in any direction.
        assert "+49 301234567" in browser.find_element(By.ID, "code-intro").text
        # The code's remaining time counts down.
        shown = browser.find_element(By.ID, "code-expiry").text
        wait(browser, lambda b: b.find_element(By.ID, "code-expiry").text != shown, timeout=3)
        checker.page(f"chat-code-{language}")
        code_to_profile(browser, gw, username)
        # Another tab on the web apps, still at `sso`: it is told when the upgrade ends here.
        first = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(gw.url + "/")
        other = browser.current_window_handle
        # And one on an app host, another origin: it asks when it comes back into view.
        browser.switch_to.new_window("tab")
        browser.get(gw.url + "/open/hosted")
        wait(browser, lambda b: b.current_url.startswith(f"http://hosted.apps.localhost:{gw.port}/") and bar_has(b, "#bar"))
        hosted = browser.current_window_handle
        browser.switch_to.window(first)
        browser.find_element(By.ID, "discoverable-nobody").click()
        submit(browser, "display-name", "Bob B.", "finish")

        # Done: the account exists on the homeserver, linked to the member's subject, and the page names it.
        wait(browser, lambda b: path_of(b).startswith("/upgrade/done"))
        browser.switch_to.window(other)
        told = wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#toasts .toast"))[0]
        assert told.find_element(By.CLASS_NAME, "toast-action").get_attribute("href") == gw.url + "/"
        browser.close()
        browser.switch_to.window(hosted)
        browser.execute_script("document.dispatchEvent(new Event('visibilitychange'))")
        wait(browser, lambda b: bar_has(b, "#toasts .toast"))
        browser.close()
        browser.switch_to.window(first)
        matrix_id = f"@{username}:{SERVER_NAME}"
        assert matrix_id in browser.find_element(By.ID, "done-chat-account").text
        checker.page(f"chat-done-{language}")
        status, user = admin(homeserver, "GET", f"/_synapse/admin/v2/users/{matrix_id}")
        assert status == 200 and user["displayname"] == "Bob B."
        assert [t["address"] for t in user["threepids"]] == ["49301234567"]
        assert [e["auth_provider"] for e in user["external_ids"]] == [provider]

        # The demo chat app is told who the member is there.
        browser.get(gw.url + "/apps/chat/")
        wait(browser, lambda b: matrix_id in b.find_element(By.ID, "chat-account").text)

        # The account page: a new display name, confirmed with the PIN, reaches the homeserver.
        browser.get(gw.url + "/account")
        assert matrix_id in browser.find_element(By.ID, "account-chat-id").text
        checker.every_width_and_scheme(f"chat-account-{language}")
        browser.find_element(By.ID, "pin").send_keys("1111")
        submit(browser, "display-name", "Bob Builder", "save-profile")
        assert browser.find_element(By.ID, "pin").get_attribute("aria-invalid") == "true"
        error_text(browser)
        checker.page()
        browser.find_element(By.ID, "pin").send_keys("2580")
        submit(browser, "display-name", "Bob Builder", "save-profile")
        wait(browser, lambda b: b.find_element(By.ID, "account-status").is_displayed())
        assert admin(homeserver, "GET", f"/_synapse/admin/v2/users/{matrix_id}")[1]["displayname"] == "Bob Builder"
    finally:
        gw.running.stop()


def choose_language(browser, gw, language):
    """The member's language, as the account menu's form sets it."""
    if language == "en":
        return
    browser.get(gw.url + "/")
    browser.find_element(By.ID, "member-menu-button").click()
    wait(browser, lambda b: b.find_element(By.ID, f"language-{language}").is_displayed())
    browser.find_element(By.ID, f"language-{language}").click()
    wait(browser, lambda b: b.find_element(By.TAG_NAME, "html").get_attribute("lang") == language)
