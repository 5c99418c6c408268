// The service worker of Web Push: what the gateway pushes when no page of the member's is open (a message, a
// mention, a call, an invite), shown as a notification, and the room or the call opened by a click. Registered by the
// Chats page with a scope of its own (`/static/push/`), so that it controls no page and sees no request: it only
// shows what is pushed. The texts are set as text by the browser's notification; a click opens the gateway's pages
// only, whatever a payload says.
(function (worker) {
  "use strict";

  // The decisions, without a browser (`node --test`).
  var model = {
    // The notification for a pushed payload (JSON from the gateway; anything else says that something came).
    notification: function (data, origin) {
      data = data && typeof data === "object" ? data : {};
      var text = function (value, fallback) { return typeof value === "string" && value ? value.slice(0, 200) : fallback; };
      return {
        title: text(data.title, "Gatehouse"),
        options: {
          body: text(data.body, ""), tag: text(data.tag, "gatehouse"), lang: text(data.lang, ""),
          requireInteraction: data.kind === "call", renotify: data.kind === "call",
          data: { url: model.target(data.url, origin), kind: text(data.kind, "message") }
        }
      };
    },

    // Where a click goes: a page of the gateway's own origin, else its Chats page.
    target: function (url, origin) {
      if (typeof url === "string" && url.indexOf(origin + "/") === 0 && url.indexOf("\\") < 0) { return url; }
      return origin + "/chats";
    }
  };
  if (typeof module === "object" && module.exports) {
    module.exports = model;
    return;
  }

  worker.addEventListener("install", function () { worker.skipWaiting(); });
  worker.addEventListener("activate", function (event) { event.waitUntil(worker.clients.claim()); });

  worker.addEventListener("push", function (event) {
    var data = null;
    try { data = event.data ? event.data.json() : null; } catch (error) { data = null; }
    var shown = model.notification(data, worker.location.origin);
    event.waitUntil(worker.registration.showNotification(shown.title, shown.options));
  });

  // A tab showing the page already is brought forward; else the page opens in a new one.
  worker.addEventListener("notificationclick", function (event) {
    event.notification.close();
    var url = model.target(event.notification.data && event.notification.data.url, worker.location.origin);
    event.waitUntil(worker.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
      for (var index = 0; index < windows.length; index += 1) {
        if (windows[index].url === url && windows[index].focus) { return windows[index].focus(); }
      }
      return worker.clients.openWindow ? worker.clients.openWindow(url) : null;
    }));
  });
})(typeof self === "object" ? self : {});
