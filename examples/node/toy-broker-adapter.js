#!/usr/bin/env node
// A kconform stdio adapter in JavaScript (Node.js, no packages): a tiny replicated log with
// whole fetch rounds, answered at once when there is something to read and otherwise held
// by the leader until an append or replica.fetch.wait.max.ms. It reports each replica's log
// and LEO (spec/adapter-protocol.md; run it with
//   kconform run --impl 'exec:node examples/node/toy-broker-adapter.js').
"use strict";
const readline = require("readline");

let broker = null;

function reset(config) {
  const names = config.replicas;
  const leader = config.initial_leader || names[0];
  const logs = Object.fromEntries(names.map((n) => [n, []]));
  broker = { names, leader, logs, now: 0, wait: config.replica_fetch_wait_max_ms, waiting: {} };
}

function answer(follower, offset, max) {
  const log = broker.logs[broker.leader];
  const end = max == null ? log.length : Math.min(log.length, offset + max);
  broker.logs[follower].push(...log.slice(offset, end));
  delete broker.waiting[follower];
}

function step(s) {
  if (s.kind === "produce") {
    broker.logs[broker.leader].push(...s.values.map((v) => `${v}@0`));
    for (const [f, w] of Object.entries(broker.waiting)) {
      if (w.offset < broker.logs[broker.leader].length) answer(f, w.offset, w.max);
    }
  } else if (s.kind === "fetch_round") {
    if (s.replica === broker.leader) return { reason: `${s.replica} leads: only a follower fetches` };
    if (broker.waiting[s.replica]) return { reason: `${s.replica} already has a fetch outstanding` };
    const offset = broker.logs[s.replica].length;
    if (offset < broker.logs[broker.leader].length) answer(s.replica, offset, s.max_records);
    else broker.waiting[s.replica] = { offset, max: s.max_records, deadline: broker.now + broker.wait };
  } else if (s.kind === "tick") {
    broker.now += s.ms;
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
