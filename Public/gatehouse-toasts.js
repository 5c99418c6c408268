// Toasts, for the gateway's own pages and for the bar on proxied pages (inside its shadow root): non-blocking and
// announced by the polite live region they are put in; each can be dismissed (its button or Escape), carries its
// action where there is one, and waits while the pointer or the keyboard focus is on it.
(function () {
  "use strict";
  function show(area, message, action) {
    var toast = document.createElement("div");
    toast.className = "toast";
    var text = document.createElement("span");
    text.className = "toast-message";
    text.textContent = message;
    toast.appendChild(text);
    if (action && action.url) {
      var link = document.createElement("a");
      link.className = "toast-action";
      link.textContent = action.label;
      toast.appendChild(link);
    }
    var close = document.createElement("button");
    close.type = "button";
    close.className = "toast-close";
    close.setAttribute("aria-label", area.getAttribute("data-dismiss") || "Dismiss");
    close.textContent = "\u00d7";
    toast.appendChild(close);

    // Long enough to read and reach the action; the time left is kept while paused.
    var remaining = action ? 10000 : 6000;
    var timer = null;
    var startedAt = 0;
    var hovered = false;
    var focused = false;
    function dismiss() { window.clearTimeout(timer); toast.remove(); }
    function update() {
      if (hovered || focused) {
        if (timer !== null) { window.clearTimeout(timer); timer = null; remaining -= Date.now() - startedAt; }
      } else if (timer === null) {
        startedAt = Date.now();
        timer = window.setTimeout(dismiss, Math.max(remaining, 1000));
      }
    }
    toast.addEventListener("mouseenter", function () { hovered = true; update(); });
    toast.addEventListener("mouseleave", function () { hovered = false; update(); });
    toast.addEventListener("focusin", function () { focused = true; update(); });
    toast.addEventListener("focusout", function (event) { focused = toast.contains(event.relatedTarget); update(); });
    toast.addEventListener("keydown", function (event) { if (event.key === "Escape") { dismiss(); } });
    close.addEventListener("click", dismiss);
    area.appendChild(toast);
    // Set once in the area's tree (the bar's shadow root on an app's page), where the URL shim leaves it as it is.
    var actionLink = toast.querySelector(".toast-action");
    if (actionLink) { actionLink.href = action.url; }
    update();
  }

  window.GatehouseToasts = { show: show };
})();
