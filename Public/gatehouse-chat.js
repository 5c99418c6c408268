// The chat's live parts: the room list and a room's timeline kept current through the page's event stream, sending
// without a reload (pending, then sent, or failed with Retry), Enter to send and Shift+Enter for a new line, older
// messages loaded at the top, read markers as the member reads. Every form works without this file. Text from the
// homeserver is only ever set as text (textContent), never as markup.
(function () {
  "use strict";
  var main = document.querySelector("main[data-chat]");
  if (!main) { return; }
  var csrf = (document.querySelector("input[name=csrf]") || {}).value || "";
  var roomID = main.getAttribute("data-room");
  var lang = document.documentElement.lang || undefined;
  var timeFormat = new Intl.DateTimeFormat(lang, { hour: "2-digit", minute: "2-digit" });
  var dayFormat = new Intl.DateTimeFormat(lang, { weekday: "long", day: "numeric", month: "long" });

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = text; }
    return node;
  }

  // Lines and rows come rendered by the gateway (its one renderer of each, `chat-message` and `chat-room-row`): the
  // script only puts them in place by id. The markup is the gateway's own, every text in it escaped there.
  function fromMarkup(html) {
    var holder = document.createElement("template");
    holder.innerHTML = html;
    return holder.content;
  }

  // Times in the member's own time zone and language.
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (time) {
      var value = time.getAttribute("datetime");
      var date = new Date(value);
      if (isNaN(date.getTime())) { return; }
      time.textContent = value.length === 10 ? dayFormat.format(date) : timeFormat.format(date);
    });
  }

  function post(url, fields) {
    var body = new URLSearchParams();
    body.set("csrf", csrf);
    Object.keys(fields).forEach(function (key) { body.set(key, fields[key]); });
    return fetch(url, {
      method: "POST", credentials: "same-origin", body: body,
      headers: { "Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded", "X-Gatehouse-CSRF": csrf }
    }).then(function (response) {
      if (response.ok) { return response.json(); }
      // The gateway's refusal says why, in the member's language; a refusal sending it again cannot mend says so.
      return response.json().catch(function () { return {}; }).then(function (answer) {
        var error = new Error(answer.message || "status " + response.status);
        error.final = response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429;
        error.message = answer.message || "";
        throw error;
      });
    });
  }

  // MARK: the room list

  // The list as the stream tells it: its order by room id, and the rows that changed, rendered by the gateway (the
  // list's own row). A row the stream did not send again, or sent as it was, stays the element it was (its focus, a
  // button under the pointer); a room no longer in the order goes.
  function showRooms(order, rows) {
    var list = document.getElementById("room-list");
    if (!list || !order) { return; }
    var shown = {};
    Array.prototype.forEach.call(list.children, function (item) { shown[item.getAttribute("data-room")] = item; });
    var items = [];
    order.forEach(function (id) {
      var item = shown[id];
      if (rows && rows[id]) {
        var told = fromMarkup(rows[id]).querySelector("li.room");
        localTimes(told);
        if (!item || !item.isEqualNode(told)) { item = told; }
      }
      if (item) { items.push(item); }
    });
    var same = items.length === list.children.length && items.every(function (item, index) { return list.children[index] === item; });
    if (!same) { list.replaceChildren.apply(list, items); }
    var none = document.getElementById("no-rooms");
    if (none) { none.hidden = items.length > 0; }
  }

  // MARK: a room

  var timeline = document.getElementById("timeline");
  var lastDay = null;
  if (timeline) {
    var days = timeline.querySelectorAll("li.day");
    if (days.length) { lastDay = days[days.length - 1].getAttribute("data-day"); }
  }

  function dayItem(day) {
    var item = element("li", "day");
    item.setAttribute("data-day", day);
    var time = element("time");
    time.setAttribute("datetime", day);
    item.appendChild(time);
    return item;
  }

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
  }

  function scrollToEnd() { window.scrollTo(0, document.documentElement.scrollHeight); }

  function markRead(eventID) {
    if (!eventID || document.visibilityState !== "visible") { return; }
    post("/chats/read", { room: roomID, event: eventID }).catch(function () {});
  }

  function addMessage(message) {
    if (!timeline || !message.html) { return; }
    var none = document.getElementById("no-messages");
    if (none) { none.hidden = true; }
    var item = fromMarkup(message.html).querySelector("li.message");
    if (!item) { return; }
    localTimes(item);
    reveal(item);
    var present = timeline.querySelector('li[data-id="' + CSS.escape(message.id) + '"]');
    if (message.replaces) {
      // An edit: the line it edits, whole and marked edited, in that line's place (if the page has it).
      if (present) {
        present.replaceWith(item);
        showSeen();
      }
      return;
    }
    // The echo of a message this page sent: the line it showed at once becomes the message as the gateway renders
    // it (its formatting, its Edit and Delete), whether or not the send's answer came first.
    var pending = message.txn ? timeline.querySelector('li[data-txn="' + CSS.escape(message.txn) + '"]') : null;
    if (present && !pending) { return; }
    var follow = nearBottom();
    if (pending) {
      pending.replaceWith(item);
    } else {
      if (message.day !== lastDay) {
        var separator = dayItem(message.day);
        localTimes(separator);
        timeline.appendChild(separator);
        lastDay = message.day;
      }
      timeline.appendChild(item);
    }
    if (follow || message.mine) { scrollToEnd(); }
    if (!message.mine) { markRead(message.id); }
    showJump();
  }

  // A line's reactions as the gateway renders them (`chat-reactions`), in place of the ones it shows.
  function showReactions(change) {
    var present = timeline && timeline.querySelector('li.message[data-id="' + CSS.escape(change.id) + '"] .reactions');
    var told = fromMarkup(change.html).querySelector(".reactions");
    if (present && told && !present.isEqualNode(told)) { present.replaceWith(told); }
  }

  // "Seen" (or "Seen by 2", the names in its title) under the member's latest line that others have read.
  var seen = timeline ? {
    line: timeline.getAttribute("data-seen-line"), text: timeline.getAttribute("data-seen-text"), names: timeline.getAttribute("data-seen-names")
  } : {};
  function showSeen(told) {
    if (told) { seen = told; }
    var shown = timeline && timeline.querySelector(".seen");
    if (shown) { shown.remove(); }
    var line = seen.line && timeline.querySelector('li.message[data-id="' + CSS.escape(seen.line) + '"] .meta');
    if (!line) { return; }
    var mark = element("span", "seen", " · ");
    mark.title = seen.names;
    mark.appendChild(element("span", "seen-text", seen.text));
    mark.appendChild(element("span", "visually-hidden", " (" + seen.names + ")"));
    line.appendChild(mark);
  }

  // "Jump to the latest" while the member is above the newest lines.
  var jump = document.getElementById("jump-latest");
  function showJump() {
    if (jump) { jump.hidden = nearBottom() && !timeline.getAttribute("data-latest"); }
  }

  // Sending: shown at once as pending; sent, or failed with Retry.
  var composer = document.getElementById("composer");
  var text = document.getElementById("composer-text");
  // The member's own line while it is sent: the page's template of it (the same renderer's), with the text and now.
  var pendingTemplate = document.getElementById("pending-line");
  function pendingLine(body) {
    var item = pendingTemplate.content.querySelector("li.message").cloneNode(true);
    item.querySelector(".body").textContent = body;
    item.querySelector("time").setAttribute("datetime", new Date().toISOString());
    return item;
  }

  // A line sent again keeps its transaction id: if the first try did reach the homeserver (an answer lost on a slow
  // link), the homeserver takes the second as the same message, never as a second one.
  function send(body, existing, replyTo, mentions) {
    var txn = (existing && existing.getAttribute("data-txn")) || "g" + Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
    var item = existing || pendingLine(body);
    item.classList.add("pending");
    item.classList.remove("failed");
    item.setAttribute("data-txn", txn);
    var status = item.querySelector(".status") || element("span", "status");
    status.setAttribute("role", "status");
    status.textContent = main.getAttribute("data-pending");
    item.appendChild(status);
    if (!existing) {
      localTimes(item);
      timeline.appendChild(item);
      var none = document.getElementById("no-messages");
      if (none) { none.hidden = true; }
      scrollToEnd();
    }
    post("/chats/send", { room: roomID, text: body, txn: txn, reply_to: replyTo || "", mentions: (mentions || []).join(",") }).then(function (answer) {
      item.classList.remove("pending");
      if (!item.getAttribute("data-id")) { item.setAttribute("data-id", answer.event_id); }
      status.textContent = main.getAttribute("data-sent");
    }, function (error) {
      item.classList.remove("pending");
      item.classList.add("failed");
      status.textContent = main.getAttribute("data-failed") + (error.message ? ": " + error.message : "") + " ";
      if (error.final) {
        // Sending it again would be refused again: the text goes back to the composer to change, never lost.
        if (text && !text.value.trim()) {
          text.value = body;
          text.dispatchEvent(new Event("input"));
        }
        return;
      }
      var retry = element("button", "link-button", main.getAttribute("data-retry"));
      retry.type = "button";
      retry.addEventListener("click", function () {
        retry.remove();
        send(body, item, replyTo, mentions);
      });
      status.appendChild(retry);
    });
  }

  // A member's own lines offer Edit and Delete (the buttons need this script: the page shows them once it runs).
  function reveal(root) {
    Array.prototype.forEach.call(root.querySelectorAll ? root.querySelectorAll(".line-actions") : [], function (actions) { actions.hidden = false; });
  }

  // Editing one's own message: the composer holds its text, says so, and saves it in its place (Escape stops).
  var editing = null, draftBeforeEditing = "";
  var editingNote = document.getElementById("composer-editing");
  var sendButton = document.getElementById("composer-send");
  function edit(line) {
    // What the member was writing waits while they edit, and comes back after.
    if (!editing) { draftBeforeEditing = text.value; }
    editing = line.getAttribute("data-id");
    text.value = line.querySelector(".body").innerText.trim();
    text.dispatchEvent(new Event("input"));
    editingNote.hidden = false;
    sendButton.textContent = main.getAttribute("data-save");
    text.focus();
  }
  function stopEditing() {
    editing = null;
    editingNote.hidden = true;
    sendButton.textContent = main.getAttribute("data-send");
    text.value = draftBeforeEditing;
    draftBeforeEditing = "";
    text.dispatchEvent(new Event("input"));
  }

  // Replying: the composer says to whom and what (as text), and the message sent answers it.
  var replyNote = document.getElementById("composer-replying");
  var replyField = document.getElementById("composer-reply-to");
  function reply(line) {
    if (editing) { stopEditing(); }
    replyField.value = line.getAttribute("data-id");
    var body = line.querySelector(".body, .note");
    var said = (body ? body.textContent : "").trim();
    document.getElementById("composer-replying-to").textContent =
      line.querySelector(".sender").textContent.trim() + ": " + (said.length > 100 ? said.slice(0, 100) + "…" : said);
    replyNote.hidden = false;
    text.focus();
  }
  function stopReplying() {
    replyField.value = "";
    replyNote.hidden = true;
  }

  // A reply's quote opens the answered message where it is in the timeline, older lines loaded until it is there.
  function jumpTo(id, tries) {
    var line = timeline.querySelector('li.message[data-id="' + CSS.escape(id) + '"]');
    if (line) {
      line.setAttribute("tabindex", "-1");
      line.scrollIntoView({ block: "center" });
      line.focus({ preventScroll: true });
      line.classList.add("found");
      window.setTimeout(function () { line.classList.remove("found"); }, 2000);
      return;
    }
    if (tries < 10 && timeline.getAttribute("data-older")) {
      var loading = loadOlder();
      if (loading) { loading.then(function () { jumpTo(id, tries + 1); }); }
    }
  }
  function showError(error) {
    var field = document.getElementById("composer-error");
    field.textContent = error.message || main.getAttribute("data-failed");
    field.hidden = false;
  }

  // A draft is kept per room while the member goes elsewhere in this tab and comes back (the tab's own storage,
  // gone with the tab: nothing of it outlives the browser's session on a shared computer). While a message is being
  // edited, the draft kept is the one from before.
  var draftKey = "gatehouse-draft:" + roomID;
  function keepDraft() {
    if (editing) { return; }
    try {
      if (text.value) { window.sessionStorage.setItem(draftKey, text.value); } else { window.sessionStorage.removeItem(draftKey); }
    } catch (error) { /* a draft for this page alone */ }
  }
  if (composer && text && !text.value) {
    try {
      var kept = window.sessionStorage.getItem(draftKey);
      if (kept) {
        text.value = kept;
        text.dispatchEvent(new Event("input"));
      }
    } catch (error) { /* nothing kept */ }
  }

  if (composer && text && timeline) {
    text.addEventListener("input", keepDraft);
    composer.addEventListener("submit", function (event) {
      event.preventDefault();
      var body = text.value.trim();
      if (!body || (window.gatehouseCheckLimit && !window.gatehouseCheckLimit(text))) { return; }
      if (editing) {
        var original = editing;
        post("/chats/edit", { room: roomID, event: original, text: body }).then(function () {
          if (editing === original) { stopEditing(); }
        }, showError);
        return;
      }
      text.value = "";
      keepDraft();
      send(body, null, replyField.value, mentioned(body));
      picked = {};
      stopReplying();
    });
    text.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        composer.requestSubmit();
      }
      if (event.key === "Escape" && editing) {
        event.preventDefault();
        stopEditing();
      }
      if (event.key === "Escape" && replyField.value) {
        event.preventDefault();
        stopReplying();
      }
      // Up in an empty composer edits the member's last message, as in other chats.
      if (event.key === "ArrowUp" && !text.value && !editing) {
        var own = timeline.querySelectorAll("li.message.mine[data-id] .line-actions");
        if (own.length) {
          event.preventDefault();
          edit(own[own.length - 1].closest("li.message"));
        }
      }
    });
    timeline.addEventListener("click", function (event) {
      var quote = event.target.closest ? event.target.closest("button.reply-to[data-reply]") : null;
      if (quote) {
        jumpTo(quote.getAttribute("data-reply"), 0);
        return;
      }
      var reaction = event.target.closest ? event.target.closest(".reactions button.reaction[data-key]") : null;
      if (reaction) {
        react(reaction.closest("li.message[data-id]"), reaction.getAttribute("data-key"));
        return;
      }
      var button = event.target.closest ? event.target.closest("button[data-action]") : null;
      var line = button && button.closest("li.message[data-id]");
      if (!line) { return; }
      if (button.getAttribute("data-action") === "reply") { reply(line); }
      if (button.getAttribute("data-action") === "react") { openPicker(line, button); }
      if (button.getAttribute("data-action") === "edit") {
        stopReplying();
        edit(line);
      }
      if (button.getAttribute("data-action") === "delete" && window.confirm(main.getAttribute("data-delete-confirm"))) {
        post("/chats/delete", { room: roomID, event: line.getAttribute("data-id") }).catch(showError);
      }
    });
    reveal(timeline);
  }

  // Mentions: `@` and the start of a name (or id) suggests the room's members; Up and Down choose, Enter or Tab
  // takes one (its name goes into the text), Escape closes. A message mentions (`m.mentions`) the members taken
  // whose name it still holds when sent.
  var members = [];
  try { members = JSON.parse((text && text.getAttribute("data-members")) || "[]"); } catch (error) { members = []; }
  var mentionList = document.getElementById("mention-list");
  var picked = {}, choices = [], chosen = 0, mentionStart = -1;
  function mentioned(body) {
    return Object.keys(picked).filter(function (name) { return body.indexOf("@" + name) >= 0; }).map(function (name) { return picked[name]; });
  }
  function closeMentions() {
    if (!mentionList) { return; }
    mentionList.hidden = true;
    mentionList.replaceChildren();
    text.removeAttribute("aria-activedescendant");
    choices = [];
  }
  function showChoice(index) {
    chosen = (index + choices.length) % choices.length;
    Array.prototype.forEach.call(mentionList.children, function (item, at) { item.setAttribute("aria-selected", at === chosen ? "true" : "false"); });
    text.setAttribute("aria-activedescendant", "mention-" + chosen);
  }
  function takeMention(member) {
    var before = text.value.slice(0, mentionStart), after = text.value.slice(text.selectionStart);
    text.value = before + "@" + member.name + " " + after;
    picked[member.name] = member.id;
    var caret = before.length + member.name.length + 2;
    text.setSelectionRange(caret, caret);
    closeMentions();
    text.dispatchEvent(new Event("input"));
  }
  function suggestMentions() {
    if (!mentionList || !members.length) { return; }
    var typed = /(^|\s)@([^\s@]{0,30})$/.exec(text.value.slice(0, text.selectionStart));
    if (!typed) { closeMentions(); return; }
    var query = typed[2].toLowerCase();
    mentionStart = text.selectionStart - typed[2].length - 1;
    choices = members.filter(function (member) {
      return member.name.toLowerCase().indexOf(query) >= 0 || member.id.toLowerCase().indexOf(query) >= 0;
    }).slice(0, 8);
    if (!choices.length) { closeMentions(); return; }
    mentionList.replaceChildren.apply(mentionList, choices.map(function (member, index) {
      var item = element("li", "", member.name);
      item.id = "mention-" + index;
      item.setAttribute("role", "option");
      item.appendChild(element("span", "muted small", " " + member.id));
      item.addEventListener("mousedown", function (event) {
        event.preventDefault();
        takeMention(member);
      });
      return item;
    }));
    mentionList.hidden = false;
    showChoice(0);
  }
  if (text && mentionList) {
    text.addEventListener("input", function () { if (document.activeElement === text) { suggestMentions(); } });
    text.addEventListener("blur", closeMentions);
    // Before the composer's own keys (Enter sends): while the list is open, its keys are the list's.
    text.addEventListener("keydown", function (event) {
      if (!choices.length) { return; }
      var handled = true;
      if (event.key === "ArrowDown") { showChoice(chosen + 1); }
      else if (event.key === "ArrowUp") { showChoice(chosen - 1); }
      else if (event.key === "Enter" || event.key === "Tab") { takeMention(choices[chosen]); }
      else if (event.key === "Escape") { closeMentions(); }
      else { handled = false; }
      if (handled) {
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    }, true);
  }

  // Typing: said when the member starts, again every 15 s while they go on, and stopped when they send, empty the
  // composer, pause for 6 s or leave the page; the homeserver ends it by itself if none of that arrives.
  var typingSince = 0, typingPause = null;
  function typing(on) {
    window.clearTimeout(typingPause);
    if (on) { typingPause = window.setTimeout(function () { typing(false); }, 6000); }
    if (on ? Date.now() - typingSince < 15000 : !typingSince) { return; }
    typingSince = on ? Date.now() : 0;
    var body = new URLSearchParams({ csrf: csrf, room: roomID, typing: on ? "1" : "0" });
    fetch("/chats/typing", {
      method: "POST", credentials: "same-origin", body: body, keepalive: true,
      headers: { "Accept": "application/json", "X-Gatehouse-CSRF": csrf }
    }).catch(function () {});
  }
  if (composer && text) {
    text.addEventListener("input", function () { typing(!editing && text.value.trim() !== ""); });
    composer.addEventListener("submit", function () { typing(false); });
    window.addEventListener("pagehide", function () { typing(false); });
  }

  // Reacting: a line's React opens the quick reactions and a field for any other; a reaction shown is pressed to
  // add the member's own, or to take it back.
  var picker = null;
  function closePicker(focusBack) {
    if (!picker) { return; }
    var opener = picker.opener;
    picker.remove();
    picker = null;
    if (focusBack && opener) { opener.focus(); }
  }
  function react(line, key) {
    post("/chats/react", { room: roomID, event: line.getAttribute("data-id"), key: key }).catch(showError);
  }
  function openPicker(line, opener) {
    closePicker(false);
    picker = document.getElementById("reaction-picker").content.querySelector(".reaction-picker").cloneNode(true);
    picker.opener = opener;
    picker.addEventListener("click", function (event) {
      var choice = event.target.closest("button.reaction-choice");
      if (!choice) { return; }
      react(line, choice.getAttribute("data-key"));
      closePicker(true);
    });
    picker.querySelector("form").addEventListener("submit", function (event) {
      event.preventDefault();
      var key = picker.querySelector("input[name=key]").value.trim();
      if (!key) { return; }
      react(line, key);
      closePicker(true);
    });
    picker.addEventListener("keydown", function (event) {
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        closePicker(true);
      }
    });
    opener.closest(".line-actions").after(picker);
    picker.querySelector("button").focus();
  }
  document.addEventListener("click", function (event) {
    if (picker && !picker.contains(event.target) && !(event.target.closest && event.target.closest("button[data-action=react]"))) { closePicker(false); }
  });

  // Older messages when the timeline's top is reached.
  var loadingOlder = false;
  function loadOlder() {
    var older = timeline && timeline.getAttribute("data-older");
    if (!older || loadingOlder) { return null; }
    loadingOlder = true;
    var url = "/chats/history?id=" + encodeURIComponent(roomID) + "&from=" + encodeURIComponent(older);
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json", "X-Gatehouse-CSRF": csrf } }).then(function (response) {
      return response.ok ? response.json() : Promise.reject(new Error("status " + response.status));
    }).then(function (page) {
      var height = document.documentElement.scrollHeight;
      var lines = fromMarkup(page.html);
      // Lines the page has already (a message that arrived live meanwhile) are kept as they are.
      lines.querySelectorAll("li.message[data-id]").forEach(function (line) {
        if (timeline.querySelector('li[data-id="' + CSS.escape(line.getAttribute("data-id")) + '"]')) { line.remove(); }
      });
      var previousFirst = timeline.firstElementChild;
      timeline.insertBefore(lines, previousFirst);
      // The day the page started with, when the older lines end on that same day, is said once.
      if (previousFirst && previousFirst.classList.contains("day")) {
        var before = previousFirst.previousElementSibling;
        while (before && !before.classList.contains("day")) { before = before.previousElementSibling; }
        if (before && before.getAttribute("data-day") === previousFirst.getAttribute("data-day")) { previousFirst.remove(); }
      }
      localTimes(timeline);
      reveal(timeline);
      window.scrollTo(0, window.scrollY + document.documentElement.scrollHeight - height);
      if (page.older) { timeline.setAttribute("data-older", page.older); } else { timeline.removeAttribute("data-older"); }
    }).catch(function () {}).then(function () { loadingOlder = false; });
  }

  if (timeline) {
    window.addEventListener("scroll", function () {
      if (window.scrollY < 80) { loadOlder(); }
      showJump();
    }, { passive: true });
    // The page opens at the message it was asked for (a search's result), else at the first line the member has not
    // read if the gateway marked one, else at the end. Opened at a message, the lines shown may not be the latest:
    // "Jump to the latest" opens the room again.
    var firstNew = document.getElementById("new-messages");
    var latest = timeline.getAttribute("data-latest");
    if (timeline.getAttribute("data-at")) {
      jumpTo(timeline.getAttribute("data-at"), 10);
    } else if (firstNew) {
      firstNew.scrollIntoView({ block: "start" });
    } else {
      scrollToEnd();
    }
    if (jump) {
      jump.addEventListener("click", function () {
        if (latest) {
          window.location.assign(latest);
          return;
        }
        scrollToEnd();
        showJump();
        if (text) { text.focus(); }
      });
    }
    showSeen();
    showJump();
    // The newest line of another's, read now that the member sees it (a page's GET sends nothing: another site could
    // load it); a page opened in a background tab marks it when it is looked at.
    var readUpTo = function () {
      var others = timeline.querySelectorAll("li.message:not(.mine)[data-id]");
      if (others.length) { markRead(others[others.length - 1].getAttribute("data-id")); }
    };
    readUpTo();
    document.addEventListener("visibilitychange", readUpTo);
  }

  localTimes(document);

  // MARK: live

  // The homeserver answers again (or the gateway's stream came back): what could not be sent meanwhile is sent.
  function sendFailedAgain() {
    Array.prototype.forEach.call(document.querySelectorAll("#timeline li.failed .status button"), function (retry) { retry.click(); });
  }

  // The session's device may end under the page: the gateway session ended (the stream cannot be had again), or
  // the device was logged out from another client (the gateway makes a new one, so one new stream carries on).
  function listen(again) {
    // The page's token in the query: an EventSource sends no header of its own (`GatewayPageIsolation`).
    var url = main.getAttribute("data-events") + "?csrf=" + encodeURIComponent(csrf) + (roomID ? "&room=" + encodeURIComponent(roomID) : "");
    var events = new EventSource(url, { withCredentials: true });
    var opened = false;
    function ended() {
      events.close();
      if (again) { setTimeout(function () { listen(false); }, 1000); return; }
      if (window.gatehouseToast) { window.gatehouseToast(main.getAttribute("data-ended")); }
      if (composer) { composer.querySelectorAll("textarea, button").forEach(function (control) { control.disabled = true; }); }
    }
    events.addEventListener("open", function () {
      if (opened) { sendFailedAgain(); }
      opened = true;
    });
    // The homeserver stopped answering, or answers again: the page says so, and sends again what failed.
    events.addEventListener("homeserver", function (event) {
      var up = JSON.parse(event.data).up;
      var note = document.getElementById("chat-offline");
      if (note) { note.hidden = up; }
      if (up) { sendFailedAgain(); }
    });
    events.addEventListener("error", function () {
      // Refused (signed out, no longer allowed): the browser gives up on its own; network trouble it retries.
      if (events.readyState === EventSource.CLOSED) { again = again && opened; ended(); }
    });
    events.addEventListener("rooms", function (event) {
      var data = JSON.parse(event.data);
      showRooms(data.order, data.rows);
    });
    events.addEventListener("message", function (event) { addMessage(JSON.parse(event.data)); });
    events.addEventListener("reactions", function (event) { showReactions(JSON.parse(event.data)); });
    events.addEventListener("seen", function (event) { showSeen(JSON.parse(event.data)); });
    events.addEventListener("typing", function (event) {
      var shown = document.getElementById("typing");
      if (shown) { shown.textContent = JSON.parse(event.data).text; }
    });
    events.addEventListener("gone", function () { window.location.assign("/chats"); });
    events.addEventListener("ended", ended);
  }
  if (window.EventSource) { listen(true); }
})();
