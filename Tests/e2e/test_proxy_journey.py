"""Browsing the demo apps through Gatehouse in a real browser: the shared server-side cookie jar, the bar's banner,
the allowlist, and a jar that does not outlive the session."""

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from test_browser_journey import in_bar, open_development_sign_in, path_of, sign_out, wait


def sign_in_as_alice(browser, gateway, deep_link):
    open_development_sign_in(browser, gateway, deep_link)
    browser.find_element(By.ID, "account-alice").click()
    browser.find_element(By.ID, "password").send_keys(gateway.dev_password)
    browser.find_element(By.ID, "dev-continue").click()
    wait(browser, lambda b: path_of(b) == deep_link)


def in_tab(browser, script):
    """Runs `script` on the document of the tab the test opened (`window.tab`), from this window: the driver waits
    for a navigation of the window it drives before every command, so it could never see a page that is waiting
    for a slow app; the opener, on the same origin, can."""
    return browser.execute_script("const d = window.tab.document; " + script)


def test_a_slow_app_shows_loading_then_offers_to_wait_or_go_back(browser, dev_gateway, tmp_path):
    """The demo's Slow App answers after 8 s: "Loading Slow App" at once, the slow notice after 5 s, "Keep waiting",
    then the app, with the loading page gone from the history; "Back to Web Apps" gives up."""
    sign_in_as_alice(browser, dev_gateway, "/")
    tile = browser.find_element(By.CSS_SELECTOR, 'a[data-app="slow"]')
    browser.execute_script("window.tab = window.open(arguments[0].href)", tile)
    title = wait(browser, lambda b: in_tab(b, "const t = d.getElementById('loading-title'); return t && t.textContent"))
    assert title == "Loading Slow App"
    assert in_tab(browser, "return d.querySelector('.loading-page [role=status]').textContent") == "Loading web application"
    assert in_tab(browser, "return d.getElementById('slow-notice').hidden")
    wait(browser, lambda b: not in_tab(b, "return d.getElementById('slow-notice').hidden"), timeout=8)
    notice = in_tab(browser, "return d.getElementById('slow-notice').innerText")
    assert "Slow App is taking longer than usual to answer" in notice and "Keep waiting" in notice
    in_tab(browser, "d.getElementById('keep-waiting').click()")
    assert in_tab(browser, "return d.getElementById('slow-notice').hidden")
    # The app's page is in a browsing context group of its own (the gateway's pages are `Cross-Origin-Opener-Policy:
    # same-origin`, apps' never): from here on, Web Apps has no reference to the tab, and the driver looks at it.
    portal = browser.current_window_handle
    browser.switch_to.window([handle for handle in browser.window_handles if handle != portal][0])
    wait(browser, lambda b: path_of(b) == "/apps/slow/", timeout=15)
    wait(browser, lambda b: b.execute_script("return document.readyState === 'complete' && document.getElementById('slow') !== null"))
    # The slow app, once it answered, has the bar like every other.
    assert browser.execute_script(
        "return document.getElementById('gatehouse-bar').shadowRoot.getElementById('switcher-button').textContent") == "SASlow App"
    # The loading page replaced itself: the tab's history holds the app alone.
    assert browser.execute_script("return history.length") == 1
    browser.close()
    browser.switch_to.window(portal)

    # Giving up: "Back to Web Apps" while the app is still slow.
    browser.execute_script("window.tab = window.open(arguments[0])", tile.get_attribute("href"))
    wait(browser, lambda b: in_tab(b, "const n = d.getElementById('slow-notice'); return n && !n.hidden"), timeout=10)
    in_tab(browser, "d.getElementById('back-to-apps').click()")
    wait(browser, lambda b: in_tab(b, "return d.readyState === 'complete' && d.getElementById('apps') !== null"))
    assert in_tab(browser, "return window.tab.location.pathname") == "/"
    browser.execute_script("window.tab.close()")


def visits(browser):
    return int(browser.find_element(By.ID, "visits").text)


