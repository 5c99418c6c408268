// Web Push's two scripts without a browser: what the service worker shows for a payload and where a click goes
// (Public/gatehouse-push.js), and what the Chats page does with the browser's subscription and the gateway's word
// on it (Public/gatehouse-live.js).
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const worker = require("../../Public/gatehouse-push.js");
const live = require("../../Public/gatehouse-live.js");

const origin = "https://gatehouse.example";

test("a pushed message is shown with its title, text, tag and room", () => {
  const shown = worker.notification(
    { kind: "message", title: "Alice", body: "New message", url: origin + "/chats/room?id=%21a", tag: "$e1", lang: "de" }, origin);
  assert.equal(shown.title, "Alice");
  assert.deepEqual(shown.options, {
    body: "New message", tag: "$e1", lang: "de", requireInteraction: false, renotify: false,
    data: { url: origin + "/chats/room?id=%21a", kind: "message" }
  });
});

test("a call stays until the member answers it", () => {
  const shown = worker.notification({ kind: "call", title: "Incoming call", body: "Alice is calling you (video)", tag: "c1" }, origin);
  assert.equal(shown.options.requireInteraction, true);
  assert.equal(shown.options.renotify, true);
});

test("what is no payload still says something came, and long words are cut", () => {
  assert.equal(worker.notification(null, origin).title, "Gatehouse");
  assert.equal(worker.notification("text", origin).options.body, "");
  assert.equal(worker.notification({ title: 42, body: ["x"] }, origin).title, "Gatehouse");
  assert.equal(worker.notification({ title: "x".repeat(500) }, origin).title.length, 200);
});

test("a click opens the gateway's own pages only", () => {
  assert.equal(worker.target(origin + "/calls/call?id=c1", origin), origin + "/calls/call?id=c1");
  for (const hostile of [
    "https://evil.example/chats", "javascript:alert(1)", "//evil.example/", origin + ".evil.example/x", origin + "@evil.example/",
    origin, "/chats", origin + "/\\evil.example", null, 7
  ]) {
    assert.equal(worker.target(hostile, origin), origin + "/chats", String(hostile));
  }
});

test("the page keeps the browser's subscription and the gateway's word in step", () => {
  // The gateway pushes: kept (a subscription the browser lost is forgotten by the gateway at its first push); a
  // subscription the gateway does not know (a session before this one): undone in the browser.
  assert.equal(live.pushStep(true, true), "keep");
  assert.equal(live.pushStep(true, false), "keep");
  assert.equal(live.pushStep(false, true), "unsubscribe");
  assert.equal(live.pushStep(false, false), "none");
});

test("the gateway's key becomes the bytes the browser subscribes with", () => {
  const bytes = live.keyBytes("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8");
  assert.equal(bytes.length, 65);
  assert.equal(bytes[0], 4);
  assert.equal(bytes[64], 0x0f);
  assert.deepEqual(Array.from(live.keyBytes("-_8")), [0xfb, 0xff]);
});
