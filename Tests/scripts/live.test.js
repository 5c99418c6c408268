// What every page decides when told live (Public/gatehouse-live.js), without a browser: the settings, whether a
// notification is shown, which tab plays a sound, the title's count, the calls told of once.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const live = require("../../Public/gatehouse-live.js");

test("settings are on unless turned off, and bad storage is no setting", () => {
  assert.deepEqual(live.settings(null), { desktop: true, sound: true, ringtone: true });
  assert.deepEqual(live.settings('{"sound":false}'), { desktop: true, sound: false, ringtone: true });
  assert.deepEqual(live.settings("not json"), { desktop: true, sound: true, ringtone: true });
  assert.deepEqual(live.settings("null"), { desktop: true, sound: true, ringtone: true });
});

test("a notification is not shown for the room a tab shows in view", () => {
  const notice = { room: "!a" };
  assert.equal(live.shows(notice, {}), true);
  assert.equal(live.shows(notice, { t1: { room: "!a", visible: true } }), false);
  // The room open in a hidden tab, or another room in view: shown.
  assert.equal(live.shows(notice, { t1: { room: "!a", visible: false }, t2: { room: "!b", visible: true } }), true);
  assert.equal(live.shows(notice, { t1: { room: null, visible: true } }), true);
});

test("the sound plays in the holder if the member used it, else in a used tab in view, else nowhere", () => {
  assert.equal(live.player({ h: { active: true, visible: false } }, "h"), "h");
  assert.equal(live.player({ h: { active: false }, b: { active: true, visible: true }, a: { active: true, visible: false } }, "h"), "b");
  assert.equal(live.player({ h: { active: false }, c: { active: true, visible: true }, b: { active: true, visible: true } }, "h"), "b");
  assert.equal(live.player({ h: { active: false }, a: { active: false, visible: true } }, "h"), null);
  assert.equal(live.player({}, "h"), null);
});

test("the title carries the count once", () => {
  assert.equal(live.title("Chats · Gatehouse", 3), "(3) Chats · Gatehouse");
  assert.equal(live.title("(3) Chats · Gatehouse", 12), "(12) Chats · Gatehouse");
  assert.equal(live.title("(12) Chats · Gatehouse", 0), "Chats · Gatehouse");
  // A title that merely starts with a bracket is left as it is.
  assert.equal(live.title("(draft) notes", 0), "(draft) notes");
});

test("a call is told of once, and only while it rings", () => {
  const now = 1000;
  const first = live.newCalls({}, [{ id: "c1", ends: 2000 }, { id: "c0", ends: 900 }], now);
  assert.deepEqual(first.fresh.map((call) => call.id), ["c1"]);
  assert.deepEqual(first.ids, { c1: true });
  const again = live.newCalls(first.ids, [{ id: "c1", ends: 2000 }, { id: "c2", ends: 3000 }], now);
  assert.deepEqual(again.fresh.map((call) => call.id), ["c2"]);
  assert.deepEqual(live.newCalls(again.ids, [], now), { fresh: [], ids: {} });
});

test("a notification is shown by a gateway page, which can ask for the message's text", () => {
  assert.equal(live.shower({ h: { token: true }, g: { token: true } }, "h"), "h");
  assert.equal(live.shower({ h: { token: false }, g2: { token: true }, g1: { token: true } }, "h"), "g1");
  // No gateway page open: the holder (an app's page) shows it without the text.
  assert.equal(live.shower({ h: { token: false }, a: { token: false } }, "h"), "h");
  assert.equal(live.shower({}, "h"), "h");
});
