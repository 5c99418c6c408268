"""The web apps with many apps, in a real browser at 1280 and 390 px, light and dark: type to filter (by name and
description, Enter opens the first match, Escape clears, the count announced), the recently used first, a grid of
icons on a phone; and the gateway's own files sent gzipped, by hashed names, cached for a year."""

import time

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from test_browser_journey import path_of, wait
from test_upgrade_journey import checker, sign_in, sign_out  # noqa: F401 (checker: a fixture)


def visible_apps(browser):
    return [tile.get_attribute("data-app") for tile in browser.find_elements(By.CSS_SELECTOR, ".apps .app") if tile.is_displayed()]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_many_apps_filtered_by_typing_recent_first_and_a_grid_on_phones(browser, dev_gateway, checker, scheme):
    gw = dev_gateway
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
    sign_in(browser, gw, "alice")
    browser.set_window_size(1280, 900)
    everything = visible_apps(browser)
    assert len(everything) >= 7 and "visits" in everything, everything
    assert browser.find_element(By.CSS_SELECTOR, '[data-app="visits"] .description').text == "Counts your visits with the app's own cookie"

    search = browser.find_element(By.ID, "app-filter")
    search.send_keys("COOKIE")  # a word of a description, in another case
    assert visible_apps(browser) == ["visits"]
    wait(browser, lambda b: b.find_element(By.ID, "app-filter-count").text == "1 app matches")
    search.send_keys(Keys.ESCAPE)
    assert visible_apps(browser) == everything and search.get_attribute("value") == ""
    search.send_keys("nothing like this")
    assert visible_apps(browser) == []
    no_match = browser.find_element(By.ID, "no-match")
    assert no_match.is_displayed() and "No app matches “nothing like this”" in no_match.text
    checker.page(None if scheme == "dark" else "portal-filter-none")
    search.clear()
    search.send_keys("links forms")  # every word, in any order
    assert visible_apps(browser) == ["links"]
    search.send_keys(Keys.ENTER)  # opens the first match
    wait(browser, lambda b: path_of(b).startswith("/apps/links/"))

    # Back on the web apps, the app just opened comes first, under its own heading; every app still once.
    browser.get(gw.url + "/")
    wait(browser, lambda b: b.find_elements(By.ID, "recent-apps"))
    recent = [tile.get_attribute("data-app") for tile in browser.find_elements(By.CSS_SELECTOR, "#recent-apps .app")]
    assert recent == ["links"], recent
    assert sorted(visible_apps(browser)) == sorted(everything)
    # Signing out clears the browser for the next person; the history is kept with the member, and is still there
    # after the next sign-in.
    sign_out(browser)
    sign_in(browser, gw, "alice")
    assert [tile.get_attribute("data-app") for tile in browser.find_elements(By.CSS_SELECTOR, "#recent-apps .app")] == ["links"]
    checker.page("portal-many" if scheme == "light" else "portal-many-dark")

    # On a phone: a grid of icons with their names (three or more to a row), tap targets of at least 44 px.
    browser.set_window_size(390, 844)
    tiles = [tile for tile in browser.find_elements(By.CSS_SELECTOR, "#apps .app")]
    tops = [tile.rect["y"] for tile in tiles]
    assert tops[0] == tops[1] == tops[2], [tile.rect for tile in tiles[:4]]
    assert all(tile.rect["width"] >= 44 and tile.rect["height"] >= 44 for tile in tiles)
    browser.execute_script("document.getElementById('app-filter').scrollIntoView()")
    checker.page("portal-many-390" if scheme == "light" else None)
    search = browser.find_element(By.ID, "app-filter")
    search.send_keys("slow")
    assert visible_apps(browser) == ["slow"]
    # The recent group hides when nothing in it matches.
    assert not browser.find_element(By.ID, "recent-group").is_displayed()
    checker.page()
    browser.set_window_size(1280, 900)


def test_the_gateways_files_go_gzipped_by_hashed_name(dev_gateway):
    page = requests.get(dev_gateway.url + "/signin", timeout=10).text
    style = page.split('<link rel="stylesheet" href="', 1)[1].split('"', 1)[0]
    assert style.startswith("/static/gatehouse.") and style.endswith(".css") and style != "/static/gatehouse.css"
    reply = requests.get(dev_gateway.url + style, headers={"Accept-Encoding": "gzip"}, timeout=10, stream=True)
    wire = reply.raw.read(decode_content=False)
    assert reply.headers["Content-Encoding"] == "gzip" and reply.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    plain = requests.get(dev_gateway.url + style, headers={"Accept-Encoding": "identity"}, timeout=10)
    assert len(wire) * 3 < len(plain.content) and "prefers-color-scheme" in plain.text
    again = requests.get(dev_gateway.url + "/static/gatehouse.css", headers={"If-None-Match": reply.headers["ETag"]}, timeout=10)
    assert again.status_code == 304
