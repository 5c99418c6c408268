// What every page of the member's is told live (the gateway's pages, and the bar on every app's page): the unread
// count (on the Chats tab and the bar, and in the tab's title on the gateway's pages), a desktop notification and a
// short sound for a message in a chat the member is not looking at, and a call ringing (the prompt with Accept and
// Decline, a notification and a ringtone).
//
// One stream per browser, not per tab: the tabs of an origin elect one of them (a Web Lock, which the browser hands
// to the next tab when the holder closes) to hold the stream (`data-live`, on the page's own host) and tell the
// others over a BroadcastChannel; each tab tells the holder what it shows (the room in view, whether it is visible,
// whether the member has used it, which lets it play a sound). Only the holder decides to notify, and plays a sound
// through the tab that can. The gateway tells one stream of a session to notify (the gateway's host's, where rooms
// are in view), so a message makes one notification however many origins are open.
//
// The stream is heard where apps' scripts run too (app hosts; the gateway's own origin where apps are path-mounted),
// so it carries no message's text: a gateway page asks for it with its page token, which no app's script can read,
// and shows the notification itself; with no gateway page open the notification says that a message came, and from
// whom. Names and texts are set as text; the browser's permission to notify is asked only from the Chats page's
// button, which says what it is for.
(function () {
  "use strict";

  // The decisions, without a browser (`node --test`): what the page does is what these say.
  var model = {
    // The settings of this browser (kept in its storage): each on unless turned off.
    settings: function (stored) {
      var values = {};
      try { values = JSON.parse(stored || "{}") || {}; } catch (error) { values = {}; }
      return { desktop: values.desktop !== false, sound: values.sound !== false, ringtone: values.ringtone !== false };
    },

    // Whether a notice is for this browser to show: not when a tab shows its room and is in view.
    shows: function (notice, tabs) {
      return !Object.keys(tabs).some(function (id) { return tabs[id].visible && tabs[id].room === notice.room; });
    },

    // The tab that shows a notification: the holder if it is a gateway page (it can ask for the message's text),
    // else a gateway page of the origin, else the holder.
    shower: function (tabs, holder) {
      if (tabs[holder] && tabs[holder].token) { return holder; }
      var pages = Object.keys(tabs).sort().filter(function (id) { return tabs[id].token; });
      return pages.length ? pages[0] : holder;
    },

    // The tab that plays a sound: the holder if the member has used it (a browser plays sound only in a tab used),
    // else a tab in view that has been used, else none.
    player: function (tabs, holder) {
      if (tabs[holder] && tabs[holder].active) { return holder; }
      var ids = Object.keys(tabs).sort();
      var visible = ids.filter(function (id) { return tabs[id].visible && tabs[id].active; });
      return visible.length ? visible[0] : null;
    },

    // The title with the count before it ("(3) Chats · Gatehouse"), any count there before replaced.
    title: function (title, count) {
      var bare = title.replace(/^\(\d+\) /, "");
      return count > 0 ? "(" + count + ") " + bare : bare;
    },

    // What the Chats page does on load with pushes: the gateway pushes to this browser (`keep`: a subscription the
    // browser lost is forgotten by the gateway at its first push), or the browser holds a subscription the gateway
    // does not know (a session before this one's: `unsubscribe`), or neither.
    pushStep: function (gatewayOn, browserHas) {
      if (gatewayOn) { return "keep"; }
      return browserHas ? "unsubscribe" : "none";
    },

    // The gateway's key (base64url) as the bytes `pushManager.subscribe` takes.
    keyBytes: function (text) {
      var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
      while (base64.length % 4) { base64 += "="; }
      var binary = typeof atob === "function" ? atob(base64) : Buffer.from(base64, "base64").toString("binary");
      var bytes = new Uint8Array(binary.length);
      for (var index = 0; index < binary.length; index += 1) { bytes[index] = binary.charCodeAt(index); }
      return bytes;
    },

    // The calls of a `ringing` event that were not ringing before (each told once), and the ids ringing now.
    newCalls: function (known, calls, now) {
      var ringing = calls.filter(function (call) { return call.ends > now; });
      return {
        fresh: ringing.filter(function (call) { return !known[call.id]; }),
        ids: ringing.reduce(function (ids, call) { ids[call.id] = true; return ids; }, {})
      };
    }
  };
  if (typeof module === "object" && module.exports) {
    module.exports = model;
    return;
  }

  if (document.querySelector("main.call-page")) { return; }
  var box = document.getElementById("ring");
  if (!box) {
    var host = document.getElementById("gatehouse-bar");
    box = host && host.shadowRoot ? host.shadowRoot.getElementById("ring") : null;
  }
  if (!box || !window.EventSource) { return; }
  var url = window.location.origin + box.getAttribute("data-live");
  var onGateway = box.getAttribute("data-title-count") === "1";
  // A gateway page's token (never an app's page: an app's own form may have a field of that name).
  var pageToken = onGateway ? (document.querySelector("input[name=csrf]") || {}).value || null : null;
  var fetchOriginal = window.fetch ? window.fetch.bind(window) : null;
  var NotificationAPI = window.Notification;
  // The tab's id, kept by the tab across its pages (its session storage), so that the next page of a tab takes its
  // place in the holder's table rather than beside a page that is gone.
  var tabID = null;
  try { tabID = window.sessionStorage.getItem("gatehouse-tab"); } catch (error) { tabID = null; }
  if (!tabID) {
    tabID = Math.random().toString(36).slice(2) + Date.now().toString(36);
    try { window.sessionStorage.setItem("gatehouse-tab", tabID); } catch (error) { /* an id for this page alone */ }
  }
  var channel = window.BroadcastChannel ? new window.BroadcastChannel("gatehouse-live") : null;
  var storageKey = "gatehouse-notify";
  var stream = null, holder = false, tabs = {}, last = {}, calls = [], current = null, declined = {}, ringingIDs = {};
  var hideTimer = null, baseTitle = document.title, used = false, leaving = false;

  function settings() {
    try { return model.settings(window.localStorage.getItem(storageKey)); } catch (error) { return model.settings(null); }
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  // ---- The count -------------------------------------------------------------------------------------------------

  // The bar's and the Chats tab's scripts show it (`gatehouse:unread`); the gateway's pages put it in the title too.
  function showUnread(count) {
    window.dispatchEvent(new window.CustomEvent("gatehouse:unread", { detail: { unread: count } }));
    if (onGateway) { document.title = model.title(baseTitle, count); }
  }

  // ---- The ring --------------------------------------------------------------------------------------------------

  // A link of the prompt's, its address set once it is in the bar's shadow root: the URL shim of a path-mounted app
  // maps the URLs of the page's own elements, and an element not yet in the bar's tree is one it cannot tell apart.
  function link(parent, id, text, href) {
    var made = element("a", "ring-accept", text);
    made.id = id;
    parent.appendChild(made);
    made.href = href;
    return made;
  }

  function showRing() {
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
      tell({ type: "declined", call: call.id });
      showRing();
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
    hideTimer = window.setTimeout(showRing, Math.max(0, call.ends - now) + 500);
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

  // ---- Sound (made here, with Web Audio: no file to fetch) ---------------------------------------------------------

  var audio = null, ringTimer = null;
  function audioContext() {
    var Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) { return null; }
    if (!audio) { audio = new Context(); }
    if (audio.state === "suspended") { audio.resume().catch(function () {}); }
    return audio;
  }
  function tone(context, frequency, start, length, volume) {
    var oscillator = context.createOscillator(), gain = context.createGain();
    oscillator.type = "sine";
    oscillator.frequency.value = frequency;
    gain.gain.setValueAtTime(0, start);
    gain.gain.linearRampToValueAtTime(volume, start + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.001, start + length);
    oscillator.connect(gain).connect(context.destination);
    oscillator.start(start);
    oscillator.stop(start + length + 0.05);
  }
  function chime() {
    var context = audioContext();
    if (!context) { return; }
    var now = context.currentTime;
    tone(context, 660, now, 0.18, 0.2);
    tone(context, 880, now + 0.12, 0.3, 0.2);
  }
  // Two notes twice, then a pause: until the call stops ringing here.
  function ringOnce() {
    var context = audioContext();
    if (!context) { return; }
    var now = context.currentTime;
    [0, 0.4, 0.8, 1.2].forEach(function (at, index) { tone(context, index % 2 ? 659 : 523, now + at, 0.35, 0.25); });
  }
  function play(sound) {
    if (sound === "chime") { chime(); }
    if (sound === "ring" && !ringTimer) {
      ringOnce();
      ringTimer = window.setInterval(ringOnce, 3000);
    }
    if (sound === "silence") {
      window.clearInterval(ringTimer);
      ringTimer = null;
    }
  }
  // The holder plays through the tab that can (`model.player`); silence reaches every tab.
  function sound(name) {
    if (name === "silence") {
      play(name);
      tell({ type: "play", sound: name });
      return;
    }
    var player = model.player(tabs, tabID);
    if (player === tabID) { play(name); } else if (player) { tell({ type: "play", sound: name, to: player }); }
  }

  // ---- Notifications ---------------------------------------------------------------------------------------------

  function mayNotify() {
    return !!NotificationAPI && NotificationAPI.permission === "granted" && settings().desktop;
  }

  // A click opens the room (or the call) on the gateway, in a tab of its own.
  function notify(title, body, tag, target) {
    if (!mayNotify()) { return; }
    try {
      var shown = new NotificationAPI(title, { body: body, tag: tag, lang: document.documentElement.lang || "" });
      shown.onclick = function (event) {
        event.preventDefault();
        window.focus();
        window.open(target, "_blank", "noopener");
        shown.close();
      };
    } catch (error) {
      // A browser that shows notifications only from a service worker: the count and the sound still tell.
    }
  }

  // Shown here: with the message's text, asked for with this page's token, where this is a gateway page.
  function showNotice(notice) {
    if (!pageToken || (notice.kind !== "message" && notice.kind !== "mention") || !window.fetch) {
      notify(notice.title, notice.body, notice.id, notice.url);
      return;
    }
    var query = "?room=" + encodeURIComponent(notice.room) + "&id=" + encodeURIComponent(notice.id);
    window.fetch("/chats/notice" + query, { credentials: "same-origin", headers: { "Accept": "application/json", "X-Gatehouse-CSRF": pageToken } })
      .then(function (answer) { return answer.ok ? answer.json() : {}; })
      .catch(function () { return {}; })
      .then(function (text) { notify(notice.title, text.body || notice.body, notice.id, notice.url); });
  }

  // Notices handed to another tab and not yet said shown: shown here after a while, so that a tab gone without a
  // word (a crash) loses none.
  var handed = {};
  function onNotice(notice) {
    if (!model.shows(notice, tabs)) { return; }
    var shower = model.shower(tabs, tabID);
    if (shower === tabID) {
      showNotice(notice);
    } else {
      tell({ type: "show", to: shower, notice: notice });
      handed[notice.id] = window.setTimeout(function () {
        delete handed[notice.id];
        delete tabs[shower];
        showNotice(notice);
      }, 3000);
    }
    if (settings().sound) { sound("chime"); }
  }

  function onRinging(data) {
    var seen = model.newCalls(ringingIDs, data.calls || [], Date.now());
    ringingIDs = seen.ids;
    seen.fresh.forEach(function (call) { notify(box.getAttribute("data-label"), call.text, call.id, call.answer); });
    var ringing = Object.keys(seen.ids).some(function (id) { return !declined[id]; });
    if (ringing && settings().ringtone) { sound("ring"); } else { sound("silence"); }
  }

  // ---- The stream and the tabs -----------------------------------------------------------------------------------

  // What an event means to this tab (each tab shows the count and the ring); the holder alone notifies.
  function handle(name, data) {
    last[name] = data;
    if (name === "unread") { showUnread(data.unread); }
    if (name === "ringing") {
      calls = data.calls || [];
      current = data.current || null;
      showRing();
      if (holder) { onRinging(data); }
    }
    if (name === "notify" && holder) { onNotice(data); }
  }

  function tell(message) {
    message.from = tabID;
    if (channel) { channel.postMessage(message); }
  }

  function describe() {
    var room = document.querySelector("main[data-chat=room]");
    return {
      room: room ? room.getAttribute("data-room") : null, visible: document.visibilityState === "visible",
      active: used || !!(navigator.userActivation && navigator.userActivation.hasBeenActive), token: !!pageToken
    };
  }
  function announce() {
    // A page on its way out says so once (`bye`), and nothing after: its hiding is not news.
    if (leaving) { return; }
    tabs[tabID] = describe();
    tell({ type: "tab", tab: tabs[tabID] });
  }

  function hold() {
    holder = true;
    tabs = {};
    announce();
    // The tabs there are say what they show; a tab that opened before this one held the stream learns the state.
    tell({ type: "hello" });
    stream = new EventSource(url);
    ["unread", "ringing", "notify"].forEach(function (name) {
      stream.addEventListener(name, function (event) {
        var data = JSON.parse(event.data);
        handle(name, data);
        tell({ type: "event", name: name, data: data });
      });
    });
    stream.addEventListener("ended", function () {
      stream.close();
      handle("ringing", { calls: [] });
      tell({ type: "event", name: "ringing", data: { calls: [] } });
    });
  }

  if (channel) {
    channel.onmessage = function (event) {
      var message = event.data || {};
      if (message.from === tabID) { return; }
      switch (message.type) {
        case "event": handle(message.name, message.data); break;
        case "hello":
          announce();
          if (holder) { Object.keys(last).forEach(function (name) { if (name !== "notify") { tell({ type: "event", name: name, data: last[name] }); } }); }
          break;
        case "tab": tabs[message.from] = message.tab; break;
        case "bye": delete tabs[message.from]; break;
        case "play": if (!message.to || message.to === tabID) { play(message.sound); } break;
        case "show":
          if (message.to === tabID) {
            showNotice(message.notice);
            tell({ type: "shown", id: message.notice.id });
          }
          break;
        case "shown":
          window.clearTimeout(handed[message.id]);
          delete handed[message.id];
          break;
        case "declined":
          declined[message.call] = true;
          showRing();
          if (holder) { onRinging(last.ringing || { calls: [] }); }
          break;
      }
    };
  }

  ["focus", "blur"].forEach(function (name) { window.addEventListener(name, announce); });
  document.addEventListener("visibilitychange", announce);
  // The member's first click or key here lets this tab play sound (the browser's rule), and starts its audio.
  ["pointerdown", "keydown"].forEach(function (name) {
    window.addEventListener(name, function first() {
      window.removeEventListener(name, first, true);
      if (used) { return; }
      used = true;
      audioContext();
      announce();
    }, true);
  });
  window.addEventListener("pagehide", function () {
    leaving = true;
    tell({ type: "bye" });
  });
  window.addEventListener("pageshow", function (event) {
    // Back from the browser's cache: the page is the tab's again.
    if (!event.persisted) { return; }
    leaving = false;
    announce();
  });

  // The stream's holder: the tab the origin's lock is granted to, held as long as the tab lives. Without the
  // lock or the channel (an older browser, a page that is not a secure context), each tab holds its own stream.
  if (navigator.locks && channel) {
    navigator.locks.request("gatehouse-live", function () {
      hold();
      return new Promise(function () {});
    });
    announce();
    tell({ type: "hello" });
  } else {
    hold();
  }

  // ---- The Chats page's settings ---------------------------------------------------------------------------------

  var ask = document.getElementById("notify-ask");
  var panel = document.getElementById("notify-settings");
  if (panel) {
    var boxes = Array.prototype.slice.call(panel.querySelectorAll("input[data-setting]"));
    var refresh = function () {
      var current = settings();
      var permission = NotificationAPI ? NotificationAPI.permission : "unsupported";
      boxes.forEach(function (input) { input.checked = current[input.getAttribute("data-setting")]; });
      document.getElementById("notify-desktop").disabled = permission !== "granted";
      document.getElementById("notify-blocked").hidden = permission !== "denied";
      document.getElementById("notify-unsupported").hidden = permission !== "unsupported";
      var later = false;
      try { later = window.localStorage.getItem(storageKey + "-later") === "1"; } catch (error) { later = false; }
      ask.hidden = permission !== "default" || later;
      panel.hidden = false;
    };
    boxes.forEach(function (input) {
      input.addEventListener("change", function () {
        var current = settings();
        current[input.getAttribute("data-setting")] = input.checked;
        try { window.localStorage.setItem(storageKey, JSON.stringify(current)); } catch (error) { /* kept for this page only */ }
        if (!input.checked && input.getAttribute("data-setting") === "ringtone") { sound("silence"); }
      });
    });
    document.getElementById("notify-allow").addEventListener("click", function () {
      var asked = NotificationAPI.requestPermission(refresh);
      if (asked && asked.then) { asked.then(refresh); }
    });
    document.getElementById("notify-later").addEventListener("click", function () {
      try { window.localStorage.setItem(storageKey + "-later", "1"); } catch (error) { /* asked again next time */ }
      ask.hidden = true;
      document.getElementById("notify-settings").open = true;
    });
    refresh();
  }

  // ---- Pushes with no page open (the Chats page's settings) ------------------------------------------------------

  // The browser subscribes with the gateway's key (the permission to notify asked first, from the member's click),
  // through the push worker, registered with a scope of its own; the gateway is given the subscription with this
  // page's token and sets the member's pusher at the homeserver. Turning it off undoes both.
  var pushBox = document.getElementById("notify-push-settings");
  var pushWorkers = navigator.serviceWorker;
  if (pushBox && pageToken && window.fetch) {
    var pushInput = document.getElementById("notify-push"), previewsInput = document.getElementById("notify-previews");
    var pushError = document.getElementById("notify-push-error");
    var pushScope = pushBox.getAttribute("data-scope"), pushKey = pushBox.getAttribute("data-key");
    var pushState = { on: pushBox.getAttribute("data-on") === "1", previews: pushBox.getAttribute("data-previews") === "1" };
    var showPush = function () {
      pushInput.checked = pushState.on;
      previewsInput.checked = pushState.previews;
      previewsInput.disabled = !pushState.on;
    };
    var pushFailed = function (error) {
      var reason = error && error.message ? error.message : String(error);
      pushError.textContent = pushBox.getAttribute("data-failed").replace("{reason}", reason);
      pushError.hidden = false;
      showPush();
    };
    var tellGateway = function (body) {
      return window.fetch("/chats/push", {
        method: "POST", credentials: "same-origin", body: JSON.stringify(body),
        headers: { "Content-Type": "application/json", "Accept": "application/json", "X-Gatehouse-CSRF": pageToken }
      }).then(function (answer) {
        return answer.json().catch(function () { return {}; }).then(function (json) {
          if (!answer.ok) { throw new Error(json.message || json.error || String(answer.status)); }
          pushState = { on: !!json.push, previews: !!json.previews };
          pushError.hidden = true;
          showPush();
        });
      });
    };
    var held = function () {
      return pushWorkers.getRegistration(pushScope).then(function (registration) {
        return registration ? registration.pushManager.getSubscription() : null;
      });
    };
    // The worker, once active (a subscription needs one).
    var pushRegistration = function () {
      return pushWorkers.register(pushBox.getAttribute("data-worker"), { scope: pushScope }).then(function (registration) {
        return new Promise(function (resolve) {
          var pending = registration.installing || registration.waiting;
          if (registration.active || !pending) { resolve(registration); return; }
          pending.addEventListener("statechange", function () { if (pending.state === "activated") { resolve(registration); } });
        });
      });
    };
    // A subscription made with another key (the gateway's changed) is replaced.
    var sameKey = function (subscription) {
      var key = subscription.options && subscription.options.applicationServerKey;
      if (!key) { return true; }
      var mine = model.keyBytes(pushKey), theirs = new Uint8Array(key);
      return mine.length === theirs.length && mine.every(function (byte, index) { return byte === theirs[index]; });
    };
    var subscribe = function (registration) {
      return registration.pushManager.getSubscription().then(function (subscription) {
        if (subscription && sameKey(subscription)) { return subscription; }
        return Promise.resolve(subscription && subscription.unsubscribe()).then(function () {
          // A push service out of reach leaves the browser waiting: said after a while rather than never.
          var timeout = new Promise(function (resolve, reject) {
            window.setTimeout(function () { reject(new Error(pushBox.getAttribute("data-timeout"))); }, 20000);
          });
          return Promise.race([registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: model.keyBytes(pushKey) }), timeout]);
        });
      });
    };
    var turnOn = function () {
      var asked = NotificationAPI.permission === "granted" ? "granted" : NotificationAPI.requestPermission();
      return Promise.resolve(asked).then(function (permission) {
        if (panel) { refresh(); }
        if (permission !== "granted") { throw new Error(pushBox.getAttribute("data-blocked")); }
        return pushRegistration();
      }).then(subscribe).then(function (subscription) {
        return tellGateway({ subscription: subscription.toJSON(), previews: pushState.previews });
      });
    };
    var turnOff = function () {
      return tellGateway({ off: true }).then(held).then(function (subscription) { return subscription && subscription.unsubscribe(); });
    };
    if (!pushWorkers || !window.PushManager || !NotificationAPI || !pushScope) {
      document.getElementById("notify-push-unsupported").hidden = false;
      pushInput.disabled = true;
      previewsInput.disabled = true;
    } else {
      pushInput.addEventListener("change", function () {
        pushError.hidden = true;
        (pushInput.checked ? turnOn() : turnOff()).catch(pushFailed);
      });
      previewsInput.addEventListener("change", function () {
        tellGateway({ previews: previewsInput.checked }).catch(pushFailed);
      });
      held().then(function (subscription) {
        if (model.pushStep(pushState.on, !!subscription) === "unsubscribe") { return subscription.unsubscribe(); }
      }).catch(function () { /* nothing held here */ });
      showPush();
    }
    pushBox.hidden = false;
  }
})();
