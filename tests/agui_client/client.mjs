// An AG-UI front end without a page: @ag-ui/client's HttpAgent against Baton's /agui endpoint.
// Steps come as JSON lines on stdin, results go as JSON lines to stdout (tests/e2e/test_agui_client.py).
// A step: {"step": "run", "as": TOKEN, "workflow", "threadId", "state"?, "resume"?, "follow"?}
// The agent of a (token, threadId) pair is kept across steps, as a page keeps its agent.
import { HttpAgent } from "@ag-ui/client";
import readline from "node:readline";

const [base] = process.argv.slice(2);
const agents = new Map();
const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");

function agentOf(step) {
  const key = `${step.as}|${step.workflow}|${step.threadId}`;
  if (!agents.has(key)) {
    agents.set(
      key,
      new HttpAgent({
        url: `${base}/agui/${step.workflow}`,
        headers: { Authorization: `Bearer ${step.as}` },
        threadId: step.threadId,
        initialState: step.state ?? {},
      }),
    );
  }
  return agents.get(key);
}

async function run(step) {
  const agent = agentOf(step);
  const seen = [];
  const subscriber = {
    onEvent: ({ event }) => {
      seen.push(event.type);
    },
    onRunFinishedEvent: (finished) => {
      if (finished.outcome === "interrupt") {
        say({ step: step.id, interrupts: finished.interrupts });  // a page renders these now
      }
    },
  };
  try {
    const { result, newMessages } = await agent.runAgent(
      {
        forwardedProps: step.follow === false ? { baton: { follow: false } } : {},
        ...(step.resume ? { resume: step.resume } : {}),
      },
      subscriber,
    );
    say({
      step: step.id,
      done: true,
      result: result ?? null,
      events: seen,
      pending: agent.pendingInterrupts.map((i) => i.id),
      messages: agent.messages.length,
      newMessages: newMessages.length,
    });
  } catch (error) {
    say({ step: step.id, error: String(error.message ?? error), status: error.status ?? null, payload: error.payload ?? null });
  }
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim()) run(JSON.parse(line));  // not awaited: a followed stream stays open
}
