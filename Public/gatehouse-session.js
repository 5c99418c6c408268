// The warning before a session ends, for the gateway's pages and for the bar on proxied pages: a configured time
// before the idle limit (the member's last activity in any app, as the gateway recorded it) or the absolute one, a
// notice with "Stay signed in", announced to screen readers. Staying is a request to the gateway, which counts as
// activity and, near the absolute limit, refreshes at the provider; when the provider will not, a sign-in opens in a
// new tab and comes back to a page that tells this one. Asking how long is left is no activity; the answer carries
// the notice's texts in the member's language (no page carries them until they are needed).
(function () {
  "use strict";
  // `area`: where the notice goes; `config`: an element with the limits as data attributes; `request`: the page's own
  // `fetch` (the bar keeps the one the app's scripts cannot replace).
  function watch(area, config, request) {
    var warnBefore = Number(config.getAttribute("data-warn"));
    var idleLimit = Number(config.getAttribute("data-idle"));
    if (!(warnBefore > 0) || !request) { return; }
    var endpoint = window.location.origin + "/__gatehouse/frame";
    var headers = { "Accept": "application/json", "X-Gatehouse-Frame": "1" };
    var notice = null;
    var text = null;
    var button = null;
    var timer = null;
    var endsAt = 0;
    var texts = {};

    function build() {
      notice = document.createElement("div");
      notice.className = "session-warning";
      notice.id = "session-warning";
      notice.setAttribute("role", "alert");
      text = document.createElement("span");
      text.id = "session-warning-text";
      button = document.createElement("button");
      button.type = "button";
      button.id = "stay-signed-in";
      button.textContent = texts.stay;
      button.addEventListener("click", stay);
      notice.appendChild(text);
      notice.appendChild(button);
      area.appendChild(notice);
    }

    function schedule(seconds) {
      window.clearTimeout(timer);
      timer = window.setTimeout(check, Math.max(1, seconds) * 1000);
    }

    function left(session) { return Math.min(session.idleEndsIn, session.endsIn); }

    function check() {
      request(endpoint, { credentials: "same-origin", redirect: "manual", headers: headers }).then(function (response) {
        if (response.type === "opaqueredirect") { return { ended: true }; }
        // An ended session's answer says so in the member's language.
        if (response.status === 401) { return response.json().then(function (body) { return { ended: true, message: body.message }; }); }
        return response.ok ? response.json() : null;
      }).then(function (state) {
        if (!state) { schedule(60); return; }
        if (state.texts) { texts = state.texts; }
        if (state.ended || !state.session) { ended(state.message); return; }
        var seconds = left(state.session);
        if (seconds <= warnBefore) { show(seconds); } else { hide(); schedule(Math.min(seconds - warnBefore, 300)); }
      }).catch(function () { schedule(60); });
    }

    function show(seconds) {
      if (!notice) { build(); }
      var first = notice.hidden || !notice.hasAttribute("data-shown");
      notice.hidden = false;
      notice.setAttribute("data-shown", "");
      endsAt = Date.now() + seconds * 1000;
      // The alert is read once when it appears; the countdown moves quietly after.
      if (first) { notice.setAttribute("role", "alert"); } else { notice.removeAttribute("role"); }
      count();
    }

    function count() {
      window.clearTimeout(timer);
      var seconds = Math.round((endsAt - Date.now()) / 1000);
      if (seconds <= 0) { check(); return; }
      var time = Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0");
      text.textContent = (texts.warning || "").replace("{time}", time);
      timer = window.setTimeout(count, 1000);
    }

    function hide() {
      if (notice) { notice.hidden = true; notice.removeAttribute("data-shown"); }
    }

    function ended(message) {
      window.clearTimeout(timer);
      if (!notice) { build(); }
      notice.hidden = false;
      notice.setAttribute("role", "alert");
      text.textContent = texts.ended || message || "";
      // Without the texts (the session ended before this page first asked), the server's message alone.
      button.hidden = !texts.signIn;
      button.textContent = texts.signIn || "";
      button.onclick = function () { window.location.reload(); };
      button.removeEventListener("click", stay);
    }

    function stay() {
      button.disabled = true;
      request(endpoint, {
        method: "POST", credentials: "same-origin", redirect: "manual",
        headers: { "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json", "X-Gatehouse-Frame": "1" },
        body: "stay=1"
      }).then(function (response) {
        if (response.type === "opaqueredirect" || response.status === 401) { return { ended: true }; }
        return response.ok ? response.json() : null;
      }).then(function (state) {
        button.disabled = false;
        if (!state || state.ended) { ended(); return; }
        if (state.signIn) {
          // The provider's session will not carry this one further: a sign-in in a new tab, this page kept as it is.
          window.open(state.signIn, "_blank", "noopener");
          text.textContent = texts.newTab || "";
          window.clearTimeout(timer);
          timer = window.setTimeout(check, 15000);
          return;
        }
        hide();
        schedule(Math.min(left(state.session) - warnBefore, 300));
      }).catch(function () { button.disabled = false; });
    }

    // Back in view, or told by another tab that the session was renewed: ask again.
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "visible" && notice && !notice.hidden) { check(); }
    });
    if (window.BroadcastChannel) {
      new BroadcastChannel("gatehouse-session").onmessage = function (event) { if (event.data === "renewed") { check(); } };
    }
    schedule(Math.min(idleLimit - warnBefore, 300));
  }

  window.GatehouseSession = { watch: watch };

  // A gateway page of a signed-in member: the notice goes above its content.
  var meta = document.querySelector("meta[name=gatehouse-session]");
  if (meta) {
    var start = function () {
      var area = document.createElement("div");
      area.className = "session-area";
      document.body.insertBefore(area, document.body.firstChild);
      watch(area, meta, window.fetch ? window.fetch.bind(window) : null);
    };
    if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
  }
  // The page a sign-in to stay signed in ends on tells the member's other tabs.
  var renewed = document.querySelector("meta[name=gatehouse-session-renewed]");
  if (renewed && window.BroadcastChannel) { new BroadcastChannel("gatehouse-session").postMessage("renewed"); }
})();
