// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";
  // Toasts: non-blocking, announced by the polite live region, gone after 4 seconds.
  window.gatehouseToast = function (message) {
    var area = document.getElementById("toasts");
    if (!area) { return; }
    var toast = document.createElement("p");
    toast.className = "toast";
    toast.textContent = message;
    area.appendChild(toast);
    window.setTimeout(function () { toast.remove(); }, 4000);
  };
})();
