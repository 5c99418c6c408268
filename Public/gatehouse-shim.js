// The URL shim, for pages of an app on a path mount that was not told its prefix (`/apps/<slug>/`): the gateway
// rewrites the URLs in the app's HTML and CSS, but the app's JavaScript builds others (`fetch("/api/…")`, a
// WebSocket to `ws://host/api/…`, a script element for a bundle's next chunk). This script runs before the app's own
// and maps, in the page's JavaScript, every URL that names the app's root or its upstream origin to the mount, and
// sends navigations to hosts outside the allowlist through the leaving page. What it cannot reach (assignments to
// `location.href`, URLs a worker builds, CSS written by scripts) the gateway catches on the server: a request for an
// unknown path whose `Referer` is a page of the app is sent on to the app's mount (docs/apps.md).
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || window.gatehouseURLShim) { return; }
  var prefix = script.getAttribute("data-prefix");
  var upstream = script.getAttribute("data-upstream") || "";
  var leaving = script.getAttribute("data-leaving");
  var allowed = (script.getAttribute("data-allow") || "").split(" ").filter(Boolean);
  var here = window.location.origin;
  var hereHost = window.location.host;

  function isAllowed(host) {
    host = host.toLowerCase().replace(/\.$/, "");
    return allowed.some(function (entry) {
      return entry.indexOf("*.") === 0 ? host.slice(-(entry.length - 1)) === entry.slice(1) : host === entry;
    });
  }

  // A path (with query and fragment) of the gateway's origin that the app meant as its own: everything but the
  // mount itself, the other apps' mounts and the gateway's own addresses.
  function mountedPath(path) {
    if (path === prefix || path.indexOf(prefix + "/") === 0 || path.indexOf("/apps/") === 0 || path.indexOf("/__gatehouse/") === 0 ||
      path.indexOf("/static/gatehouse") === 0) { return null; }
    return prefix + path;
  }

  // The gateway's URL for `value` (a string or URL object), or `value` unchanged. `navigation`: a place the member is
  // taken to, which may leave for the leaving page.
  function map(value, navigation) {
    if (value === null || value === undefined || value === "") { return value; }
    var text = String(value), url;
    try { url = new URL(text, document.baseURI); } catch (error) { return value; }
    var web = url.protocol === "http:" || url.protocol === "https:";
    var socket = url.protocol === "ws:" || url.protocol === "wss:";
    if (!web && !socket) { return value; }
    var rest = url.pathname + url.search + url.hash;
    if (url.host === hereHost) {
      var mapped = mountedPath(rest);
      if (mapped === null) { return value; }
      return (socket ? url.protocol + "//" + hereHost : here) + mapped;
    }
    var asHTTP = socket ? url.href.replace(/^ws/, "http") : url.href;
    if (upstream && asHTTP.indexOf(upstream) === 0) {
      var below = prefix + "/" + asHTTP.slice(upstream.length);
      return (socket ? (window.location.protocol === "https:" ? "wss://" : "ws://") + hereHost : here) + below;
    }
    if (navigation && web && leaving && !isAllowed(url.hostname)) { return leaving + "?to=" + encodeURIComponent(url.href); }
    return value;
  }

  function wrapConstructor(name, mapArguments) {
    var Original = window[name];
    if (typeof Original !== "function") { return; }
    var Wrapped = function () {
      var args = Array.prototype.slice.call(arguments);
      mapArguments(args);
      return new (Function.prototype.bind.apply(Original, [null].concat(args)))();
    };
    Wrapped.prototype = Original.prototype;
    Object.setPrototypeOf(Wrapped, Original);
    try { Object.defineProperty(Wrapped, "name", { value: name }); } catch (error) { /* older engines */ }
    window[name] = Wrapped;
  }
  function mapFirst(args) { if (args.length > 0) { args[0] = map(args[0], false); } }

  if (window.fetch) {
    var originalFetch = window.fetch;
    window.fetch = function (input, init) {
      if (typeof Request === "function" && input instanceof Request) {
        var mapped = map(input.url, false);
        if (mapped !== input.url) { input = new Request(mapped, input); }
      } else {
        input = map(input, false);
      }
      return originalFetch.call(this, input, init);
    };
  }
  if (window.XMLHttpRequest) {
    var open = XMLHttpRequest.prototype.open;
    XMLHttpRequest.prototype.open = function () {
      var args = Array.prototype.slice.call(arguments);
      if (args.length > 1) { args[1] = map(args[1], false); }
      return open.apply(this, args);
    };
  }
  ["WebSocket", "EventSource", "Request", "Worker", "SharedWorker"].forEach(function (name) { wrapConstructor(name, mapFirst); });
  if (navigator.sendBeacon) {
    var beacon = navigator.sendBeacon;
    navigator.sendBeacon = function (url, data) { return beacon.call(navigator, map(url, false), data); };
  }
  ["pushState", "replaceState"].forEach(function (name) {
    var original = history[name];
    history[name] = function (state, title, url) {
      return arguments.length > 2 ? original.call(history, state, title, map(url, false)) : original.apply(history, arguments);
    };
  });
  var windowOpen = window.open;
  window.open = function (url) {
    var args = Array.prototype.slice.call(arguments);
    if (args.length > 0) { args[0] = map(url, true); }
    return windowOpen.apply(window, args);
  };

  // URLs set on elements, as attributes or properties: scripts and styles a bundle loads, images, frames, links. The
  // gateway bar's own links (in its shadow root) name the gateway's pages and are left as they are.
  function isTheBars(element) {
    var root = element.getRootNode ? element.getRootNode() : null;
    return !!(root && root.host && root.host.id === "gatehouse-bar");
  }
  var navigating = { href: true, action: true, formaction: true };
  var urlAttributes = { src: true, href: true, action: true, formaction: true, poster: true };
  var setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    var lower = String(name).toLowerCase();
    if (urlAttributes[lower] && !(this instanceof SVGElement) && !isTheBars(this)) {
      var isNavigation = navigating[lower] && (this instanceof HTMLAnchorElement || this instanceof HTMLAreaElement || this instanceof HTMLFormElement ||
        this instanceof HTMLButtonElement || this instanceof HTMLInputElement);
      value = map(value, isNavigation);
    }
    return setAttribute.call(this, name, value);
  };
  [["HTMLScriptElement", "src", false], ["HTMLImageElement", "src", false], ["HTMLIFrameElement", "src", false], ["HTMLSourceElement", "src", false],
    ["HTMLMediaElement", "src", false], ["HTMLEmbedElement", "src", false], ["HTMLLinkElement", "href", false], ["HTMLAnchorElement", "href", true],
    ["HTMLAreaElement", "href", true], ["HTMLFormElement", "action", true]].forEach(function (entry) {
    var type = window[entry[0]];
    var descriptor = type && Object.getOwnPropertyDescriptor(type.prototype, entry[1]);
    if (!descriptor || !descriptor.set) { return; }
    Object.defineProperty(type.prototype, entry[1], {
      configurable: true, enumerable: descriptor.enumerable, get: descriptor.get,
      set: function (value) { descriptor.set.call(this, isTheBars(this) ? value : map(value, entry[2])); }
    });
  });

  window.gatehouseURLShim = { map: map };
})();
