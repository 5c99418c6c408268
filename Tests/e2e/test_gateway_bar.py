"""The gateway bar around every proxied page, in a real browser at 1280 and 390 px: on every demo app, keyboard
first with a skip link, collapsing remembered for the session, the banner dismissed, an app's hostile CSS that
changes nothing in the bar, an app with the bar off, and the failure toast for every member; axe on every page, in
light and dark mode."""

import time

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


def whole_name_shown(browser):
    """Whether the switcher shows the current app's name whole: nothing of it cut off sideways or below."""
    return browser.execute_script(
        "const c = document.getElementById('gatehouse-bar').shadowRoot.querySelector('.current');"
        "return c.textContent.length > 0 && c.scrollWidth <= c.clientWidth + 1 && c.scrollHeight <= c.clientHeight + 1")


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
            # The banner, in the bar, on one line (its button's 44 px of taps reach 2 px past the bar on each side);
            # the switcher names this app.
            assert shown(browser, "#gatehouse-banner-button") and rect(browser, "#gatehouse-banner")["height"] <= 44
            assert in_bar(browser, "#switcher-button").get_attribute("aria-label").startswith("Switch app: ")
            current = bar(browser).find_elements(By.CSS_SELECTOR, "#switcher-menu a[aria-current=page]")
            assert [a.get_attribute("data-app") for a in current] == [slug]
            # The app's whole name beside the banner, on a phone too (on two lines there if need be), never cut.
            assert whole_name_shown(browser), (slug, width)
            # Chats, Calls and Stories in the bar on wide screens, in the switcher's menu on narrow ones; locked.
            assert shown(browser, "#bar-chats") == (width == 1280)
            assert bar_has(browser, "#bar-chats.locked[aria-describedby=locked-note]") and bar_has(browser, "#locked-note")
            # In dark mode the bar stays light over these apps, which stay light themselves.
            row_background = browser.execute_script(
                "return getComputedStyle(document.getElementById('gatehouse-bar').shadowRoot.getElementById('row')).backgroundColor")
            assert row_background == "rgb(255, 255, 255)", (slug, scheme, row_background)
            name = {"links": "bar", "styled": "bar-styled"}.get(slug) if scheme == "light" else ("bar" if slug == "links" else None)
            checker.page(name and f"{name}{suffix}{'-dark' if scheme == 'dark' else ''}")
        # The switcher: every app of the member's, each through its loading page.
        open_app(browser, gw, "links")
        in_bar(browser, "#switcher-button").click()
        wait(browser, lambda b: shown(b, "#switcher-menu"))
        apps = [a.get_attribute("data-app") for a in bar(browser).find_elements(By.CSS_SELECTOR, "#switcher-menu a[data-app]")]
        assert apps == ["visits", "links", "gzip", "leave", "hosted", "slow", "styled", "fullscreen", "whoami"]
        assert shown(browser, "#switcher-menu .narrow") == (width == 390)
        checker.page(f"bar-switcher{suffix}" if scheme == "light" else None)
        in_bar(browser, "#switcher-menu a[data-app=visits]").click()
        wait(browser, lambda b: path_of(b) == "/apps/visits/")
    browser.set_window_size(1280, 900)
    # A host-mounted app has the bar too, its links to the gateway's own host.
    browser.get(gw.url + "/open/hosted")
    wait(browser, lambda b: b.current_url.startswith(f"http://hosted.apps.localhost:{gw.port}/"))
    assert shown(browser, ".row") and in_bar(browser, "#home").get_attribute("href") == gw.url + "/"


PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True}


def on_phone(browser, phone=True):
    """A phone's screen (390 × 844 at 3×, touch, viewports as a phone handles them), or the desktop window again."""
    if phone:
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
        browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
    else:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})


