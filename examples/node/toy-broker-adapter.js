#!/usr/bin/env node
// A kconform stdio adapter in JavaScript (Node.js, no packages): a tiny replicated log with
// whole fetch rounds, answered at once when there is something to read and otherwise held
// by the leader until an append or replica.fetch.wait.max.ms, and an ISR the leader shrinks
// on its lag check and grows on fetches, which acks=all needs at min.insync.replicas. It
// reports each replica's log and LEO (spec/adapter-protocol.md; run it with
//   kconform run --impl 'exec:node examples/node/toy-broker-adapter.js').
"use strict";
const readline = require("readline");

let broker = null;

function reset(config) {
  const names = config.replicas;
  const leader = config.initial_leader || names[0];
  const logs = Object.fromEntries(names.map((n) => [n, []]));
  // The leader's view of each follower: its last fetch offset (null: never fetched), when it
  // was last caught up, and the leader's LEO and clock at its previous fetch.
  const followers = Object.fromEntries(names.filter((n) => n !== leader)
    .map((n) => [n, { offset: null, caughtUp: 0, lastLeo: 0, lastMs: 0 }]));
  broker = {
    names, leader, logs, followers, isr: [...names], hw: 0, now: 0, waiting: {},
    wait: config.replica_fetch_wait_max_ms, lag: config.replica_lag_time_max_ms,
    minIsr: config.min_insync_replicas, byLeo: config.generation !== "hw-truncation",
  };
}

function leaderLeo() {
  return broker.logs[broker.leader].length;
}

function caughtUp(f) {
  return broker.now - broker.followers[f].caughtUp <= broker.lag;
}

function advanceHw() {
  // The HW is the lowest fetch offset of the followers in the ISR or caught up (and the
  // leader's LEO); it waits while one of them has never fetched.
  const counted = Object.keys(broker.followers).filter((f) => broker.isr.includes(f) || caughtUp(f));
  if (counted.some((f) => broker.followers[f].offset === null)) return;
  const low = Math.min(leaderLeo(), ...counted.map((f) => broker.followers[f].offset));
  broker.hw = Math.max(broker.hw, low);
}

function answer(follower, offset, max) {
  const log = broker.logs[broker.leader];
  const end = max == null ? log.length : Math.min(log.length, offset + max);
  broker.logs[follower].push(...log.slice(offset, end));
  delete broker.waiting[follower];
}

function fetchRound(s) {
  if (s.replica === broker.leader) return { reason: `${s.replica} leads: only a follower fetches` };
  if (broker.waiting[s.replica]) return { reason: `${s.replica} already has a fetch outstanding` };
  const offset = broker.logs[s.replica].length;
  const leo = leaderLeo();
  const f = broker.followers[s.replica];
  if (offset >= leo) f.caughtUp = broker.now;
  else if (f.offset !== null && offset >= f.lastLeo) f.caughtUp = f.lastMs;
  Object.assign(f, { offset, lastLeo: leo, lastMs: broker.now });
  if (!broker.isr.includes(s.replica) && offset >= broker.hw) {
    broker.isr = broker.names.filter((n) => broker.isr.includes(n) || n === s.replica);
  }
  advanceHw();
  if (offset < leo) answer(s.replica, offset, s.max_records);
  else broker.waiting[s.replica] = { offset, max: s.max_records, deadline: broker.now + broker.wait };
  return null;
}

function shrinkIsr() {
  // The leader's isr-expiration task: a follower not caught up for more than the lag bound
  // leaves (from Kafka 0.11 only if its LEO differs from the leader's).
  const late = broker.isr.filter((f) => f !== broker.leader && !caughtUp(f)
    && !(broker.byLeo && broker.followers[f].offset === leaderLeo()));
  if (late.length) {
    broker.isr = broker.isr.filter((n) => !late.includes(n));
    advanceHw();
  }
}

function step(s) {
  if (s.kind === "produce") {
    // acks=all is refused (NOT_ENOUGH_REPLICAS) before anything is appended while the ISR
    // is below min.insync.replicas; this adapter reports no produce outcomes, only logs.
    if (s.acks === "all" && broker.isr.length < broker.minIsr) return null;
    broker.logs[broker.leader].push(...s.values.map((v) => `${v}@0`));
    advanceHw();
    for (const [f, w] of Object.entries(broker.waiting)) {
      if (w.offset < leaderLeo()) answer(f, w.offset, w.max);
    }
  } else if (s.kind === "fetch_round") {
    return fetchRound(s);
  } else if (s.kind === "tick") {
    // isr-expiration runs every lag / 2 ms from the start; a parked fetch is answered at
    // its deadline (neither changes what the other reads here).
    const end = broker.now + s.ms;
    const period = Math.floor(broker.lag / 2);
    for (let t = (Math.floor(broker.now / period) + 1) * period; t <= end; t += period) {
      broker.now = t;
      shrinkIsr();
    }
    broker.now = end;
    for (const [f, w] of Object.entries(broker.waiting)) if (w.deadline <= broker.now) answer(f, w.offset, w.max);
  } else {
    throw new Error(`unsupported step ${s.kind}`);
  }
  return null;
}

function observe() {
  const replicas = {};
  for (const n of broker.names) replicas[n] = { leo: broker.logs[n].length, log: broker.logs[n] };
  return { clock_ms: broker.now, replicas };
}

const implementation = {
  name: "toy-broker-js", version: "1.0", language: "javascript",
  generations: ["hw-truncation", "leader-epoch", "diverging-epoch"],
  capabilities: {
    steps: ["produce", "fetch_round", "tick"], fields: ["clock_ms", "replicas"], replica_fields: ["leo", "log"],
    step_fields: { produce: ["values", "acks", "id"], fetch_round: ["replica", "max_records"] },
  },
};

function withCapability(impl, name) {
  return { ...impl, capabilities: { ...impl.capabilities, [name]: true } };
}

function handle(req) {
  switch (req.cmd) {
    case "hello": {
      // Protocol 4 when asked, taking the pipelining option if offered: the "line" handler
      // below answers each request in order as it reads it, which is all pipelining asks.
      if (req.protocol === 4 && (req.options || []).includes("pipelining")) {
        return { ok: true, protocol: 4, implementation: withCapability(implementation, "pipelining") };
      }
      return { ok: true, protocol: req.protocol === 1 ? 1 : 2, implementation };
    }
    case "reset": reset(req.config); return { ok: true };
    case "step": {
      const refused = step(req.step);
      return refused ? { ok: true, rejected: refused } : { ok: true, observation: observe() };
    }
    case "close": return { ok: true };
    default: return { ok: false, error: `unknown command ${req.cmd}` };
  }
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  if (!line.trim()) return;
  let req = {};
  let reply;
  try {
    req = JSON.parse(line);
    reply = handle(req);
  } catch (err) {
    process.stderr.write(`${err.stack}\n`);
    reply = { ok: false, error: String(err.message || err) };
  }
  process.stdout.write(JSON.stringify({ seq: req.seq, ...reply }) + "\n");
  if (req.cmd === "close") rl.close();
});
