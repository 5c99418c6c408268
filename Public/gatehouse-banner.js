// The banner's behaviour on proxied pages: keyboard access is native (it is a link); this adds the toast for
// failed page loads. Works under the page's CSP through the response's nonce.
(function () {
  "use strict";
  var area = document.getElementById("gatehouse-toasts");
  function toast(message) {
    if (!area) { return; }
    var item = document.createElement("p");
    item.className = "gatehouse-toast";
    item.textContent = message;
    area.appendChild(item);
    window.setTimeout(function () { item.remove(); }, 4000);
  }
  window.gatehouseToast = toast;
  // A fetch to the app that the gateway answers with 502/504 means the app failed to load something.
  if (window.fetch) {
    var original = window.fetch;
    window.fetch = function () {
      return original.apply(this, arguments).then(function (response) {
        if (response.status === 502 || response.status === 504) { toast(area.getAttribute("data-app-failed")); }
        return response;
      });
    };
  }
})();
