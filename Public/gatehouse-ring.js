// The ring: a call for the member, on any page of theirs (the gateway's pages, and the bar on every app's page),
// shown as a prompt with the caller's name, Accept (the call's page on the gateway) and Decline. It listens on the
// page's own host (data-ring) while the page is in view, so that hidden tabs hold no connection. Names are set as text.
(function () {
  "use strict";
  if (document.querySelector("main.call-page")) { return; }
  var box = document.getElementById("ring");
  if (!box) {
    var host = document.getElementById("gatehouse-bar");
    box = host && host.shadowRoot ? host.shadowRoot.getElementById("ring") : null;
  }
  if (!box || !window.EventSource) { return; }
  var url = window.location.origin + box.getAttribute("data-ring");
  var fetchOriginal = window.fetch ? window.fetch.bind(window) : null;
  var stream = null, calls = [], declined = {}, hideTimer = null;

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function show() {
    window.clearTimeout(hideTimer);
    var now = Date.now();
    var call = calls.filter(function (c) { return !declined[c.id] && c.ends > now; })[0];
    while (box.firstChild) { box.removeChild(box.firstChild); }
    if (!call) {
      box.hidden = true;
      box.removeAttribute("data-call");
      return;
    }
    box.setAttribute("data-call", call.id);
    box.setAttribute("data-media", call.media);
    box.appendChild(element("p", "ring-label", box.getAttribute("data-label")));
    box.appendChild(element("p", "ring-text", call.text));
    var actions = element("div", "ring-actions");
    var accept = element("a", "ring-accept", box.getAttribute("data-accept"));
    accept.href = call.answer;
    accept.id = "ring-accept";
    var decline = element("button", "ring-decline", box.getAttribute("data-decline"));
    decline.type = "button";
    decline.id = "ring-decline";
    decline.addEventListener("click", function () {
      declined[call.id] = true;
      show();
      if (fetchOriginal) {
        fetchOriginal(url, {
          method: "POST", credentials: "same-origin", body: JSON.stringify({ decline: call.id }),
          headers: { "Content-Type": "application/json", "Accept": "application/json", "X-Gatehouse-Frame": "1" }
        }).catch(function () {});
      }
    });
    actions.appendChild(accept);
    actions.appendChild(decline);
    box.appendChild(actions);
    box.hidden = false;
    // The ring stops when the invite's time runs out, even if nothing more is heard.
    hideTimer = window.setTimeout(show, Math.max(0, call.ends - now) + 500);
  }

  function listen() {
    if (document.visibilityState !== "visible") {
      if (stream) { stream.close(); stream = null; }
      return;
    }
    if (stream) { return; }
    stream = new EventSource(url);
    stream.addEventListener("ringing", function (event) {
      calls = (JSON.parse(event.data).calls || []);
      show();
    });
    stream.addEventListener("ended", function () { stream.close(); stream = null; calls = []; show(); });
  }
  document.addEventListener("visibilitychange", listen);
  listen();
})();
