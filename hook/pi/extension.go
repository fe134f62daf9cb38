package pi

import (
	"encoding/json"
	"strings"
	"time"
)

// AnswerTimeout bounds how long the extension waits for rein's answer;
// past it the call is blocked (rein's own answer is bounded by
// hook.Timeout, well within it).
const AnswerTimeout = 25 * time.Second

// Extension is the source of rein's extension for Pi (plain JavaScript,
// no dependencies): on every tool call it runs argv (rein hook pi, or a
// launched session's relay), hands it the call as JSON, and lets the call
// run only on rein's allow, with the input rein rewrote it to (a bash line
// run through rein shell). An ask is Pi's own confirmation where Pi has a
// user to ask (ctx.hasUI), and a block where it has none (-p). Anything
// else blocks: rein missing, crashed, exiting non-zero, silent past
// AnswerTimeout, an answer it cannot read; a throw in the handler blocks
// too (Pi's rule for tool_call handlers).
func Extension(argv []string) string { return ExtensionWithin(argv, AnswerTimeout) }

// ExtensionWithin is Extension waiting timeout for rein's answer.
func ExtensionWithin(argv []string, timeout time.Duration) string {
	cmd, _ := json.Marshal(argv)
	return strings.NewReplacer("@REIN@", string(cmd), "@TIMEOUT@", itoa(timeout.Milliseconds()), "@MAXOUT@", itoa(maxAnswer)).Replace(extensionSource)
}

// maxAnswer bounds the answer the extension reads.
const maxAnswer = 4 << 20

func itoa(n int64) string {
	data, _ := json.Marshal(n)
	return string(data)
}

const extensionSource = `// rein's gate for Pi: every tool call is decided by rein's policy before
// it runs. Anything but rein's allow blocks the call. Written by rein.
import { spawn } from "node:child_process";

const REIN = @REIN@;
const TIMEOUT_MS = @TIMEOUT@;
const MAX_ANSWER = @MAXOUT@;

function decide(call) {
  return new Promise((resolve) => {
    let done = false;
    const finish = (v) => { if (!done) { done = true; resolve(v); } };
    let child;
    try {
      // A group of its own, so that a timeout kills whatever it started.
      child = spawn(REIN[0], REIN.slice(1), { stdio: ["pipe", "pipe", "ignore"], detached: true });
    } catch (e) {
      finish({ error: "rein could not start: " + e.message });
      return;
    }
    const chunks = [];
    let size = 0;
    const stop = () => {
      try { process.kill(-child.pid, "SIGKILL"); } catch (e) { try { child.kill("SIGKILL"); } catch (e2) {} }
      try { child.stdout.destroy(); } catch (e) {}
      try { child.unref(); } catch (e) {}
    };
    const timer = setTimeout(() => {
      stop();
      finish({ error: "no answer within " + TIMEOUT_MS / 1000 + " s" });
    }, TIMEOUT_MS);
    child.on("error", (e) => { clearTimeout(timer); finish({ error: "rein could not start: " + e.message }); });
    child.stdout.on("data", (d) => {
      size += d.length;
      if (size > MAX_ANSWER) {
        clearTimeout(timer);
        stop();
        finish({ error: "an answer larger than " + MAX_ANSWER + " bytes" });
        return;
      }
      chunks.push(d);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        finish({ error: "rein ended with " + (signal || "exit " + code) });
        return;
      }
      try {
        finish(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch (e) {
        finish({ error: "an answer that is not JSON" });
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(call));
  });
}

function replaceInput(input, updated) {
  if (updated !== undefined && updated !== null) {
    for (const k of Object.keys(input)) delete input[k];
    Object.assign(input, updated);
  }
  // What rein decided is what runs: a handler after this one that changes
  // the input throws, and Pi blocks a call whose handler throws.
  deepFreeze(input);
}

function deepFreeze(v) {
  if (v !== null && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze(v[k]);
  }
  return v;
}

export default function (pi) {
  pi.on("tool_call", async (event, ctx) => {
    let session = "";
    try { session = ctx.sessionManager.getSessionId(); } catch (e) {}
    const answer = await decide({
      session_id: String(session), cwd: String(ctx.cwd), tool_name: String(event.toolName),
      tool_call_id: String(event.toolCallId), input: event.input, ui: ctx.hasUI === true,
    });
    if (!answer || typeof answer !== "object" || answer.error !== undefined) {
      return { block: true, reason: "rein: no decision from rein (" + ((answer && answer.error) || "no answer") + "): the call is blocked" };
    }
    const reason = typeof answer.reason === "string" ? answer.reason : "rein: no reason given";
    if (answer.decision === "allow") {
      replaceInput(event.input, answer.input);
      return undefined;
    }
    if (answer.decision === "ask" && ctx.hasUI === true) {
      const ok = await ctx.ui.confirm("rein asks before this " + event.toolName + " call", reason);
      if (ok === true) {
        replaceInput(event.input, answer.input);
        return undefined;
      }
      return { block: true, reason: "rein: you declined it (" + reason + ")" };
    }
    return { block: true, reason: reason };
  });
}
`
