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
  var stream = null, calls = [], current = null, declined = {}, hideTimer = null;

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  // A link of the prompt's, its address set once it is in the bar's shadow root: the URL shim of a path-mounted app
  // maps the URLs of the page's own elements, and an element not yet in the bar's tree is one it cannot tell apart.
  function link(parent, id, text, href) {
    var made = element("a", "ring-accept", text);
    made.id = id;
    parent.appendChild(made);
    made.href = href;
    return made;
  }

  function show() {
    window.clearTimeout(hideTimer);
    var now = Date.now();
    var call = calls.filter(function (c) { return !declined[c.id] && c.ends > now; })[0];
    while (box.firstChild) { box.removeChild(box.firstChild); }
    if (!call && current) {
      showCurrent();
      return;
    }
    box.classList.remove("in-call");
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
    box.appendChild(actions);
    link(actions, "ring-accept", box.getAttribute("data-accept"), call.answer);
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
    actions.appendChild(decline);
    box.hidden = false;
    // The ring stops when the invite's time runs out, even if nothing more is heard.
    hideTimer = window.setTimeout(show, Math.max(0, call.ends - now) + 500);
  }

  // The window of the call when this page can reach it: a gateway page opened from the call's page (which names its
  // window `gatehouse-call`). An app's page never can: apps' pages are kept out of the gateway's browsing context
  // group (their `Cross-Origin-Opener-Policy`), so that their scripts cannot reach the gateway's windows.
  function callWindow() {
    try {
      return window.opener && !window.opener.closed && window.opener.name === "gatehouse-call" ? window.opener : null;
    } catch (error) { return null; }
  }

  // The member's call in progress (on the call's page in another tab of this browser): said on every other page,
  // with the way back to it: the call's window brought forward where this page can reach it (never loaded again,
  // which would end the call), else Calls, which lists it.
  function showCurrent() {
    box.setAttribute("data-call", current.id);
    box.removeAttribute("data-media");
    box.classList.add("in-call");
    box.appendChild(element("p", "ring-text", current.text));
    var actions = element("div", "ring-actions");
    box.appendChild(actions);
    var back = link(actions, "ring-back", box.getAttribute("data-back"), current.calls);
    back.addEventListener("click", function (event) {
      var call = callWindow();
      if (call) {
        event.preventDefault();
        call.focus();
      }
    });
    box.hidden = false;
  }

  function listen() {
    if (document.visibilityState !== "visible") {
      if (stream) { stream.close(); stream = null; }
      return;
    }
    if (stream) { return; }
    stream = new EventSource(url);
    stream.addEventListener("ringing", function (event) {
      var data = JSON.parse(event.data);
      calls = data.calls || [];
      current = data.current || null;
      show();
    });
    stream.addEventListener("ended", function () { stream.close(); stream = null; calls = []; current = null; show(); });
  }
  document.addEventListener("visibilitychange", listen);
  listen();
})();
