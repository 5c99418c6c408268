// Keeps the gateway bar where an app's scripts do not reach it. The gateway injects it as the first thing in <body>
// (a parser puts nothing before it); this runs at once, before the app's own scripts, and moves the bar and the room
// it keeps out of <body>, to just before it in <html>: a framework that renders into <body>, clears its children or
// replaces `document.body` leaves the bar alone. Should a script still remove it (by rewriting all of <html>), it is
// put back at once, the same element with its state. Loaded without `defer` for that reason, and tiny.
(function () {
  "use strict";
  var html = document.documentElement;
  var parts = ["gatehouse-bar-space", "gatehouse-handle-space", "gatehouse-bar"].map(function (id) { return document.getElementById(id); });
  if (!parts[2]) { return; }
  function keep() {
    for (var i = 0; i < parts.length; i++) {
      var part = parts[i];
      if (part && part.parentNode !== html) { html.insertBefore(part, document.body); }
    }
  }
  keep();
  new MutationObserver(keep).observe(html, { childList: true });
})();