def at_device_scale(browser):
    """The bar as the member sees it, in px at the device's scale: the page's scale, the row's box, the room kept
    above the page, the page's first content, and every control shown with its size and whether a tap 21.5 px left,
    right, below and above its centre (where that is on the screen) lands on it."""
    return browser.execute_script("""
        const root = document.getElementById('gatehouse-bar').shadowRoot, v = visualViewport, s = v.scale;
        const box = e => { const r = e.getBoundingClientRect(); return {top: (r.top - v.offsetTop) * s, left: (r.left - v.offsetLeft) * s,
                                                                         width: r.width * s, height: r.height * s}; };
        const shown = e => e.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true});
        const controls = [...root.querySelectorAll('a, summary, button')].filter(e => e.id !== 'skip' && shown(e) && !e.closest('.menu'));
        return {
            scale: s, row: box(root.getElementById('row')), reserved: parseFloat(getComputedStyle(document.documentElement).paddingTop) * s,
            main: box(document.querySelector('main')), pageTop: document.querySelector('main').getBoundingClientRect().top + scrollY,
            controls: controls.map(e => {
                const r = e.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2, d = 21.5 / s;
                const points = [[x - d, y], [x + d, y], [x, y + d]].concat(y - d > v.offsetTop ? [[x, y - d]] : []);
                const hits = points.map(([px, py]) => { const t = root.elementFromPoint(px, py); return !!t && (t === e || e.contains(t)); });
                return {control: e.id || e.textContent.trim(), ...box(e), hits};
            })};""")


def assert_bar_at_device_scale(geometry):
    row = geometry["row"]
    assert abs(row["top"]) < 0.5 and abs(row["left"]) < 0.5 and abs(row["height"] - 40) < 0.5 and abs(row["width"] - 390) < 1, geometry
    for control in geometry["controls"]:
        assert control["width"] >= 43.5 and control["height"] >= 43.5 and all(control["hits"]), control


def test_the_bar_keeps_its_size_on_a_phone_whatever_the_pages_viewport(browser, dev_gateway, checker):
    """At 390 × 844, on apps without `<meta name=viewport>` (laid out 980 px wide, shown at about 0.4×) and on one
    with it: the bar is 40 px high at the device's scale, its narrow layout on, every control a tap target of at least
    44 × 44 px; a pinch keeps it so and moves nothing on the page."""
    gw = dev_gateway

    def check(slug, viewport, screenshot):
        open_app(browser, gw, slug)
        geometry = at_device_scale(browser)
        assert (geometry["scale"] < 0.6) == (not viewport), geometry["scale"]
        assert_bar_at_device_scale(geometry)
        # The room above the page is the bar's 40 px at this scale, and the app starts below the bar.
        assert abs(geometry["reserved"] - 40) < 0.5 and geometry["main"]["top"] >= 39.5, geometry
        # The narrow layout: the sections are in the switcher's menu.
        assert not shown(browser, "#bar-chats") and shown(browser, "#switcher-button")
        checker.page(screenshot)

    sign_in(browser, gw, "alice", "/apps/links/")
    on_phone(browser)
    try:
        check("links", False, "bar-phone")
        check("visits", False, None)
        # The switcher's menu fits the screen, its entries tap targets too.
        open_app(browser, gw, "links")
        in_bar(browser, "#switcher-button").click()
        wait(browser, lambda b: shown(b, "#switcher-menu"))
        menu = browser.execute_script("""
            const root = document.getElementById('gatehouse-bar').shadowRoot, s = visualViewport.scale;
            const r = root.getElementById('switcher-menu').getBoundingClientRect();
            return {right: (r.right - visualViewport.offsetLeft) * s, heights: [...root.querySelectorAll('#switcher-menu a')]
                .filter(a => a.checkVisibility()).map(a => a.getBoundingClientRect().height * s)};""")
        assert menu["right"] <= 390 and min(menu["heights"]) >= 43.5, menu
        assert shown(browser, "#switcher-menu .narrow")
        checker.page("bar-phone-switcher")
        in_bar(browser, "#switcher-button").click()

        # Two pinches (emulated as the page sees one: two fingers down, the scale changing, the fingers up; headless
        # Chromium does not zoom from touches itself): the page keeps its place and its room above; the bar stays
        # 40 px at the top of what is shown, its taps whole, also once the fingers are gone.
        before = at_device_scale(browser)
        for zoom in (2.0, 3.5):
            fingers = [{"x": 180, "y": 400, "id": 1}, {"x": 220, "y": 400, "id": 2}]
            browser.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": fingers})
            browser.execute_cdp_cmd("Emulation.setPageScaleFactor", {"pageScaleFactor": zoom})
            wait(browser, lambda b: at_device_scale(b)["scale"] > before["scale"] * (zoom - 0.5))
            browser.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
            time.sleep(1.2)
            browser.execute_script("window.scrollBy(0, 1); window.scrollBy(0, -1)")  # a viewport event after the gesture
            wait(browser, lambda b: abs(at_device_scale(b)["row"]["top"]) < 0.5 and abs(at_device_scale(b)["row"]["height"] - 40) < 0.5)
            pinched = at_device_scale(browser)
            assert pinched["pageTop"] == before["pageTop"], (before["pageTop"], pinched["pageTop"])
            assert abs(pinched["reserved"] / pinched["scale"] - before["reserved"] / before["scale"]) < 0.5
            assert_bar_at_device_scale(pinched)
        browser.execute_cdp_cmd("Emulation.setPageScaleFactor", {"pageScaleFactor": 1})

        # The full-screen app's handle: a tap target at the device's scale too.
        open_app(browser, gw, "fullscreen")
        handle = browser.execute_script("""
            const r = document.getElementById('gatehouse-bar').shadowRoot.getElementById('handle').getBoundingClientRect(), s = visualViewport.scale;
            return {width: r.width * s, height: r.height * s, bottom: (visualViewport.offsetTop + visualViewport.height - r.bottom) * s};""")
        assert handle["width"] >= 43.5 and handle["height"] >= 43.5 and abs(handle["bottom"] - 12) < 1, handle

        # An app that declares a mobile viewport (a registered member's chat app): the same bar at scale 1.
        on_phone(browser, False)
        register_by_http(gw, "olive", "olive.phone")
        browser.delete_all_cookies()
        sign_in(browser, gw, "olive", "/apps/chat/")
        on_phone(browser)
        check("chat", True, "bar-phone-mobile-app")
    finally:
        on_phone(browser, False)


