// The call page's signalling as a pure step (Public/gatehouse-call.js), without a browser: what each message heard
// does to the call, in the order a homeserver may deliver them.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const signalling = require("../../Public/gatehouse-call.js");

function run(state, messages) {
  const done = [];
  for (const message of messages) {
    const stepped = signalling.step(state, message);
    state = stepped.state;
    done.push(...stepped.actions);
  }
  return { state, done };
}

const candidate = (text) => ({ candidate: "candidate:" + text, sdpMid: "0", sdpMLineIndex: 0 });

test("a placed call takes the first answer, keeps its early candidates and drops another party's", () => {
  const { state, done } = run(signalling.start("out", "me"), [
    { type: "candidates", party: "p1", candidates: [candidate("early")] },
    { type: "answer", party: "p1", sdp: "v=0 answer" },
    { type: "answer", party: "p2", sdp: "v=0 second" },
    { type: "candidates", party: "p2", candidates: [candidate("other")] },
    { type: "remote_set" },
    { type: "candidates", party: "p1", candidates: [candidate("late"), { candidate: "" }] },
  ]);
  assert.deepEqual(done.map((action) => action.do), ["connecting", "accept_answer", "add_candidates", "add_candidates"]);
  assert.equal(done[1].party, "p1");
  assert.equal(done[1].sdp, "v=0 answer");
  assert.deepEqual(done[2].candidates.map((c) => c.candidate), ["candidate:early"]);
  // The end-of-candidates marker (an empty candidate) is not added.
  assert.deepEqual(done[3].candidates.map((c) => c.candidate), ["candidate:late"]);
  assert.equal(state.peerParty, "p1");
  assert.equal(state.answered, true);
});

test("an answered call holds the caller's candidates until the offer is set", () => {
  const { done } = run(signalling.start("in", "me", "caller"), [
    { type: "candidates", party: "caller", candidates: [candidate("a")] },
    { type: "candidates", party: "stranger", candidates: [candidate("x")] },
    { type: "remote_set" },
    { type: "candidates", party: "caller", candidates: [candidate("b")] },
  ]);
  assert.deepEqual(done.map((action) => [action.do, action.candidates.map((c) => c.candidate)]), [
    ["add_candidates", ["candidate:a"]],
    ["add_candidates", ["candidate:b"]],
  ]);
});

test("hangups and rejections end the call with the words that say why", () => {
  const cases = [
    [signalling.start("out", "me"), { type: "reject", party: "p1" }, "call_ended_declined"],
    [signalling.start("out", "me"), { type: "hangup", party: "p1", reason: "invite_timeout" }, "call_ended_missed"],
    [signalling.start("in", "me", "caller"), { type: "hangup", party: "caller", reason: "ice_failed" }, "call_ended_failed"],
    [signalling.start("in", "me", "caller"), { type: "hangup", party: "caller", reason: "user_hangup" }, "call_ended_hangup"],
    // Another device of the member's answered the call ringing here.
    [signalling.start("in", "me", "caller"), { type: "select_answer", party: "caller", selected_party_id: "my-phone" }, "call_answered_elsewhere"],
    [signalling.start("in", "me", "caller"), { type: "answer", party: "my-phone", sdp: "v=0" }, "call_answered_elsewhere"],
  ];
  for (const [state, message, key] of cases) {
    const { state: after, done } = run(state, [message]);
    assert.deepEqual(done, [{ do: "end", key }], JSON.stringify(message));
    assert.equal(after.ended, true);
  }
});

test("what does not concern the call changes nothing", () => {
  const answered = run(signalling.start("out", "me"), [{ type: "answer", party: "p1", sdp: "v=0" }]).state;
  const quiet = [
    // A hangup by a party that was not chosen, after another answered.
    [answered, { type: "hangup", party: "p2", reason: "user_hangup" }],
    // The answer chosen was this device's.
    [signalling.start("in", "me", "caller"), { type: "select_answer", party: "caller", selected_party_id: "me" }],
    [signalling.start("out", "me"), { type: "unknown_kind" }],
  ];
  for (const [state, message] of quiet) {
    const { state: after, done } = run(state, [message]);
    assert.deepEqual(done, [], JSON.stringify(message));
    assert.deepEqual(after, state);
  }
  // Once over, nothing more is done, and the state given is never changed in place.
  const over = run(signalling.start("out", "me"), [{ type: "reject" }]).state;
  assert.deepEqual(run(over, [{ type: "answer", party: "p1", sdp: "v=0" }]).done, []);
  const fresh = signalling.start("out", "me");
  signalling.step(fresh, { type: "answer", party: "p1", sdp: "v=0" });
  assert.equal(fresh.peerParty, null);
});
