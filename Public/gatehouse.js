// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";
  // Toasts (gatehouse-toasts.js) in this page's live region.
  window.gatehouseToast = function (message, action) {
    var area = document.getElementById("toasts");
    if (area) { window.GatehouseToasts.show(area, message, action); }
  };

  function ready(callback) {
    if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", callback); } else { callback(); }
  }

  ready(function () {
    // A toast the server asked for: inserted after load so that screen readers announce it; the address loses its
    // ?toast= so that a reload does not repeat it.
    var pending = document.getElementById("pending-toast");
    if (pending) {
      var message = pending.content ? pending.content.textContent : pending.textContent;
      var action = pending.getAttribute("data-action-url")
        ? { url: pending.getAttribute("data-action-url"), label: pending.getAttribute("data-action-label") } : null;
      window.setTimeout(function () { window.gatehouseToast(message.trim(), action); }, 100);
      if (window.history && window.history.replaceState) {
        var url = new URL(window.location.href);
        url.searchParams.delete("toast");
        url.searchParams.delete("reason");
        window.history.replaceState(null, "", url.pathname + url.search + url.hash);
      }
    }

    // "Loading <app>": on to the app at once, replacing this page in the history (so that Back skips it); if the app
    // has not answered after a while, say so and offer to wait or go back. Without JavaScript a refresh goes on.
    var loading = document.querySelector(".loading-page[data-target]");
    if (loading) {
      var notice = document.getElementById("slow-notice");
      var slowAfter = Number(loading.getAttribute("data-slow-after")) * 1000;
      var slowTimer = window.setTimeout(function () { notice.hidden = false; }, slowAfter);
      document.getElementById("keep-waiting").addEventListener("click", function () {
        notice.hidden = true;
        window.clearTimeout(slowTimer);
        slowTimer = window.setTimeout(function () { notice.hidden = false; }, slowAfter * 2);
      });
      window.location.replace(loading.getAttribute("data-target"));
    }

    // The unread count on the Chats tab, as the live script hears it (`gatehouse:unread`).
    var chatsTab = document.querySelector("#tab-chats[data-unread]");
    if (chatsTab) {
      window.addEventListener("gatehouse:unread", function (event) {
        var count = event.detail.unread;
        var badge = chatsTab.querySelector(".tab-badge");
        if (!count) { if (badge) { badge.remove(); } return; }
        if (!badge) {
          badge = document.createElement("span");
          badge.className = "tab-badge";
          chatsTab.appendChild(badge);
        }
        badge.textContent = String(count);
      });
    }

    // The member's menu closes with Escape (focus back on its button) and when the member clicks or taps elsewhere.
    var menu = document.getElementById("member-menu");
    if (menu) {
      menu.addEventListener("keydown", function (event) {
        if (event.key === "Escape" && menu.open) {
          menu.open = false;
          document.getElementById("member-menu-button").focus();
        }
      });
      document.addEventListener("click", function (event) {
        if (menu.open && !menu.contains(event.target)) { menu.open = false; }
      });
    }

    // The web apps filtered as the member types: every word must appear in an app's name or description (case and
    // accents aside); groups left empty hide, the count is announced, Enter opens the first match, Escape clears.
    var filter = document.getElementById("app-filter");
    if (filter) {
      var fold = function (text) { return text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase(); };
      var tiles = Array.prototype.map.call(document.querySelectorAll(".apps li"), function (item) {
        return { item: item, link: item.querySelector("a"), text: fold(item.textContent) };
      });
      var noMatch = document.getElementById("no-match");
      var count = document.getElementById("app-filter-count");
      var announceTimer = null;
      var apply = function () {
        var words = fold(filter.value).split(/\s+/).filter(Boolean);
        var shown = tiles.filter(function (tile) {
          var matches = words.every(function (word) { return tile.text.indexOf(word) !== -1; });
          tile.item.hidden = !matches;
          return matches;
        });
        document.querySelectorAll(".app-group").forEach(function (group) {
          group.hidden = !group.querySelector(".apps li:not([hidden])");
        });
        var message = words.length === 0 ? "" : shown.length === 0
          ? filter.getAttribute("data-none").replace("{query}", filter.value.trim())
          : (shown.length === 1 ? filter.getAttribute("data-one") : filter.getAttribute("data-many").replace("{count}", shown.length));
        noMatch.hidden = shown.length > 0;
        noMatch.textContent = shown.length > 0 ? "" : message;
        // Announced once the member pauses, not for every letter.
        window.clearTimeout(announceTimer);
        announceTimer = window.setTimeout(function () { count.textContent = message; }, 500);
        return shown;
      };
      filter.addEventListener("input", apply);
      filter.addEventListener("keydown", function (event) {
        if (event.key === "Enter") {
          var first = apply()[0];
          if (first && filter.value.trim()) { event.preventDefault(); first.link.click(); }
        } else if (event.key === "Escape" && filter.value) {
          event.preventDefault();
          filter.value = "";
          apply();
        }
      });
      if (filter.value) { apply(); }
    }

    // A page that answered a form with its problems stands in the history as the page's own address (a GET), so that
    // Back or a reload never asks to send the form again ("Confirm Form Resubmission").
    var formPage = document.querySelector("meta[name=gatehouse-form-page]");
    if (formPage && window.history.replaceState) { window.history.replaceState(null, "", formPage.getAttribute("content")); }

    // Validation errors: move focus to the summary so that keyboard and screen-reader users start there.
    var summary = document.getElementById("error-summary");
    if (summary) { summary.focus(); }

    // A kept form goes on at once: the page says so (and stays out of the history); without a script its button sends it.
    var keptSend = document.querySelector("a[data-auto-follow]");
    if (keptSend) {
      var keptStatus = document.getElementById("kept-status");
      if (keptStatus) { keptStatus.textContent = keptStatus.getAttribute("data-sending"); }
      window.setTimeout(function () { window.location.replace(keptSend.href); }, 600);
    }

    // The resend countdown: the button waits until the server would accept it.
    var resend = document.querySelector("form.resend[data-resend-at]");
    if (resend) {
      var button = resend.querySelector("button");
      var label = document.getElementById("resend-countdown");
      var announce = document.getElementById("resend-announce");
      var resendAt = Number(resend.getAttribute("data-resend-at")) * 1000;
      var announced = false;
      var tick = function () {
        var seconds = Math.floor((resendAt - Date.now()) / 1000);
        if (seconds > 0) {
          button.disabled = true;
          // The countdown the member sees moves every second; screen readers hear it at the start and every 15 s.
          var text = label.getAttribute("data-wait").replace("{seconds}", String(seconds));
          label.textContent = text;
          if (announce && (!announced || seconds % 15 === 0)) { announce.textContent = text; announced = true; }
          button.setAttribute("aria-label", button.textContent + " (" + seconds + ")");
          window.setTimeout(tick, 1000);
        } else {
          button.disabled = false;
          button.removeAttribute("aria-label");
          label.textContent = label.getAttribute("data-ready");
          if (announce) { announce.textContent = label.textContent; }
        }
      };
      label.textContent = "";
      tick();
    }

    // Other tabs of this browser: told when this page is the end of an upgrade or of a session (`content`), and told
    // by the others. A toast offers the reload; nothing reloads by itself, so no tab loses what is typed in it.
    var otherTabs = document.querySelector("meta[name=gatehouse-other-tabs]");
    if (otherTabs && window.BroadcastChannel) {
      var channel = new BroadcastChannel("gatehouse");
      var happened = otherTabs.getAttribute("content");
      if (happened) { channel.postMessage(happened); }
      channel.onmessage = function (event) {
        var text = otherTabs.getAttribute(event.data === "upgraded" ? "data-upgraded" : event.data === "signed-out" ? "data-signed-out" : "");
        if (text && event.data !== happened) {
          window.gatehouseToast(text, { url: window.location.href, label: otherTabs.getAttribute("data-reload") });
        }
      };
    }

    // The code's remaining time, counted down where the member sees it; its end is announced.
    var expiry = document.getElementById("code-expiry");
    if (expiry) {
      var expiresAt = Number(expiry.getAttribute("data-expires-at")) * 1000;
      var count = function () {
        var left = Math.floor((expiresAt - Date.now()) / 1000);
        if (left > 0) {
          var time = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
          expiry.textContent = expiry.getAttribute("data-left").replace("{time}", time);
          window.setTimeout(count, 1000);
        } else {
          expiry.textContent = expiry.getAttribute("data-expired");
          var live = document.getElementById("resend-announce");
          if (live) { live.textContent = expiry.textContent; }
        }
      };
      count();
    }

    // A person's stories, marked seen once the member sees them (the page's GET sends nothing: another site could load it).
    var stories = document.querySelector("main[data-seen]");
    if (stories) {
      var markSeen = function () {
        if (document.visibilityState !== "visible" || !stories.hasAttribute("data-seen")) { return; }
        var url = stories.getAttribute("data-seen");
        stories.removeAttribute("data-seen");
        var token = document.querySelector("input[name=csrf]").value;
        var body = new URLSearchParams({ csrf: token, room: stories.getAttribute("data-room") });
        // keepalive: a member who moves on at once still has the story marked seen.
        fetch(url, { method: "POST", credentials: "same-origin", body: body, keepalive: true,
          headers: { "Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded", "X-Gatehouse-CSRF": token } })
          .then(function (response) { if (response.ok) { stories.setAttribute("data-marked-seen", ""); } })
          .catch(function () {});
      };
      markSeen();
      document.addEventListener("visibilitychange", markSeen);
    }

    // Texts with a limit (`data-limit`, counted as the gateway counts it: UTF-8 bytes or characters): over it, the
    // field says so in the page's language and the form is not sent (its own validity), so nothing is cut or lost.
    // No `maxlength`: it would cut a paste without a word, and counts neither bytes nor characters.
    var characters = window.Intl && Intl.Segmenter ? new Intl.Segmenter(document.documentElement.lang || undefined, { granularity: "grapheme" }) : null;
    function measured(field) {
      var text = field.value.trim();
      if (field.getAttribute("data-limit-unit") === "bytes") { return new TextEncoder().encode(text).length; }
      if (characters) { var count = 0; for (var piece of characters.segment(text)) { count += 1; } return count; }
      return Array.from(text).length;
    }
    function checkLimit(field) {
      var limit = Number(field.getAttribute("data-limit"));
      var error = document.getElementById(field.getAttribute("data-limit-error"));
      var used = measured(field);
      var over = used > limit;
      var message = over ? field.getAttribute("data-too-long").replace("{percent}", String(Math.ceil(used * 100 / limit))) : "";
      field.setCustomValidity(message);
      // The server's own word on the field (an error it rendered) stays until the member changes the text.
      if (!over && field.hasAttribute("data-server-error")) { return true; }
      if (over) { field.setAttribute("aria-invalid", "true"); } else { field.removeAttribute("aria-invalid"); }
      if (error) {
        error.hidden = !over;
        error.textContent = message;
      }
      return !over;
    }
    document.querySelectorAll("textarea[data-limit]").forEach(function (field) {
      field.addEventListener("input", function () { field.removeAttribute("data-server-error"); checkLimit(field); });
      checkLimit(field);
    });
    window.gatehouseCheckLimit = checkLimit;

    // A form on its way: its button says so and cannot send it twice (the server takes each step once anyway). A page
    // shown again from the back-forward cache gets its buttons back.
    var sending = document.querySelector("meta[name=gatehouse-sending]");
    document.addEventListener("submit", function (event) {
      var form = event.target;
      if (event.defaultPrevented || !form || form.method.toLowerCase() !== "post") { return; }
      if (form.getAttribute("data-sending") === "1") { event.preventDefault(); return; }
      form.setAttribute("data-sending", "1");
      form.setAttribute("aria-busy", "true");
      var button = event.submitter || form.querySelector("button[type=submit]");
      if (button && sending) {
        button.setAttribute("data-label", button.textContent);
        // After this event: a disabled button's own value would not be sent.
        window.setTimeout(function () { button.disabled = true; button.textContent = sending.getAttribute("content"); }, 0);
      }
    });
    window.addEventListener("pageshow", function (event) {
      if (!event.persisted) { return; }
      document.querySelectorAll("form[data-sending]").forEach(function (form) {
        form.removeAttribute("data-sending");
        form.removeAttribute("aria-busy");
        form.querySelectorAll("button[data-label]").forEach(function (button) {
          button.disabled = false;
          button.textContent = button.getAttribute("data-label");
        });
      });
    });

    // Username availability while typing: debounced, through the JSON endpoint; the server checks again on submit.
    var username = document.querySelector("input[data-check-url]");
    if (username) {
      var output = document.getElementById("username-availability");
      var timer = null;
      var latest = 0;
      username.addEventListener("input", function () {
        window.clearTimeout(timer);
        var value = username.value.trim();
        if (!value) { output.textContent = ""; output.className = "small"; return; }
        timer = window.setTimeout(function () {
          var request = ++latest;
          output.textContent = username.getAttribute("data-checking");
          output.className = "small muted";
          fetch(username.getAttribute("data-check-url") + "?username=" + encodeURIComponent(value), {
            // The page's token: the gateway answers its own pages' scripts only (no app's script can read it).
            headers: { "Accept": "application/json", "X-Gatehouse-CSRF": username.form.elements.csrf.value }, credentials: "same-origin"
          }).then(function (response) { return response.json(); }).then(function (answer) {
            if (request !== latest) { return; }
            output.textContent = answer.message;
            output.className = answer.available ? "small available" : "small field-error";
          }).catch(function () {
            // The server checks again on submit; the member only learns that the live check could not run.
            if (request === latest) {
              output.textContent = "";
              window.gatehouseToast(username.getAttribute("data-network-error"));
            }
          });
        }, 350);
      });
    }
  });
})();
