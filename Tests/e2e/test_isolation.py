"""The gateway's own pages out of reach of an app's scripts, in headless Chromium: a script on a path-mounted app's page
(the gateway's origin) tries `fetch`, `XMLHttpRequest`, an iframe, `window.open` and a form post against every gateway
page and JSON endpoint, with the member signed in, and gets none of them; the member's own navigation still works. The
scripts use a fresh realm (an `about:blank` frame), as an attacker would, so that the app's URL shim does not move
their requests under the app's mount: every answer is checked to come from the address asked for."""

import json

from selenium.webdriver.common.by import By

from test_browser_journey import path_of, wait
from test_upgrade_journey import sign_in

# Gateway pages and answers a member's browser can reach, and what a script would want from them.
GATEWAY_ADDRESSES = [
    "/", "/account/sessions", "/upgrade", "/upgrade/phone", "/upgrade/username/check?username=somebody", "/operator",
    "/operator/funnel", "/signout", "/signin", "/leaving?to=https%3A%2F%2Fexample.org%2F", "/dev/inbox", "/chats",
]

CLEAN_REALM = """
    const frame = document.createElement('iframe');
    frame.style.display = 'none';
    document.body.appendChild(frame);
    const realm = frame.contentWindow;
"""


def csrf_token(browser, gw):
    """The session's CSRF token, as the member's own navigation to a gateway page (Web Apps) shows it."""
    browser.get(gw.url + "/")
    wait(browser, lambda b: path_of(b) == "/")
    token = browser.find_element(By.CSS_SELECTOR, "input[name=csrf]").get_attribute("value")
    assert len(token) >= 16
    return token


def on_app_page(browser, gw):
    browser.get(gw.url + "/apps/links/")
    wait(browser, lambda b: path_of(b) == "/apps/links/" and b.execute_script("return document.readyState") == "complete")


def test_an_apps_script_reads_no_gateway_page_token_or_answer(browser, dev_gateway):
    gw = dev_gateway
    sign_in(browser, gw, "alice", "/apps/links/")
    token = csrf_token(browser, gw)
    on_app_page(browser, gw)

    answers = browser.execute_async_script(CLEAN_REALM + """
        const done = arguments[arguments.length - 1];
        const paths = arguments[0];
        (async () => {
            const found = {};
            for (const path of paths) {
                const url = location.origin + path;
                try {
                    const response = await realm.fetch(url, {credentials: 'include'});
                    found['fetch ' + path] = {status: response.status, url: response.url, body: await response.text()};
                } catch (error) { found['fetch ' + path] = {error: String(error)}; }
                found['xhr ' + path] = await new Promise(resolve => {
                    const request = new realm.XMLHttpRequest();
                    request.open('GET', url);
                    request.withCredentials = true;
                    request.onload = () => resolve({status: request.status, url: request.responseURL, body: request.responseText});
                    request.onerror = () => resolve({error: 'network'});
                    request.send();
                });
            }
            done(found);
        })();
    """, GATEWAY_ADDRESSES)
    assert len(answers) == 2 * len(GATEWAY_ADDRESSES)
    for name, answer in answers.items():
        path = name.split(" ", 1)[1]
        assert answer.get("url") == gw.url + path, f"{name} did not reach the gateway's address: {answer}"
        assert answer["status"] == 403, f"{name} answered {answer['status']}"
        assert token not in answer["body"] and "name=\"csrf\"" not in answer["body"], f"{name} gave a CSRF token away"
        # The refusal says why, as a page (not the gateway page asked for).
        assert "Alice" not in answer["body"], f"{name} showed the member's page"

    # The bar's own endpoint takes the member's bar choices and answers nothing.
    frame_answer = browser.execute_async_script(CLEAN_REALM + """
        const done = arguments[arguments.length - 1];
        realm.fetch(location.origin + '/__gatehouse/frame', {method: 'POST', credentials: 'include',
            headers: {'Content-Type': 'application/x-www-form-urlencoded', 'X-Gatehouse-Frame': '1'}, body: 'bar=expanded'})
          .then(async r => done({status: r.status, body: await r.text()}), e => done({error: String(e)}));
    """)
    assert frame_answer == {"status": 204, "body": ""}


