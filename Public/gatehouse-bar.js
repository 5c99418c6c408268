// The gateway bar on proxied pages (its markup and style live in a shadow root the gateway injected after <body>):
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
  var toasts = root.getElementById("toasts");
  var overlay = host.hasAttribute("data-overlay");
  var fetchOriginal = window.fetch ? window.fetch.bind(window) : null;

  function toast(message, action) {
    if (window.GatehouseToasts) { window.GatehouseToasts.show(toasts, message, action); }
  }

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

  function setCollapsed(collapsed) {
    if (collapsed) { host.setAttribute("data-collapsed", ""); } else { host.removeAttribute("data-collapsed"); }
    // Room above the page only for a bar that is open and not laid over an app that wants the whole screen.
    if (space) { space.media = collapsed || overlay ? "not all" : "screen"; }
    root.getElementById(collapsed ? "handle" : "collapse").focus();
    // On an app with the bar off, opening it is for this page only.
    if (!overlay) { remember("bar", collapsed ? "collapsed" : "expanded"); }
  }
  root.getElementById("collapse").addEventListener("click", function () { setCollapsed(true); });
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
})();