def test_signing_out_from_inside_an_app(browser, dev_gateway, checker):
    """The switcher's menu ends with Sign out: a page that says who is signed in, where staying goes back to the app's
    page and signing out ends the session (the app's page then asks to sign in)."""
    gw = dev_gateway
    sign_in(browser, gw, "alice", "/apps/links/")
    for stay in (True, False):
        open_app(browser, gw, "links")
        in_bar(browser, "#switcher-button").click()
        wait(browser, lambda b: shown(b, "#bar-sign-out"))
        in_bar(browser, "#bar-sign-out").click()
        wait(browser, lambda b: path_of(b).startswith("/signout"))
        assert browser.find_element(By.ID, "signout-member").text == "Alice Archer"
        assert browser.find_element(By.ID, "signout-email").text == "alice@example.org"
        if stay:
            checker.page("signout")
            browser.find_element(By.ID, "stay-signed-in").click()
            wait(browser, lambda b: path_of(b) == "/apps/links/")
        else:
            browser.find_element(By.ID, "sign-out").click()
            wait(browser, lambda b: path_of(b).startswith("/signin") or "signed-out" in b.current_url)
    browser.get(gw.url + "/apps/links/")
    wait(browser, lambda b: path_of(b).startswith("/signin"))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_apps_empty_error_page_keeps_the_way_on(browser, dev_gateway, checker, scheme):
    """`/apps/links/nope`: the demo app's own 404 has no body; the member gets the bar and a page that names the app,
    says what happened and offers the app's start, the web apps and whom to ask (axe-clean, light and dark, on a
    phone too)."""
    gw = dev_gateway
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
    sign_in(browser, gw, "alice", "/apps/links/")
    for phone in (False, True):
        on_phone(browser, phone)
        try:
            browser.get(gw.url + "/apps/links/nope")
            wait(browser, lambda b: b.find_elements(By.ID, "app-error-title"))
            assert browser.find_element(By.ID, "app-error-title").text == "Links and Forms has no page at this address"
            assert "404" in browser.find_element(By.ID, "app-error-text").text
            assert shown(browser, ".row") and shown(browser, "#switcher-button")
            # The gateway's own page follows the system's scheme, and the bar with it.
            row_background = browser.execute_script(
                "return getComputedStyle(document.getElementById('gatehouse-bar').shadowRoot.getElementById('row')).backgroundColor")
            assert row_background == ("rgb(27, 32, 39)" if scheme == "dark" else "rgb(255, 255, 255)"), row_background
            checker.page("app-error" if scheme == "light" and not phone else None)
            browser.find_element(By.ID, "app-error-start").click()
            wait(browser, lambda b: path_of(b) == "/apps/links/")
        finally:
            on_phone(browser, False)


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
        # On a phone, hiding the bar is in the switcher's menu (for the app's name to have the room).
        expected += ["gatehouse-banner-button", "gatehouse-banner-dismiss"] + (["collapse"] if width == 1280 else []) + ["about-link"]
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
    # Room below the page for the handle: scrolled to its end, the page's last line is clear of it.
    browser.execute_script("window.scrollTo(0, document.documentElement.scrollHeight)")
    last = browser.execute_script("return [...document.body.querySelectorAll('p, a, li, h1, h2')].pop().getBoundingClientRect().bottom")
    assert last <= rect(browser, ".handle")["top"], (last, rect(browser, ".handle"))
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
    assert browser.execute_script("return getComputedStyle(document.documentElement).paddingBottom") == "0px"
    open_app(browser, gw, "links")
    assert shown(browser, ".row")
    # On a phone the bar is hidden from the switcher's menu, and opened again with the focus on the switcher.
    browser.set_window_size(390, 900)
    open_app(browser, gw, "links")
    assert not shown(browser, "#collapse")
    in_bar(browser, "#switcher-button").click()
    wait(browser, lambda b: shown(b, "#collapse-menu"))
    in_bar(browser, "#collapse-menu").click()
    wait(browser, lambda b: shown(b, ".handle"))
    assert not shown(browser, ".row") and focused_in_bar(browser) == "handle"
    in_bar(browser, "#handle").click()
    wait(browser, lambda b: shown(b, ".row"))
    assert focused_in_bar(browser) == "switcher-button" and not shown(browser, "#switcher-menu")
    browser.set_window_size(1280, 900)


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
    """The Heavily Styled App restyles `*`, `div`, `button`, links and the root font size, all `!important`. The bar's
    own styles and boxes stay as on a plain app; its row spans the viewport it is given, which on the styled page may
    lose a scrollbar's width to the app's own overflow (with whatever fonts the machine has)."""
    gw = dev_gateway
    sign_in(browser, gw, "alice", "/apps/links/")
    fingerprint = """
        const root = document.getElementById('gatehouse-bar').shadowRoot;
        const host = document.getElementById('gatehouse-bar').getBoundingClientRect();
        const viewport = document.documentElement.clientWidth;
        return [host.top, host.height, ...['.row', '#home', '.mark', '#web-apps', '#bar-chats', '.banner-text strong',
                '#gatehouse-banner-button', '#gatehouse-banner-dismiss', '#collapse', '.mono'].map(selector => {
            const element = root.querySelector(selector), style = getComputedStyle(element), box = element.getBoundingClientRect();
            const width = selector === '.row' ? 'viewport' + (box.width - viewport) : box.width;
            return [selector, width, box.height, box.top, style.fontFamily, style.fontSize, style.color, style.backgroundColor,
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
        # The app fills the window and no more: the room the bar keeps does not make a full-height page scroll.
        assert browser.execute_script("const r = document.documentElement; return r.scrollHeight <= r.clientHeight")
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
