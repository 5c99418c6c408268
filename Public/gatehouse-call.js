// A one-to-one call's page: the media browser to browser (WebRTC), the signalling through the gateway, which sends
// and receives the Matrix call events as the member's device (POST /calls/signal, the page's event stream). Placing a
// call (data-direction="out") or answering one (data-direction="in"). Audio: camera off, microphone on; video:
// camera and microphone on. The browser's permission prompt is explained before it appears, and a refusal says how to
// allow it. The call ends for both when either hangs up, the session ends, or the connection fails. Names and texts
// from the homeserver are only ever set as text.
(function () {
  "use strict";

  // The signalling as a pure step (`node --test`): the call's state and a message heard (a Matrix call event as the
  // gateway passes it on, or `remote_set` when the browser took the peer's description) give the next state and
  // what the page does: `connecting`, `accept_answer` (the peer's answer, then `select_answer` sent), `add_candidates`
  // and `end` with the words' key. Candidates from a party other than the one answered are dropped; those that come
  // before the peer's description are kept until it is set.
  var signalling = {
    start: function (direction, party, peerParty) {
      return { direction: direction, party: party, peerParty: peerParty || null, answered: direction === "in", remoteSet: false, ended: false, buffered: {} };
    },

    step: function (state, message) {
      var next = JSON.parse(JSON.stringify(state));
      var actions = [];
      var end = function (key) {
        next.ended = true;
        actions.push({ do: "end", key: key });
      };
      var from = message.party || message.sender;
      if (state.ended) { return { state: next, actions: actions }; }
      switch (message.type) {
        case "answer":
          if (state.direction === "in") { end("call_answered_elsewhere"); break; }
          if (state.peerParty) { break; }
          next.peerParty = from;
          next.answered = true;
          actions.push({ do: "connecting" }, { do: "accept_answer", sdp: message.sdp, party: from });
          break;
        case "remote_set":
          next.remoteSet = true;
          if (next.peerParty && (next.buffered[next.peerParty] || []).length) {
            actions.push({ do: "add_candidates", candidates: next.buffered[next.peerParty] });
          }
          next.buffered = {};
          break;
        case "candidates":
          if (state.peerParty && from !== state.peerParty) { break; }
          var list = (message.candidates || []).filter(function (candidate) { return candidate && candidate.candidate; });
          if (!state.peerParty || !state.remoteSet) {
            next.buffered[from] = (next.buffered[from] || []).concat(list);
          } else if (list.length) {
            actions.push({ do: "add_candidates", candidates: list });
          }
          break;
        case "select_answer":
          if (state.direction === "in" && message.selected_party_id !== state.party) { end("call_answered_elsewhere"); }
          break;
        case "reject":
          end("call_ended_declined");
          break;
        case "hangup":
          if (state.peerParty && from !== state.peerParty && state.direction === "out") { break; }
          end(message.reason === "ice_failed" ? "call_ended_failed" : message.reason === "invite_timeout" ? "call_ended_missed" : "call_ended_hangup");
          break;
      }
      return { state: next, actions: actions };
    }
  };
  if (typeof module === "object" && module.exports) {
    module.exports = signalling;
    return;
  }

  var main = document.querySelector("main.call-page");
  // Over already, or only offered (the address came without the form's grant): nothing starts here.
  if (!main || main.getAttribute("data-state") === "over" || main.getAttribute("data-state") === "offered") { return; }
  var csrf = (document.querySelector("input[name=csrf]") || {}).value || "";
  var words = JSON.parse(main.getAttribute("data-words") || "{}");
  var direction = main.getAttribute("data-direction");
  var media = main.getAttribute("data-media") === "video" ? "video" : "audio";
  var room = main.getAttribute("data-room");
  var party = main.getAttribute("data-party");
  var callID = main.getAttribute("data-call-id") || newID();
  var call = signalling.start(direction, party, main.getAttribute("data-caller-party"));
  var status = document.getElementById("call-status");
  var permission = document.getElementById("call-permission") || document.createElement("p");
  var remoteVideo = document.getElementById("remote-video");
  var localVideo = document.getElementById("local-video");
  var duration = document.getElementById("call-duration");
  var muteButton = document.getElementById("call-mute");
  var cameraButton = document.getElementById("call-camera");
  var hangupButton = document.getElementById("call-hangup");
  var RING_MS = 60000;
  var pc = null, local = null, events = null, connectedAt = null, ended = false, ticker = null, ringTimer = null;
  var outgoingCandidates = [], candidateTimer = null;

  function newID() {
    var bytes = new Uint8Array(12);
    window.crypto.getRandomValues(bytes);
    return "gh" + Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  function setState(state, text) {
    main.setAttribute("data-state", state);
    if (text !== undefined) { status.textContent = text; }
  }

  // While the call goes on, this window is the call's (the bar elsewhere brings it back by its name), every link of
  // the page opens in a new tab, and leaving the page in any other way (the address bar, a reload, closing it) is
  // asked about first: the call would end with the page.
  window.name = "gatehouse-call";
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[href]") : null;
    if (ended || !link || event.defaultPrevented || link.target || link.hasAttribute("download")) { return; }
    event.preventDefault();
    window.open(link.href, "_blank");
  });
  window.addEventListener("beforeunload", function (event) {
    if (ended) { return; }
    event.preventDefault();
    event.returnValue = "";
  });

  function clock(ms) {
    var seconds = Math.floor(ms / 1000), hours = Math.floor(seconds / 3600), minutes = Math.floor(seconds / 60) % 60, rest = seconds % 60;
    var two = function (n) { return (n < 10 ? "0" : "") + n; };
    return hours > 0 ? hours + ":" + two(minutes) + ":" + two(rest) : minutes + ":" + two(rest);
  }

  function request(url, options) {
    options = options || {};
    options.credentials = "same-origin";
    options.headers = { "Accept": "application/json", "Content-Type": "application/json", "X-Gatehouse-CSRF": csrf };
    return fetch(url, options).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (body) {
        if (!response.ok) { throw new Error(body.error || ("status " + response.status)); }
        return body;
      });
    });
  }

  function signal(body, keepalive) {
    body.room = room;
    body.call_id = callID;
    return request(main.getAttribute("data-signal"), { method: "POST", body: JSON.stringify(body), keepalive: !!keepalive });
  }

  // Ends the call here: media stopped, the connection closed, what happened said with the call's time.
  function end(key, tell) {
    if (ended) { return; }
    ended = true;
    window.name = "";
    if (tell) { signal({ type: tell.type, reason: tell.reason }).catch(function () {}); }
    window.clearInterval(ticker);
    window.clearTimeout(ringTimer);
    window.clearTimeout(candidateTimer);
    if (events) { events.close(); }
    if (pc) { pc.close(); }
    if (local) { local.getTracks().forEach(function (track) { track.stop(); }); }
    var text = words[key] || words.call_ended_other || "";
    if (connectedAt) { text += " · " + clock(Date.now() - connectedAt); }
    setState("ended", text);
    document.getElementById("call-controls").hidden = true;
    var back = document.createElement("a");
    back.href = main.getAttribute("data-calls");
    back.id = "call-done";
    back.className = "button primary";
    back.textContent = document.getElementById("call-back").textContent;
    status.parentNode.appendChild(back);
  }

  function connected() {
    if (connectedAt) { return; }
    connectedAt = Date.now();
    window.clearTimeout(ringTimer);
    setState("connected", words.call_connected);
    ticker = window.setInterval(function () { duration.textContent = clock(Date.now() - connectedAt); }, 1000);
  }

  // Local candidates found after the description went out: sent a few at a time.
  function queueCandidate(candidate) {
    outgoingCandidates.push({ candidate: candidate.candidate, sdpMid: candidate.sdpMid, sdpMLineIndex: candidate.sdpMLineIndex });
    if (candidateTimer) { return; }
    candidateTimer = window.setTimeout(function () {
      candidateTimer = null;
      var batch = outgoingCandidates.splice(0, 50);
      if (batch.length && !ended) { signal({ type: "candidates", candidates: batch }).catch(function () {}); }
    }, 300);
  }

  // The description with the candidates found within two seconds (one message rather than many).
  function gathered() {
    return new Promise(function (resolve) {
      if (pc.iceGatheringState === "complete") { resolve(); return; }
      var done = function () { if (pc.iceGatheringState === "complete") { resolve(); } };
      pc.addEventListener("icegatheringstatechange", done);
      window.setTimeout(resolve, 2000);
    });
  }

  // A message heard, or the peer's description taken (`remote_set`): the step's next state, and what it says done.
  function onSignal(message) {
    var stepped = signalling.step(call, message);
    call = stepped.state;
    stepped.actions.forEach(function (action) {
      switch (action.do) {
        case "connecting": setState("connecting", words.call_connecting); break;
        case "end": end(action.key); break;
        case "add_candidates":
          action.candidates.forEach(function (candidate) { pc.addIceCandidate(candidate).catch(function () {}); });
          break;
        case "accept_answer":
          pc.setRemoteDescription({ type: "answer", sdp: action.sdp }).then(function () {
            signal({ type: "select_answer", selected_party_id: action.party }).catch(function () {});
            onSignal({ type: "remote_set" });
          }).catch(function () { end("call_ended_failed", { type: "hangup", reason: "unknown_error" }); });
          break;
      }
    });
  }

  function listen() {
    var url = main.getAttribute("data-events") + "?call=" + encodeURIComponent(callID) + "&csrf=" + encodeURIComponent(csrf);
    events = new EventSource(url);
    events.addEventListener("signal", function (event) { if (!ended) { onSignal(JSON.parse(event.data)); } });
    events.addEventListener("ended", function () { end("call_ended_session"); });
  }

  function camera(on) {
    local.getVideoTracks().forEach(function (track) { track.enabled = on; });
    cameraButton.setAttribute("aria-pressed", on ? "false" : "true");
    cameraButton.textContent = on ? words.call_camera_off : words.call_camera_on;
  }

  function start() {
    permission.textContent = words["call_permission_" + media];
    permission.hidden = false;
    setState("starting", "");
    var servers = request(main.getAttribute("data-servers"));
    // Audio: the camera is never asked for; video: camera and microphone.
    var devices = navigator.mediaDevices.getUserMedia({ audio: true, video: media === "video" });
    devices.catch(function (error) {
      permission.textContent = error && error.name === "NotAllowedError" ? words.call_permission_denied : words.call_media_failed;
      end("call_media_failed", direction === "in" ? { type: "hangup", reason: "user_media_failed" } : null);
    });
    Promise.all([servers, devices]).then(function (results) {
      permission.hidden = true;
      local = results[1];
      main.setAttribute("data-local-tracks", local.getTracks().map(function (track) { return track.kind; }).sort().join(" "));
      if (media === "video") {
        localVideo.srcObject = local;
        cameraButton.hidden = false;
      }
      pc = new RTCPeerConnection({ iceServers: results[0].iceServers, iceTransportPolicy: results[0].iceTransportPolicy });
      local.getTracks().forEach(function (track) { pc.addTrack(track, local); });
      pc.ontrack = function (event) { if (remoteVideo.srcObject !== event.streams[0]) { remoteVideo.srcObject = event.streams[0]; } };
      pc.onconnectionstatechange = function () {
        main.setAttribute("data-connection", pc.connectionState);
        if (pc.connectionState === "connected") {
          connected();
          setState("connected", words.call_connected);
        }
        // Packets stopped coming: the browser tries again for a while before it gives up ("failed").
        if (pc.connectionState === "disconnected" && connectedAt) { setState("connected", words.call_reconnecting); }
        if (pc.connectionState === "failed") { end("call_ended_failed", { type: "hangup", reason: "ice_failed" }); }
      };
      listen();
      return direction === "out" ? place() : answer();
    }).catch(function () {
      if (!ended) { end("call_media_failed", direction === "in" ? { type: "hangup", reason: "user_media_failed" } : null); }
    });
  }

  function place() {
    setState("calling", words.call_calling);
    return pc.createOffer().then(function (offer) { return pc.setLocalDescription(offer); }).then(gathered).then(function () {
      pc.onicecandidate = function (event) { if (event.candidate) { queueCandidate(event.candidate); } };
      return signal({ type: "invite", sdp: pc.localDescription.sdp });
    }).then(function () {
      ringTimer = window.setTimeout(function () { if (!call.answered) { end("call_no_answer", { type: "hangup", reason: "invite_timeout" }); } }, RING_MS);
    });
  }

  function answer() {
    setState("connecting", words.call_connecting);
    var offer = main.getAttribute("data-offer");
    var early = JSON.parse(main.getAttribute("data-candidates") || "[]");
    return pc.setRemoteDescription({ type: "offer", sdp: offer }).then(function () {
      // The caller's candidates sent with the invite, then those heard since: the offer is set.
      onSignal({ type: "candidates", party: call.peerParty, candidates: early });
      onSignal({ type: "remote_set" });
      return pc.createAnswer();
    }).then(function (description) { return pc.setLocalDescription(description); }).then(gathered).then(function () {
      pc.onicecandidate = function (event) { if (event.candidate) { queueCandidate(event.candidate); } };
      return signal({ type: "answer", sdp: pc.localDescription.sdp });
    });
  }

  muteButton.addEventListener("click", function () {
    if (!local) { return; }
    var muted = muteButton.getAttribute("aria-pressed") !== "true";
    local.getAudioTracks().forEach(function (track) { track.enabled = !muted; });
    muteButton.setAttribute("aria-pressed", muted ? "true" : "false");
    muteButton.textContent = muted ? words.call_unmute : words.call_mute;
  });
  cameraButton.addEventListener("click", function () {
    if (local) { camera(cameraButton.getAttribute("aria-pressed") === "true"); }
  });
  hangupButton.addEventListener("click", function () { end("call_ended_hangup", { type: "hangup", reason: "user_hangup" }); });
  // Leaving the page hangs up (the request outlives the page).
  window.addEventListener("pagehide", function () {
    if (ended || !pc) { return; }
    ended = true;
    signal({ type: "hangup", reason: "user_hangup" }, true).catch(function () {});
  });
  start();
})();