def test_demo_apps_share_one_jar_that_survives_restarts_but_not_sign_out(browser, dev_gateway):
    sign_in_as_alice(browser, dev_gateway, "/")
    app_links = [a.get_attribute("data-app") for a in browser.find_elements(By.CSS_SELECTOR, "#apps a")]
    assert app_links == ["visits", "links", "gzip", "leave", "hosted", "slow", "styled", "fullscreen", "whoami"]  # the chat app waits for registration

    # The visit counter signs in with its own cookie, which lands in the server-side jar, not in the browser.
    browser.find_element(By.CSS_SELECTOR, 'a[data-app="visits"]').click()
    wait(browser, EC.presence_of_element_located((By.ID, "app-sign-in")))
    browser.find_element(By.ID, "name").send_keys("Alice in the app")
    browser.find_element(By.ID, "app-sign-in").click()
    wait(browser, EC.presence_of_element_located((By.ID, "visits")))
    assert browser.find_element(By.ID, "app-user").text == "Alice in the app"
    assert visits(browser) == 1
    # The gateway's own cookie only (the session): the app's stay in the jar.
    assert {c["name"] for c in browser.get_cookies()} <= {"gatehouse_session"}

    browser.refresh()
    wait(browser, lambda b: visits(b) == 2)

    # Another app, a rewritten root-relative link back: the same jar.
    browser.get(dev_gateway.url + "/apps/links/")
    browser.find_element(By.ID, "visits-link").click()
    wait(browser, lambda b: path_of(b) == "/apps/visits/")
    assert visits(browser) == 3

    # A form POST through a rewritten action.
    browser.get(dev_gateway.url + "/apps/links/")
    browser.find_element(By.ID, "send").click()
    wait(browser, lambda b: path_of(b) == "/apps/links/echo")
    assert browser.find_element(By.ID, "echo").text == "hello"

    # A gzip page gets the bar and its banner too.
    browser.get(dev_gateway.url + "/apps/gzip/")
    assert browser.find_element(By.ID, "gzip").is_displayed()
    assert in_bar(browser, "#gatehouse-banner").is_displayed()

    # Sessions and jars are in SQLite: a restart loses nothing.
    dev_gateway.restart()
    browser.get(dev_gateway.url + "/apps/visits/")
    wait(browser, lambda b: visits(b) == 4)

    # The banner is on the page, visible, reachable by keyboard, and leads to the upgrade entry.
    button = in_bar(browser, "#gatehouse-banner-button")
    assert button.is_displayed()
    assert button.text == "Add Features"
    # Its accessible name is its visible label (WCAG 2.5.3); the hint says what it starts.
    assert button.get_attribute("aria-label") is None and button.accessible_name.startswith("Add Features")
    assert browser.execute_script("arguments[0].focus(); return arguments[0].getRootNode().activeElement === arguments[0];", button)

    # A redirect to a host outside the allowlist is never followed.
    browser.get(dev_gateway.url + "/apps/leave/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "This link leads outside your organization's apps"
    assert "outside.example" in browser.find_element(By.TAG_NAME, "main").text
    assert "outside.example" not in browser.current_url
    # A link to a host outside the allowlist goes through the leaving page: the destination named, a way back.
    browser.get(dev_gateway.url + "/apps/links/")
    browser.find_element(By.ID, "outside-link").click()
    wait(browser, lambda b: path_of(b).startswith("/leaving?to="))
    assert browser.find_element(By.TAG_NAME, "h1").text == "You are leaving your organization's apps"
    assert "outside.example" in browser.find_element(By.ID, "leaving-text").text
    assert browser.find_element(By.ID, "leaving-continue").get_attribute("href") == "https://outside.example/news"
    browser.find_element(By.ID, "leaving-back").click()
    wait(browser, lambda b: path_of(b) == "/apps/links/")

    # Sign out and back in: the jar went with the old session.
    browser.get(dev_gateway.url + "/")
    sign_out(browser)
    wait(browser, lambda b: path_of(b) == "/signed-out")
    sign_in_as_alice(browser, dev_gateway, "/apps/visits/")
    assert browser.find_element(By.ID, "app-sign-in").is_displayed()


def test_banner_leads_to_the_upgrade_entry(browser, dev_gateway):
    sign_in_as_alice(browser, dev_gateway, "/apps/links/")
    in_bar(browser, "#gatehouse-banner-button").click()
    # The upgrade flow starts at its first step (its own journey is in test_upgrade_journey.py).
    wait(browser, lambda b: path_of(b) == "/upgrade/phone")
    assert "upgrade_banner_tapped" in dev_gateway.running.output()
    assert "upgrade_banner_shown" in dev_gateway.running.output()


def test_host_mounted_app_on_its_own_host(browser, dev_gateway):
    sign_in_as_alice(browser, dev_gateway, "/")
    app_host = f"http://hosted.apps.localhost:{dev_gateway.port}"
    browser.find_element(By.CSS_SELECTOR, 'a[data-app="hosted"]').click()
    # The handoff: app host → gateway → app host, landing on the app with a grant of its own.
    wait(browser, lambda b: b.current_url == app_host + "/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Links and Forms"
    assert in_bar(browser, "#gatehouse-banner").is_displayed()
    # The bar's links lead to the gateway's own host.
    assert in_bar(browser, "#home").get_attribute("href") == dev_gateway.url + "/"
    browser.find_element(By.ID, "about-link").click()
    wait(browser, lambda b: b.current_url == app_host + "/about")
    assert browser.find_element(By.ID, "about").text == "Reached through a rewritten link."
    # The gateway's session cookie never reached the app host; the app host's grant is its own.
    assert {c["name"] for c in browser.get_cookies()} == {"gatehouse_app"}
