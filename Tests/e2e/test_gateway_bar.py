"""The gateway bar around every proxied page, in a real browser at 1280 and 390 px: on every demo app, keyboard
first with a skip link, collapsing remembered for the session, the banner dismissed, an app's hostile CSS that
changes nothing in the bar, an app with the bar off, and the failure toast for every member; axe on every page, in
light and dark mode."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import start_gateway
from test_browser_journey import bar, bar_has, in_bar, path_of, wait
from test_upgrade_journey import Checker, checker, keys, register_by_http, screenshots, sign_in  # noqa: F401 (checker: a fixture)

WIDTHS = [(1280, ""), (390, "-390")]
BAR_APPS = ["visits", "links", "gzip", "styled"]


def shown(browser, selector):
    """Whether an element of the bar is rendered, as the browser itself judges it (a closed `<details>` hides its
    content by `content-visibility`, which boxes alone do not show)."""
    return browser.execute_script(
        "const e = document.getElementById('gatehouse-bar').shadowRoot.querySelector(arguments[0]);"
        "return !!e && e.checkVisibility({contentVisibilityAuto: true, opacityProperty: true, visibilityProperty: true})", selector)


def rect(browser, selector):
    return browser.execute_script(
        "const r = document.getElementById('gatehouse-bar').shadowRoot.querySelector(arguments[0]).getBoundingClientRect();"
        "return {top: r.top, left: r.left, width: r.width, height: r.height}", selector)


def reserved_space(browser):
    """The room kept free above the page (the padding the bar's style gives the root element)."""
    return browser.execute_script("return getComputedStyle(document.documentElement).paddingTop")


def focused_in_bar(browser):
    return browser.execute_script(
        "const a = document.activeElement; return a && a.id === 'gatehouse-bar' ? a.shadowRoot.activeElement?.id || null : null")


def open_app(browser, gw, slug):
    browser.get(gw.url + f"/apps/{slug}/")
    wait(browser, lambda b: b.execute_script("return document.readyState") == "complete")
    bar(browser)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_bar_on_every_demo_app(browser, dev_gateway, checker, scheme):
    gw = dev_gateway
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
    sign_in(browser, gw, "alice")
    for width, suffix in WIDTHS:
        browser.set_window_size(width, 900)
        for slug in BAR_APPS:
            open_app(browser, gw, slug)
            # One line of at most 40 px at the top, with room kept for it: the app's content starts below it.
            assert shown(browser, ".row") and not shown(browser, ".handle")
            row = rect(browser, ".row")
            assert row["top"] == 0 and row["height"] <= 40 and row["width"] == browser.execute_script("return document.documentElement.clientWidth"), row
            assert reserved_space(browser) == "40px"
            assert browser.execute_script("return document.querySelector('main').getBoundingClientRect().top") >= 40
            # The banner, in the bar, on one line; the switcher names this app.
            assert shown(browser, "#gatehouse-banner-button") and rect(browser, "#gatehouse-banner")["height"] <= 40
            assert in_bar(browser, "#switcher-button").get_attribute("aria-label").startswith("Switch app: ")
            current = bar(browser).find_elements(By.CSS_SELECTOR, "#switcher-menu a[aria-current=page]")
            assert [a.get_attribute("data-app") for a in current] == [slug]
            # Chats, Calls and Stories in the bar on wide screens, in the switcher's menu on narrow ones; locked.
            assert shown(browser, "#bar-chats") == (width == 1280)
            assert bar_has(browser, "#bar-chats.locked[aria-describedby=locked-note]") and bar_has(browser, "#locked-note")
            name = {"links": "bar", "styled": "bar-styled"}.get(slug) if scheme == "light" else ("bar" if slug == "links" else None)
            checker.page(name and f"{name}{suffix}{'-dark' if scheme == 'dark' else ''}")
        # The switcher: every app of the member's, each through its loading page.
        open_app(browser, gw, "links")
        in_bar(browser, "#switcher-button").click()
        wait(browser, lambda b: shown(b, "#switcher-menu"))
        apps = [a.get_attribute("data-app") for a in bar(browser).find_elements(By.CSS_SELECTOR, "#switcher-menu a[data-app]")]
        assert apps == ["visits", "links", "gzip", "leave", "hosted", "slow", "styled", "fullscreen"]
        assert shown(browser, "#switcher-menu .narrow") == (width == 390)
        checker.page(f"bar-switcher{suffix}" if scheme == "light" else None)
        in_bar(browser, "#switcher-menu a[data-app=visits]").click()
        wait(browser, lambda b: path_of(b) == "/apps/visits/")
    browser.set_window_size(1280, 900)
    # A host-mounted app has the bar too, its links to the gateway's own host.
    browser.get(gw.url + "/open/hosted")
    wait(browser, lambda b: b.current_url.startswith(f"http://hosted.apps.localhost:{gw.port}/"))
    assert shown(browser, ".row") and in_bar(browser, "#home").get_attribute("href") == gw.url + "/"


def test_keyboard_reaches_the_bar_first_and_skips_to_the_app(browser, dev_gateway):
    gw = dev_gateway
    sign_in(browser, gw, "alice", "/apps/links/")
    for width, _ in WIDTHS:
        browser.set_window_size(width, 900)
        open_app(browser, gw, "links")
        order = []
        for _ in range(12):
            keys(browser, Keys.TAB)
            order.append(focused_in_bar(browser) or browser.switch_to.active_element.get_attribute("id"))
        expected = ["skip", "home"] + (["web-apps"] if width == 1280 else []) + ["switcher-button"]
        expected += ["bar-chats", "bar-calls", "bar-stories"] if width == 1280 else []
        expected += ["gatehouse-banner-button", "gatehouse-banner-dismiss", "collapse", "about-link"]
        assert order[: len(expected)] == expected, order
        # The skip link shows when focused and moves focus to the app's main content.
        open_app(browser, gw, "links")
        keys(browser, Keys.TAB)
        assert focused_in_bar(browser) == "skip" and rect(browser, "#skip")["left"] >= 0
        keys(browser, Keys.ENTER)
        assert browser.execute_script("return document.activeElement.tagName") == "MAIN"
        assert path_of(browser) == "/apps/links/"  # no fragment for the app's router to trip over
        # The switcher opens with Enter and closes with Escape, focus back on its button.
        open_app(browser, gw, "links")
        browser.execute_script("document.getElementById('gatehouse-bar').shadowRoot.getElementById('switcher-button').focus()")
        keys(browser, Keys.ENTER)
        wait(browser, lambda b: shown(b, "#switcher-menu"))
        keys(browser, Keys.ESCAPE)
        assert not shown(browser, "#switcher-menu")
        assert focused_in_bar(browser) == "switcher-button"
    browser.set_window_size(1280, 900)


def test_collapsing_is_remembered_for_the_session(browser, dev_gateway, checker):
    gw = dev_gateway
    sign_in(browser, gw, "alice", "/apps/links/")
    in_bar(browser, "#collapse").click()
    wait(browser, lambda b: shown(b, ".handle"))
    assert not shown(browser, ".row") and focused_in_bar(browser) == "handle"
    assert reserved_space(browser) == "0px"
    assert rect(browser, ".handle")["height"] <= 44
    checker.page("bar-collapsed")
    # Another page, another app, another tab: still folded, from the first paint (the gateway knows).
    for slug in ("visits", "styled"):
        open_app(browser, gw, slug)
        assert shown(browser, ".handle") and not shown(browser, ".row") and reserved_space(browser) == "0px"
    browser.switch_to.new_window("tab")
    open_app(browser, gw, "gzip")
    assert shown(browser, ".handle")
    in_bar(browser, "#handle").click()
    wait(browser, lambda b: shown(b, ".row"))
    assert reserved_space(browser) == "40px" and focused_in_bar(browser) == "collapse"
    open_app(browser, gw, "links")
    assert shown(browser, ".row")


def test_dismissing_the_banner_leaves_a_small_add_features(browser, dev_gateway, checker):
    gw = dev_gateway
    for width, suffix in WIDTHS:
        browser.set_window_size(width, 900)
        if width == 1280:
            sign_in(browser, gw, "alice", "/apps/links/")
        else:
            sign_in(browser, gw, "bob", "/apps/links/")
        in_bar(browser, "#gatehouse-banner-dismiss").click()
        wait(browser, lambda b: not shown(b, "#gatehouse-banner"))
        assert shown(browser, "#gatehouse-add-features") and focused_in_bar(browser) == "gatehouse-add-features"
        checker.page(f"bar-dismissed{suffix}")
        open_app(browser, gw, "visits")
        assert not shown(browser, "#gatehouse-banner") and shown(browser, "#gatehouse-add-features")
        # The small entry is the banner's action still.
        in_bar(browser, "#gatehouse-add-features").click()
        wait(browser, lambda b: path_of(b) == "/upgrade/phone")
        browser.delete_all_cookies()
    assert gw.metrics()["gatehouse_banner_dismissed_total"] == 2
    assert "upgrade_banner_dismissed" in gw.running.output()
    # A new session brings the banner back.
    browser.set_window_size(1280, 900)
    sign_in(browser, gw, "alice", "/apps/links/")
    assert shown(browser, "#gatehouse-banner") and not shown(browser, "#gatehouse-add-features")


def test_an_apps_own_css_changes_nothing_in_the_bar(browser, dev_gateway):
    """The Heavily Styled App restyles `*`, `div`, `button`, links and the root font size, all `!important`."""
    gw = dev_gateway
    sign_in(browser, gw, "alice", "/apps/links/")
    fingerprint = """
        const root = document.getElementById('gatehouse-bar').shadowRoot;
        const host = document.getElementById('gatehouse-bar').getBoundingClientRect();
        return [host.top, host.height, ...['.row', '#home', '.mark', '#web-apps', '#bar-chats', '.banner-text strong',
                '#gatehouse-banner-button', '#gatehouse-banner-dismiss', '#collapse', '.mono'].map(selector => {
            const element = root.querySelector(selector), style = getComputedStyle(element), box = element.getBoundingClientRect();
            return [selector, box.width, box.height, box.top, style.fontFamily, style.fontSize, style.color, style.backgroundColor,
                    style.letterSpacing, style.lineHeight, style.borderTopWidth, style.paddingTop, style.marginTop].join('|');
        })];"""
    for width, _ in WIDTHS:
        browser.set_window_size(width, 900)
        open_app(browser, gw, "links")
        plain = browser.execute_script(fingerprint)
        open_app(browser, gw, "styled")
        assert browser.execute_script("return getComputedStyle(document.querySelector('main')).fontFamily").startswith("Georgia")
        assert browser.execute_script(fingerprint) == plain
    browser.set_window_size(1280, 900)


def test_the_bar_off_for_one_app_leaves_a_handle(browser, dev_gateway, checker):
    gw = dev_gateway
    sign_in(browser, gw, "alice", "/apps/fullscreen/")
    for width, suffix in WIDTHS:
        browser.set_window_size(width, 900)
        open_app(browser, gw, "fullscreen")
        assert shown(browser, ".handle") and not shown(browser, ".row") and reserved_space(browser) == "0px"
        assert browser.execute_script("return document.querySelector('main').getBoundingClientRect().top") == 0
        checker.page(f"bar-off{suffix}")
        # Opened, it lies over the app for this page only.
        in_bar(browser, "#handle").click()
        wait(browser, lambda b: shown(b, ".row"))
        assert reserved_space(browser) == "0px"
        checker.page(f"bar-off-open{suffix}" if width == 1280 else None)
        open_app(browser, gw, "fullscreen")
        assert shown(browser, ".handle")
        # Other apps keep their bar.
        open_app(browser, gw, "links")
        assert shown(browser, ".row")
    browser.set_window_size(1280, 900)


def test_every_member_learns_that_an_app_failed_to_load(browser, tmp_path):
    """A registered member (no banner) on an app whose request times out: the toast in the bar; a page that
    times out: the error page with the same toast."""
    gw = start_gateway(tmp_path, "dev", extra={"proxy": {"read_timeout_seconds": 2}})
    checker = Checker(browser, gw, screenshots(tmp_path))
    try:
        register_by_http(gw, "olive", "olive.bar")
        sign_in(browser, gw, "olive", "/apps/links/")
        assert not bar_has(browser, "#gatehouse-banner") and not bar_has(browser, ".locked")
        browser.execute_script("fetch('/apps/slow/')")
        wait(browser, lambda b: bar_has(b, "#toasts .toast"), timeout=10)
        toast = in_bar(browser, "#toasts .toast")
        assert toast.find_element(By.CSS_SELECTOR, ".toast-message").text == "Failed to load web application"
        assert in_bar(browser, "#toasts").get_attribute("role") == "status"
        checker.page("bar-app-failed")
        toast.find_element(By.CSS_SELECTOR, ".toast-close").click()
        assert not bar_has(browser, "#toasts .toast")
        browser.get(gw.url + "/apps/slow/")
        assert browser.find_element(By.TAG_NAME, "h1").text == "The app is slow to answer"
        toast = wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#toasts .toast"))[0]
        assert toast.find_element(By.CLASS_NAME, "toast-message").text == "Failed to load web application"
        checker.page()
    finally:
        gw.running.stop()