def test_an_apps_frame_popup_and_form_get_nothing_either(browser, dev_gateway):
    gw = dev_gateway
    sign_in(browser, gw, "alice", "/apps/links/")
    token = csrf_token(browser, gw)
    language_before = browser.find_element(By.TAG_NAME, "html").get_attribute("lang")
    on_app_page(browser, gw)

    # An iframe of a gateway page: refused, and nothing of it readable.
    framed = browser.execute_async_script(CLEAN_REALM + """
        const done = arguments[arguments.length - 1];
        const target = realm.document.createElement('iframe');
        target.src = location.origin + '/account/sessions';
        target.onload = () => {
            let text = null;
            try { text = target.contentDocument ? target.contentDocument.documentElement.outerHTML : null; } catch (error) { text = 'blocked'; }
            done(text);
        };
        document.body.appendChild(target);
        setTimeout(() => done('no load'), 10000);
    """)
    assert framed is None or token not in framed, "a framed gateway page showed its CSRF token"

    # A window opened on a gateway page: it opens (the member could read it), but the app's script has no way in.
    browser.execute_script(CLEAN_REALM + """
        const button = document.createElement('button');
        button.id = 'evil-open';
        button.textContent = 'open';
        button.style = 'position:fixed;top:200px;left:10px;z-index:2147483647';
        button.onclick = () => { window.evilWindow = realm.open(location.origin + '/', '_blank'); };
        document.body.appendChild(button);
    """)
    opener = browser.current_window_handle
    browser.find_element(By.ID, "evil-open").click()
    wait(browser, lambda b: len(b.window_handles) == 2)
    popup = [handle for handle in browser.window_handles if handle != opener][0]
    browser.switch_to.window(popup)
    wait(browser, lambda b: path_of(b) == "/")
    assert browser.find_element(By.CSS_SELECTOR, "input[name=csrf]").get_attribute("value") == token  # it is the real page
    browser.switch_to.window(opener)
    seen = browser.execute_script("""
        const w = window.evilWindow;
        if (!w) { return 'no handle'; }
        try { return w.document.documentElement.outerHTML; } catch (error) { return 'blocked: ' + error.name; }
    """)
    assert token not in seen, "the opener read the gateway page it opened"
    assert seen == "no handle" or seen.startswith("blocked") or browser.execute_script("return window.evilWindow.closed"), seen
    browser.switch_to.window(popup)
    browser.close()
    browser.switch_to.window(opener)

    # A form posted from the app's page, even with the right token (which no app could read): refused.
    browser.execute_script(CLEAN_REALM + """
        const form = document.createElement('form');
        form.method = 'post';
        // The page's own setter would be the URL shim's: the clean realm's sets the address as written.
        Object.getOwnPropertyDescriptor(realm.HTMLFormElement.prototype, 'action').set.call(form, location.origin + '/account/language');
        for (const [name, value] of [['csrf', arguments[0]], ['language', 'de'], ['return_to', '/']]) {
            const input = document.createElement('input');
            input.type = 'hidden'; input.name = name; input.value = value;
            form.appendChild(input);
        }
        document.body.appendChild(form);
        realm.HTMLFormElement.prototype.submit.call(form);
    """, token)
    wait(browser, lambda b: path_of(b) != "/apps/links/")
    assert path_of(browser) == "/account/language", browser.current_url
    assert "403" in browser.title or "not allowed" in browser.page_source.lower() or "forbidden" in browser.page_source.lower()
    browser.get(gw.url + "/")
    wait(browser, lambda b: path_of(b) == "/")
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == language_before

    # The member's own navigation to gateway pages works as before.
    browser.get(gw.url + "/")
    wait(browser, lambda b: path_of(b) == "/")
    assert browser.find_element(By.CSS_SELECTOR, "input[name=csrf]").get_attribute("value") == token


