// The gateway bar on proxied pages (its markup and style live in a shadow root the gateway injected after <body>, which
// gatehouse-bar-keeper.js moved out of it):
// skip link, app switcher, collapsing to a handle, dismissing the upgrade banner — both remembered for the session by
// the gateway — and the toast for app requests that fail. Runs under the page's CSP through the response's nonce.
(function () {
  "use strict";
  var host = document.getElementById("gatehouse-bar");
  if (!host) { return; }
  var root = host.shadowRoot;
  if (!root) {
    // A browser without declarative shadow DOM: attach the template's content by hand.
    var template = host.querySelector("template");
    if (!template) { return; }
    root = host.attachShadow({ mode: "open" });
    root.appendChild(template.content);
    template.remove();
  }
  var bar = root.getElementById("bar");
  var space = document.getElementById("gatehouse-bar-space");
  var roomBelow = document.getElementById("gatehouse-handle-space");
  var reserveRoom = function () {};
  placeAtDeviceScale();
  followThePagesScheme();
  var toasts = root.getElementById("toasts");
  var overlay = host.hasAttribute("data-overlay");
  var fetchOriginal = window.fetch ? window.fetch.bind(window) : null;

  function toast(message, action) {
    if (window.GatehouseToasts) { window.GatehouseToasts.show(toasts, message, action); }
  }

  // Another tab of this browser finished an upgrade or a session (on this origin: the gateway's pages, and apps on
  // its paths): the bar here is out of date, and a toast offers the reload (the app's page is never reloaded by itself).
  if (window.BroadcastChannel) {
    new BroadcastChannel("gatehouse").onmessage = function (event) {
      var text = bar.getAttribute(event.data === "upgraded" ? "data-other-upgraded" : event.data === "signed-out" ? "data-other-signed-out" : "");
      if (!text) { return; }
      // Told once: the check when this tab comes back into view then finds nothing new.
      bar.setAttribute("data-level", event.data === "upgraded" ? "registered" : "none");
      toast(text, { url: window.location.href, label: bar.getAttribute("data-reload") });
    };
  }

  // A tab coming back into view asks the gateway the member's level (on an app host, where other tabs' news does not
  // reach): a bar made for another level is out of date, and the same toast offers the reload. A session that ended
  // answers with the way to sign in again instead.
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState !== "visible" || !fetchOriginal) { return; }
    fetchOriginal(window.location.origin + "/__gatehouse/frame", {
      credentials: "same-origin", redirect: "manual", headers: { "Accept": "application/json", "X-Gatehouse-Frame": "1" }
    }).then(function (response) {
      if (response.type === "opaqueredirect" || response.status === 401) { return { level: "none" }; }
      return response.ok ? response.json() : null;
    }).then(function (state) {
      if (!state || state.level === bar.getAttribute("data-level")) { return; }
      var text = bar.getAttribute(state.level === "registered" ? "data-other-upgraded" : "data-other-signed-out");
      bar.setAttribute("data-level", state.level);
      toast(text, { url: window.location.href, label: bar.getAttribute("data-reload") });
    }).catch(function () {});
  });

  // The warning before the session ends, in the bar (`gatehouse-session.js`).
  if (window.GatehouseSession) { window.GatehouseSession.watch(root.getElementById("session-area"), bar, fetchOriginal); }

  // The member's choice, kept in the session by the gateway (on this page's own origin: the gateway's, or the app
  // host's, which hands it on).
  function remember(field, value) {
    if (!fetchOriginal) { return; }
    fetchOriginal(window.location.origin + "/__gatehouse/frame", {
      method: "POST", credentials: "same-origin", keepalive: true,
      headers: { "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json", "X-Gatehouse-Frame": "1" },
      body: field + "=" + value
    }).then(function (response) {
      if (!response.ok) { throw new Error(String(response.status)); }
    }).catch(function () { toast(bar.getAttribute("data-network-error")); });
  }

  // `forThisPage`: folded because the app's own controls take the top and the bottom, not the member's choice.
  function setCollapsed(collapsed, forThisPage) {
    if (collapsed) { host.setAttribute("data-collapsed", ""); } else { host.removeAttribute("data-collapsed"); }
    // Room above the page only for a bar that is open and not laid over an app that wants the whole screen.
    if (space) { space.media = collapsed || overlay ? "not all" : "screen"; }
    // Room below the page for the handle, so that the page's end can be scrolled clear of it.
    if (roomBelow) { roomBelow.media = collapsed ? "screen" : "not all"; }
    if (forThisPage) {
      overlay = true;  // opened again from the handle, it lies over the page, which keeps its room
      if (space) { space.media = "not all"; }
      return;
    }
    // Expanded again: focus on the bar's own hide button, or on a phone (where it is in the switcher's menu) the switcher.
    var collapse = root.getElementById("collapse");
    (collapsed ? root.getElementById("handle") : getComputedStyle(collapse).display === "none" ? root.getElementById("switcher-button") : collapse).focus();
    // On an app with the bar off, opening it is for this page only.
    if (!overlay) { remember("bar", collapsed ? "collapsed" : "expanded"); }
  }
  root.getElementById("collapse").addEventListener("click", function () { setCollapsed(true); });
  root.getElementById("collapse-menu").addEventListener("click", function () {
    root.getElementById("switcher").open = false;
    setCollapsed(true);
  });
  root.getElementById("handle").addEventListener("click", function () { setCollapsed(false); });

  var dismiss = root.getElementById("gatehouse-banner-dismiss");
  if (dismiss) {
    dismiss.addEventListener("click", function () {
      host.setAttribute("data-banner-dismissed", "");
      root.getElementById("gatehouse-add-features").focus();
      remember("banner", "dismissed");
    });
  }

  // Skip to the app: its main landmark, else the first thing after the bar that takes focus, else the body.
  root.getElementById("skip").addEventListener("click", function (event) {
    event.preventDefault();
    var target = document.querySelector("main, [role=main]");
    if (!target) {
      var focusable = document.querySelectorAll("a[href], button, input, select, textarea, [tabindex]");
      for (var i = 0; i < focusable.length && !target; i++) {
        if (focusable[i] !== host && !host.contains(focusable[i]) && focusable[i].getAttribute("tabindex") !== "-1") { target = focusable[i]; }
      }
    }
    target = target || document.body;
    if (!target.matches("a[href], button, input, select, textarea, [tabindex]")) { target.setAttribute("tabindex", "-1"); }
    target.focus();
  });

  // Sign out: the page that asks is the gateway's; staying signed in comes back to this page when it is on the
  // gateway's own host (an app host's pages are not the gateway's paths).
  var signOut = root.getElementById("bar-sign-out");
  if (signOut) {
    signOut.addEventListener("click", function () {
      if (new URL(signOut.href).origin === window.location.origin && signOut.href.indexOf("?") < 0) {
        signOut.href += "?return_to=" + encodeURIComponent(window.location.pathname + window.location.search);
      }
    });
  }

  // The switcher closes with Escape (focus back on its button) and when the member clicks elsewhere.
  var switcher = root.getElementById("switcher");
  switcher.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && switcher.open) {
      switcher.open = false;
      root.getElementById("switcher-button").focus();
    }
  });
  document.addEventListener("click", function (event) {
    if (switcher.open && event.composedPath().indexOf(switcher) < 0) { switcher.open = false; }
  });

  // The bar at the device's scale, whatever the page's viewport or zoom (see gatehouse-bar.css): its parts are drawn
  // at the device's px and scaled by 1 / the page's scale from the visible area's corner, so a page laid out 980 px
  // wide on a phone (no <meta name="viewport">) or pinched still gets a 40 px bar with its full tap targets. The room
  // kept above the page follows the page's own scale (as it loads, is restored or turns), never the member's zoom
  // (a pinch, a double tap, a trackpad's pinch): the page does not jump under the member's fingers.
  function placeAtDeviceScale() {
    var viewport = window.visualViewport;
    if (!viewport || !root.adoptedStyleSheets || typeof CSSStyleSheet !== "function") { return; }
    var sheet;
    try { sheet = new CSSStyleSheet(); } catch (error) { return; }
    root.adoptedStyleSheets = root.adoptedStyleSheets.concat([sheet]);
    var pageScale = viewport.scale, lastScale = viewport.scale;
    var touches = 0, zoomedAt = -Infinity, queued = false;
    function memberZooming() { return touches > 0 || Date.now() - zoomedAt < 1000; }
    function touched(event) { touches = event.touches ? event.touches.length : 0; zoomedAt = Date.now(); }
    ["touchstart", "touchmove", "touchend", "touchcancel"].forEach(function (type) {
      window.addEventListener(type, touched, { capture: true, passive: true });
    });
    window.addEventListener("wheel", function (event) { if (event.ctrlKey) { zoomedAt = Date.now(); } }, { capture: true, passive: true });
    window.addEventListener("gesturestart", function () { zoomedAt = Date.now(); }, { capture: true, passive: true });
    function px(value) { return (Math.round(value * 100) / 100) + "px !important"; }
    function place() {
      queued = false;
      var scale = viewport.scale, k = 1 / scale;
      var below = document.documentElement.clientHeight - (viewport.offsetTop + viewport.height);
      // At the bottom, the row's lower edge on the visible area's, and the toasts above it.
      var atBottom = host.getAttribute("data-place") === "bottom" && !host.hasAttribute("data-collapsed");
      var y = atBottom ? viewport.offsetTop + viewport.height - 40 * k : viewport.offsetTop;
      sheet.replaceSync(":host{--gh-k:" + k + " !important;--gh-width:" + px(viewport.width * scale) + ";--gh-w:" + px(viewport.width * scale) +
        ";--gh-h:" + px(viewport.height * scale) + ";--gh-x:" + px(viewport.offsetLeft) + ";--gh-y:" + px(y) +
        ";--gh-handle-left:" + px(viewport.offsetLeft + 12 * k) + ";--gh-handle-bottom:" + px(below + 12 * k) +
        ";--gh-toast-left:" + px(viewport.offsetLeft + viewport.width / 2) + ";--gh-toast-bottom:" + px(below + (atBottom ? 56 : 16) * k) + "}");
      // A change of scale that no gesture of the member's made is the page's own.
      if (scale !== lastScale && !memberZooming()) { pageScale = scale; }
      lastScale = scale;
      reserve(pageScale);
    }
    function queue() {
      if (!queued) { queued = true; window.requestAnimationFrame(place); }
    }
    reserveRoom = function () { reserve(pageScale); queue(); };
    viewport.addEventListener("resize", queue);
    viewport.addEventListener("scroll", queue);
    window.addEventListener("resize", queue);
    window.addEventListener("load", queue);
    window.addEventListener("pageshow", queue);
    place();
  }

  // In dark mode the bar is dark only over a page that is: an app that stays light (it declares no dark scheme and
  // paints a light background) keeps a light bar above it.
  function followThePagesScheme() {
    if (!window.matchMedia || !window.matchMedia("(prefers-color-scheme: dark)").matches) { return; }
    function luminance(color) {
      var parts = (color || "").match(/[\d.]+/g);
      if (!parts || parts.length < 3 || (parts.length > 3 && Number(parts[3]) === 0)) { return null; }
      return (0.2126 * parts[0] + 0.7152 * parts[1] + 0.0722 * parts[2]) / 255;
    }
    function check() {
      var background = luminance(getComputedStyle(document.body).backgroundColor);
      if (background === null) { background = luminance(getComputedStyle(document.documentElement).backgroundColor); }
      if (background === null) {
        // Nothing painted: the canvas is dark only where the page lets the browser use a dark scheme.
        background = /dark/.test(getComputedStyle(document.documentElement).colorScheme || "") ? 0 : 1;
      }
      if (background > 0.5) { host.setAttribute("data-page-scheme", "light"); } else { host.removeAttribute("data-page-scheme"); }
    }
    check();
    window.addEventListener("load", check);
  }

  // The room above the page (the bar's 40 px) and below it (the handle's 44 px and its 12 px from the edge, and 8
  // more) at the page's scale (CSSOM, which the page's CSP does not govern).
  function reserve(pageScale) {
    if (!(pageScale > 0)) { return; }
    var scaled = function (px) { return (Math.round(px * 100 / pageScale) / 100) + "px"; };
    var set = function (sheet, properties, px) {
      if (!sheet || !sheet.sheet || !sheet.sheet.cssRules.length) { return; }
      var style = sheet.sheet.cssRules[0].style;
      if (style.getPropertyValue(properties[0]) === scaled(px)) { return; }
      properties.forEach(function (property) { style.setProperty(property, scaled(px), "important"); });
    };
    var atBottom = host.getAttribute("data-place") === "bottom";
    set(space, ["padding-top", "scroll-padding-top"], atBottom ? 0 : 40);
    set(space, ["padding-bottom", "scroll-padding-bottom"], atBottom ? 40 : 0);
    set(roomBelow, ["padding-bottom"], 64);
  }

  // A bar that never hides the app. Left at the top (`data-place="auto"`) until the app's own controls turn out to be
  // there too: anything of the page's under the bar's strip while the page is scrolled to its top (which, with the
  // room kept above the page, only what the app fixes or places on the window can be). The bar then goes to the
  // bottom, or, where the app keeps controls fixed there as well (a status bar), folds into its handle for this page.
  function placeClearOfTheApp() {
    if (host.getAttribute("data-place") !== "auto" || overlayed() || !document.elementsFromPoint) { return; }
    var checks = 0;
    function pinned(element) {
      for (var e = element; e && e !== document.body && e !== document.documentElement; e = e.parentElement) {
        var position = getComputedStyle(e).position;
        if (position === "fixed" || position === "sticky") { return true; }
        if (position === "absolute") {
          for (var a = e.parentElement; a && a !== document.body && a !== document.documentElement; a = a.parentElement) {
            if (getComputedStyle(a).position !== "static") { return false; }
          }
          return true;
        }
      }
      return false;
    }
    function appAt(y, test) {
      var width = document.documentElement.clientWidth;
      return [0.03, 0.25, 0.5, 0.75, 0.97].some(function (x) {
        return document.elementsFromPoint(width * x, y).some(function (element) {
          if (element === host || element === document.documentElement || element === document.body) { return false; }
          var box = element.getBoundingClientRect();
          return box.width > 0 && box.height > 0 && test(element, box);
        });
      });
    }
    function check() {
      checks += 1;
      if (host.getAttribute("data-place") !== "auto" || host.hasAttribute("data-collapsed") || window.scrollY !== 0) { return; }
      var top = appAt(20, function (element, box) { return box.top < 39; });
      if (!top) { return; }
      var height = document.documentElement.clientHeight;
      var bottom = appAt(height - 20, function (element, box) { return box.bottom > height - 41 && pinned(element); });
      if (bottom) {
        host.setAttribute("data-place", "top");
        setCollapsed(true, true);
      } else {
        host.setAttribute("data-place", "bottom");
        reserveRoom();
      }
    }
    // Single-page apps draw their interface after the page has loaded, on a busy machine many seconds later: looked
    // at again for twenty seconds (a look is a few hit tests).
    check();
    window.addEventListener("load", check);
    [500, 1500, 3000, 6000, 10000, 15000, 20000].forEach(function (delay) { window.setTimeout(check, delay); });
  }
  function overlayed() { return host.hasAttribute("data-overlay"); }

  // A request of the app's that the gateway answers with 502/504 means the app failed to load something.
  function failed(status) {
    if (status === 502 || status === 504) { toast(bar.getAttribute("data-app-failed")); }
  }
  if (fetchOriginal) {
    window.fetch = function () {
      return fetchOriginal.apply(window, arguments).then(function (response) { failed(response.status); return response; });
    };
  }
  if (window.XMLHttpRequest) {
    var open = window.XMLHttpRequest.prototype.open;
    window.XMLHttpRequest.prototype.open = function () {
      if (!this.gatehouseWatched) {
        this.gatehouseWatched = true;
        this.addEventListener("loadend", function () { failed(this.status); });
      }
      return open.apply(this, arguments);
    };
  }
  placeClearOfTheApp();
  // The unread count on Chats, as the live script hears it (`gatehouse:unread`, within a second of a message).
  var unreadLinks = Array.prototype.slice.call(root.querySelectorAll("[data-unread]"));
  // Where a phone's bar and a folded bar show the count: on the switcher's button and on the handle (the Chats
  // links are inside the menu there). Screen readers hear it on the links.
  var unreadTotals = ["switcher-unread", "handle-unread"].map(function (id) { return root.getElementById(id); }).filter(Boolean);
  function showUnread(count) {
    unreadTotals.forEach(function (total) {
      total.hidden = !count;
      total.textContent = count ? String(count) : "";
    });
    unreadLinks.forEach(function (link) {
      var badge = link.querySelector(".bar-badge");
      if (!count) { if (badge) { badge.remove(); } return; }
      if (!badge) {
        badge = document.createElement("span");
        badge.className = "bar-badge";
        link.appendChild(badge);
      }
      badge.textContent = String(count);
    });
  }
  if (unreadLinks.length) {
    window.addEventListener("gatehouse:unread", function (event) { showUnread(event.detail.unread); });
  }
})();