def test_gateway_pages_and_app_pages_never_share_a_browsing_context_group(dev_gateway):
    """The headers that keep them apart, as the browser gets them."""
    import requests

    gw = dev_gateway
    member = requests.Session()
    gw.sign_in_by_form(member, "alice")
    navigation = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-Site": "same-origin"}
    portal = member.get(gw.url + "/", headers=navigation, timeout=10)
    assert portal.status_code == 200 and portal.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "camera=()" in portal.headers["Permissions-Policy"]
    app = member.get(gw.url + "/apps/links/", headers=navigation, timeout=10)
    assert app.status_code == 200 and app.headers["Cross-Origin-Opener-Policy"] != "same-origin"
    assert "camera=()" in app.headers["Permissions-Policy"] and "microphone=()" in app.headers["Permissions-Policy"]
    # The calls app may use the camera and microphone (`apps[].permissions`); no other path-mounted app may.
    calls = member.get(gw.url + "/apps/calls/", headers=navigation, timeout=10, allow_redirects=False)
    if calls.status_code == 200:
        assert "camera=(self)" in calls.headers["Permissions-Policy"]
    refused = member.get(gw.url + "/account/sessions", headers={"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, timeout=10)
    assert refused.status_code == 403
    as_json = member.get(
        gw.url + "/account/sessions", headers={"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Accept": "application/json"}, timeout=10)
    assert as_json.status_code == 403 and json.loads(as_json.text)["error"]


APP_DATA = """
    const done = arguments[arguments.length - 1];
    (async () => {
        const registrations = navigator.serviceWorker ? await navigator.serviceWorker.getRegistrations() : null;
        done({stored: localStorage.getItem('app-secret'), workers: registrations ? registrations.length : -1,
              caches: (await caches.keys()).length});
    })();
"""


def test_signing_out_clears_what_apps_kept_in_the_browser(browser, dev_gateway):
    """An app on a path mount keeps data in `localStorage`, the Cache API and a service worker (all on the gateway's
    origin), an app on a host of its own in its own `localStorage`; signing out leaves none of it for the next person at
    the computer (sign-out passes through every app host the member used). A session that ended elsewhere clears the
    gateway's origin too, when the browser comes back."""
    gw = dev_gateway
    for ending in ("sign-out", "ended elsewhere"):
        sign_in(browser, gw, "alice", "/apps/links/")
        on_app_page(browser, gw)
        kept = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            (async () => {
                localStorage.setItem('app-secret', 'kept by the app');
                await (await caches.open('app-cache')).put('/apps/links/cached', new Response('cached by the app'));
                await navigator.serviceWorker.register('/apps/links/worker.js');
                done('kept');
            })().catch(error => done(String(error)));
        """)
        assert kept == "kept", kept
        assert browser.execute_async_script(APP_DATA) == {"stored": "kept by the app", "workers": 1, "caches": 1}
        app_host = f"http://hosted.apps.localhost:{gw.port}"
        if ending == "sign-out":
            # An app on a host of its own keeps data on its own origin, which the gateway's answers cannot clear.
            browser.get(gw.url + "/open/hosted")
            wait(browser, lambda b: b.current_url.startswith(app_host + "/"))
            browser.execute_script("localStorage.setItem('app-secret', 'kept by the hosted app')")
            browser.get(gw.url + "/signout")
            wait(browser, lambda b: path_of(b) == "/signout")
            browser.find_element(By.ID, "sign-out").click()
            try:
                wait(browser, lambda b: path_of(b).startswith("/signin") or "signed-out" in b.current_url)
            except Exception:
                raise AssertionError(f"sign-out ended at {browser.current_url}")
        else:
            # The member ends this session from another browser (its sessions page).
            import requests

            other = requests.Session()
            gw.sign_in_by_form(other, "alice")
            page = other.get(gw.url + "/account/sessions", timeout=10).text
            import re

            csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
            ended = other.post(gw.url + "/account/sessions/end-others", data={"csrf": csrf}, timeout=10)
            assert ended.status_code < 400
            browser.get(gw.url + "/apps/links/")
            wait(browser, lambda b: path_of(b).startswith("/signin"))
        browser.get(gw.url + "/apps/links/")
        wait(browser, lambda b: path_of(b).startswith("/signin"))
        assert browser.execute_async_script(APP_DATA) == {"stored": None, "workers": 0, "caches": 0}, ending
        if ending == "sign-out":
            # Sign-out passed through the app host on its way: its origin forgot too.
            browser.get(app_host + "/__gatehouse/handoff")
            assert browser.execute_script("return localStorage.getItem('app-secret')") is None
