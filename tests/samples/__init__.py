"""Workflows written the plain-MAF way (no Baton kinds, no adapters), each registered on Baton.

The shapes of MAF's own human-in-the-loop samples: a repeated question loop (`guessing`), a typed
dataclass answer (`typed_review`), a checkpoint/resume sample whose state lives in checkpoint
hooks and shared state (`checkpointed`), a tool approval on a plain agent in a sequential
orchestration (`sequential_approval`), a handoff that waits for the user (`handoff_input`),
parallel requests from a sub-workflow (`sub_workflow`), and a concurrent orchestration holding one
agent's reply for review while another's tool call waits for approval (`concurrent_review`), and a
declaration-only tool a person carries out (`declaration_only`). Each
module is MAF code plus its `register(...)` (and the scripted model's play, where an agent needs
one). `parallel_requests` and `agents_hitl` are not shapes but MAF's own samples as MAF wrote them
(`python/samples/03-workflows/composition/sub_workflow_parallel_requests.py` and
`human-in-the-loop/agents_with_HITL.py` at agent-framework 5eb3eb745, their `main()` left out,
and the second's Foundry client import: its agents are built as `main()` builds them, on the
model Baton is configured with). The first's executors keep their pending requests and a cache
in plain attributes, which Baton carries in its checkpoints (`workflows.platform.attributes`);
the second asks a person about a draft whose request data holds MAF's `Message`s.
`functional_review` is MAF's functional sample `python/samples/03-workflows/functional/
hitl_review.py` as MAF wrote it (its `main()` left out), `functional_rounds` the shape of a
functional workflow that asks in rounds, in a loop and from inside a step, and
`functional_agents` the shape of `functional/agent_integration.py` (agents its module holds,
called in steps) with a person's review between them. `echoed_review` is the
shape of `agents/workflow_as_agent_human_in_the_loop.py`: an answer type that repeats its
request's id, which Baton fills in; `workflow_as_agent_hitl` is that sample as MAF wrote it, with
the sibling it imports its `Worker` and review types from (`workflow_as_agent_reflection_pattern`,
both at agent-framework 5eb3eb745, their `main()` and Foundry client import left out, and the
first's `sys.path` lines, its sibling imported by its package's name instead): its
worker is built as `main()` builds it, on the model Baton is configured with, and its builder
returns the `.as_agent()` that `main()` makes (Baton drives the workflow the agent runs).
`agui_handoff` is the workflow of MAF's AG-UI demo (`python/samples/05-end-to-end/
ag_ui_workflow_handoff/backend/server.py` at agent-framework 5eb3eb745: its tools, agents and
handoff graph as MAF wrote them, their Foundry client passed in; its AG-UI server, closed-case
notice and `main()` left out, since Baton's `/agui/{workflow}` serves it): a handoff whose
agents wait on the customer and whose refund tool needs an approval. `tool_approval_middleware`
and `script_approval` are MAF's `02-agents/tools/tool_approval_middleware.py` and
`02-agents/skills/script_approval/script_approval.py` (at agent-framework 5eb3eb745), each less
its `main()` and Foundry client, its agent built as `main()` builds it: MAF's
`ToolApprovalMiddleware` asking approvals one at a time of a batch in which a read-only tool
runs beside them, and a skill's tools, which no agent declares (a context provider adds them as
the agent runs), each needing approval. `workflow_kwargs` is MAF's
`03-workflows/state-management/workflow_kwargs_global.py`, less its `main()` and Foundry client,
its tools reading the run's kwargs from their `FunctionInvocationContext` (MAF 1.26 no longer puts
them in a tool's `**kwargs`, as the sample reads them: on MAF alone too it reports `missing
db_config`), its kwargs given by `register(run_kwargs=...)` as `main()` gives them to `run`, and a
person's review of the researcher's reply added, so that the writer runs after a restart.
`workflow_session` is MAF's `03-workflows/agents/workflow_as_agent_with_session.py`, less its
`main()` and Foundry client, its agents, workflow and `.as_agent()` built as `main()` builds them:
each of `main()`'s turns in one session is a run that continues the run before (`Run.continues`).
`sequential_workflow_agent`, `concurrent_workflow_agent`, `workflow_agent_kwargs` and
`workflow_agent_checkpoint` are MAF's `03-workflows/agents/sequential_workflow_as_agent.py`,
`concurrent_workflow_as_agent.py`, `workflow_as_agent_kwargs.py` and
`03-workflows/checkpoint/workflow_as_agent_checkpoint.py` (its `checkpointing_with_thread()`), less
their `main()`, printing and Foundry clients, their agents, workflows and `.as_agent()` built as
`main()` builds them, each asking a person once a turn: the writer's, the legal reviewer's and
the assistant's replies held for review (`with_request_info`), `call_api` approved by a person
(`build_agent(client, ask=False)` builds them as MAF wrote them, for MAF alone); their plays note
what each model is handed (`model_trace`) for `tests.e2e.test_workflow_agents`.
`concurrent_trades` and `group_chat_deploy` are MAF's `03-workflows/tool-approval/` samples
`concurrent_builder_tool_approval.py` and `group_chat_builder_tool_approval.py`, each less its
`main()`, its printing and its Foundry client: two trading agents side by side whose tool loops
each ask two approvals in one turn (four requests open at once), and a group chat whose selector
function hands the DevOps engineer the round in which it asks to deploy. `group_chat_steering` is
MAF's `03-workflows/human-in-the-loop/group_chat_request_info.py`, less its `main()`, its printing
and its Foundry client: a group chat led by an orchestrator agent (its session holds the
discussion across pauses), each of the pragmatist's replies held for a person.
`magentic_plan_review` is MAF's `03-workflows/orchestrations/magentic_human_plan_review.py`, less
its `main()`, its printing and its Foundry client: a Magentic manager's plan held for a person.
`sequential_steering` and `sequential_tool_approval` are MAF's
`03-workflows/human-in-the-loop/sequential_request_info.py` and
`03-workflows/tool-approval/sequential_builder_tool_approval.py`, each less its `main()`, its
event-stream printing and its Foundry client, its agents built as `main()` builds them: a
drafter, an editor and a finalizer in sequence with `.with_request_info(agents=["editor"])`, the
editor's reply sent back with guidance the final version carries; and one database agent whose
`execute_database_query` needs approval, turned down with a reason the agent hears, then approved
for a narrower query. `handoff_approval_resume` and `magentic_checkpoint` are MAF's
`03-workflows/orchestrations/handoff_with_tool_approval_checkpoint_resume.py` and
`magentic_checkpoint.py`, less their `main()`, printing and Foundry clients (their builders take
the clients instead), built as `main()` builds them with a `FileCheckpointStorage` Baton leaves
unused: a handoff asking the customer questions and a person to approve its refund tool (refused
here), ending at the customer's fifth message; and a Magentic manager's plan sent back after a
restart. `checkpoint_brief` and `sub_workflow_checkpoint` are MAF's
`03-workflows/checkpoint/checkpoint_with_human_in_the_loop.py` and `sub_workflow_checkpoint.py`,
less their `main()` (the first's console helpers too) and the first's Foundry client, their
builders calling MAF's with a `FileCheckpointStorage` Baton leaves unused: a reviewer gateway
counting drafts in its checkpoint hooks and the brief in shared state, and a coordinator keeping
the sub-workflow's request it intercepted in its hooks, answering it after the restore. On MAF
alone, the storages of the last four, given no `allowed_checkpoint_types`, fail to save the
pauses (MAF logs "Failed to create checkpoint"), so their `main()`s cannot resume after a restart;
Baton allows every type the executors take, send, ask and are answered.
`concurrent_steering` is MAF's `03-workflows/human-in-the-loop/concurrent_request_info.py`, less
its `main()`, its printing and input loop and its Foundry client: three analysts side by side,
the technical analyst's reply held for a person, and MAF's own aggregator asking the client the
module holds (`_chat_client`, set as `main()` sets it) for a synthesis of the three.
`approval_requests` is MAF's `03-workflows/human-in-the-loop/agents_with_approval_requests.py`,
less its `main()` and its Foundry client: an executor that notes a priority sender, an email
agent that asks three approvals at once to read its team's mail and then one to send the update,
and an executor that yields the agent's reply; a run's input is the `Email` `main()` makes.
`guessing_game` and `declaration_only_tools` are MAF's
`03-workflows/human-in-the-loop/guessing_game_with_human_input.py` and
`agents_with_declaration_only_tools.py`, each less its `main()`, its printing and its Foundry
client, its agent built as `main()` builds it: an agent whose structured reply
(`response_format=GuessOutput`, read through `.value`) a person answers higher, lower or correct
until it is right, each guess following every answer so far; and an agent whose
`get_user_location` is a declaration only (`func=None`), whose call a person carries out, giving
the result the agent goes on with.
`tool_calls_feedback` is MAF's `03-workflows/agents/azure_chat_agents_tool_calls_with_feedback.py`,
less its `main()`, its two printing helpers (with their `input()` loop) and its Foundry client
(its agent factories take the client): a writer agent that calls two tools before drafting, and a
coordinator that asks a person about each draft (`DraftFeedbackRequest`, answered with a `str`)
and sends the writer back with the person's note until they answer "approve"; then the final
editor's reply is yielded. `request_interception` is MAF's
`03-workflows/composition/sub_workflow_request_interception.py`, less its `main()`: an
orchestrator that sends each new recipient through an email validation sub-workflow and answers
that sub-workflow's domain request itself (`SubWorkflowRequestMessage`); nobody is asked, and each
of `main()`'s six emails is delivered (`True`) or blocked (`False`). `sub_workflow_kwargs` is
MAF's `03-workflows/composition/sub_workflow_kwargs.py`, less its `main()` and Foundry client, with
three changes its docstring gives (its tools read the kwargs from their `FunctionInvocationContext`,
a person's review of its agent's reply added, and `allow_direct_output=True`, without which the
parent has no output on MAF 1.26): a data agent in a sub-workflow whose tools read the parent
run's kwargs (`register(run_kwargs=...)`), sent back by a person after a restart to call its
tools again, with the kwargs.
`explicit_schema`, `recover_from_failures` and `agent_as_tool_session` are MAF's `02-agents/tools/`
samples `function_tool_with_explicit_schema.py`, `function_tool_recover_from_failures.py` and
`agent_as_tool_with_session_propagation.py` (at agent-framework 5eb3eb745), each less its
`main()`, its `load_dotenv()` and its OpenAI client, its agents built as `main()` builds them and
registered as they are: an agent offered two explicit tool schemas (a pydantic model and a JSON
schema dict), exactly as MAF offers them (its scripted play says so otherwise); an agent whose
tool raises, which the model hears as MAF says it ("Error: Function failed."), `main()`'s second
turn a run that continues the first; and a coordinator whose research agent is a tool sharing its
session (`propagate_session=True`), the findings either stores being what the coordinator
recalls. Each is registered a second time (`_approval`) with one tool asking a person first:
`get_weather` and `safe_divide` as `@tool(approval_mode="always_require")` makes them ask, and
`research` through MAF's own `as_tool(approval_mode="always_require")`. The approved call runs
once after a restart, with its arguments, in the session as it was when the run paused.
`todo_provider` and `simple_context_provider` are MAF's `02-agents/context_providers/
todo_provider.py` and `simple_context_provider.py` (at agent-framework 5eb3eb745), each less its
`main()`, its printing (the first's `print_todo_list` too), its `load_dotenv()` and its Foundry
client, each agent built as `main()` builds it and registered as it is, `main()`'s three turns
in one session runs each continuing the one before: one keeps its todos in the session through
`TodoProvider`'s tools (which it makes at each run), the other a `UserInfo` (a registered state
type) that its `after_run` extracts by asking the same client. Each is registered a second time
(`_approval`) with one tool asking a person first: `todos_remove`, swapped for `asking(...)` by a
provider after the one that makes it (`AskingFirst`), and `square_root`, a tool its module adds
(the sample has none). Each pauses at the third turn, and what the provider kept in the session
reaches the model after a restart. `runtime_context_delegation`, `agent_loop_todos` and
`session_behavior` are MAF's `02-agents/middleware/` samples `runtime_context_delegation.py`
(pattern 1), `agent_loop_middleware_todos.py` and `session_behavior_middleware.py` (at
agent-framework 5eb3eb745), each less its `main()` (and the functions it calls), its printing and
its Foundry client, its agent built as `main()` builds it: a function middleware copying the
run's `function_invocation_kwargs` (`register(run_kwargs=...)`, the input naming one of pattern
1's four tests) into the container its tools read; MAF's `AgentLoopMiddleware` running a planner
while its `TodoProvider` holds open todos (the output is MAF's aggregated non-streaming reply);
and a middleware counting the session's messages, `main()`'s second turn a run that continues
the first. Each is registered a second time (`_approval`) with one tool asking a person first
(`send_email`; `todos_complete` through `AskingTodoProvider`; `get_weather`): after a restart, the
approved call runs once, inside the middleware that refills the container from the kwargs Baton
gives again, on the todos the session held. `file_history` and `compaction_provider` are MAF's
`02-agents/conversations/file_history_provider_conversation_persistence.py` and
`02-agents/compaction/compaction_provider.py` (at agent-framework 5eb3eb745), each less its
`main()`, its printing, its `load_dotenv()` and its cloud client, each agent built as `main()`
builds it and registered as it is, `main()`'s later turns in one session runs each continuing the
one before: an agent whose `FileHistoryProvider` keeps the conversation in a JSON Lines file per
session id, in one directory every process shares (`SAMPLE_FILE_HISTORY_DIR`, else the system's
temporary directory's `af-file-history`): the session goes on under its id, so the provider loads
the earlier turns itself; and an agent whose in-memory history a `CompactionProvider` trims
before each turn and compacts after it, the compacted history going on with the conversation.
Each is registered a second time (`_approval`) with `get_weather` asking a person first.
`multimodal_approval`, `chart_review` and `tool_image` are shapes, not MAF samples verbatim: the
rich content of `02-agents/multimodal_input/openai_chat_multimodal.py` (`Content.from_uri` with
a data URI, `Content.from_data`, at agent-framework 5eb3eb745). In the first, a user's message
holds a receipt's photo and the agent's tool needs approval; in the second, a person reviews a
chart: the request data is a `Message` holding a PNG and a PDF, answered with a text, and the
output gives each attachment's digest, so it shows they came back whole from the checkpoint; in
the third, a tool returns an image and a continued run asks about it. `max_invocations`,
`max_exceptions` and `total_tool_calls` are MAF's `02-agents/tools/
function_tool_with_max_invocations.py`, `function_tool_with_max_exceptions.py` and scenario 2 of
`control_total_tool_executions.py`, each less its `main()` and OpenAI client, and each with an
`_approval` variant whose limited (or searching) tool asks a person first: MAF's limits on a
tool's calls, its failures and a request's calls in all, compared with MAF alone across pauses
answered in new processes (`tests/e2e/test_tool_limits.py`).
`state_with_agents`, `workflow_kwargs_per_agent`, `sub_workflow_basics` and
`checkpoint_with_resume` are MAF's `03-workflows/state-management/state_with_agents.py` and
`workflow_kwargs_per_agent.py`, `composition/sub_workflow_basics.py` and
`checkpoint/checkpoint_with_resume.py`, each less its `main()` (and its simulated interruptions)
and its Foundry client, built as `main()` builds it, with one pause added
(`tests/e2e/test_state_kwargs_subworkflow_samples.py`): the spam detector's
`check_sender_reputation` asks first, so that the `Email` kept in workflow state (which no
handler takes: allow-listed as a value class its executors' module defines) is read after a
restart; the researcher's `query_company_database` asks
first (as the sample's note says to in production; its tools read the per-agent kwargs from
their `FunctionInvocationContext`, as `workflow_kwargs`' do); the sub-workflow's text processor
asks a person for the empty text (`propagate_request=True`); the worker asks before it goes on
past 5, its factor pairs kept by its checkpoint hooks.
`email_security` and
`repo_confidentiality` are MAF's FIDES samples `02-agents/security/email_security_example.py` and
`repo_confidentiality_example.py`, less their `main()` and Foundry clients: information-flow
labels on what tools return, and a call the policy flags asked of a person
(`approval_on_violation=True`), compared with MAF alone through kill -9
(`tests/e2e/test_fides_samples.py`).
"""

import os
from pathlib import Path

MODULES = ",".join(
    f"tests.samples.{name}"
    for name in (
        "guessing",
        "typed_review",
        "checkpointed",
        "sequential_approval",
        "handoff_input",
        "sub_workflow",
        "concurrent_review",
        "declaration_only",
        "parallel_requests",
        "agents_hitl",
        "functional_review",
        "functional_rounds",
        "functional_agents",
        "echoed_review",
        "workflow_as_agent_hitl",
        "agui_handoff",
        "tool_approval_middleware",
        "script_approval",
        "workflow_kwargs",
        "workflow_session",
        "sequential_workflow_agent",
        "concurrent_workflow_agent",
        "workflow_agent_kwargs",
        "workflow_agent_checkpoint",
        "concurrent_trades",
        "group_chat_deploy",
        "group_chat_steering",
        "magentic_plan_review",
        "sequential_steering",
        "sequential_tool_approval",
        "handoff_approval_resume",
        "magentic_checkpoint",
        "checkpoint_brief",
        "sub_workflow_checkpoint",
        "concurrent_steering",
        "approval_requests",
        "guessing_game",
        "declaration_only_tools",
        "tool_calls_feedback",
        "request_interception",
        "sub_workflow_kwargs",
        "explicit_schema",
        "recover_from_failures",
        "agent_as_tool_session",
        "todo_provider",
        "simple_context_provider",
        "runtime_context_delegation",
        "agent_loop_todos",
        "session_behavior",
        "file_history",
        "compaction_provider",
        "multimodal_approval",
        "chart_review",
        "tool_image",
        "max_invocations",
        "max_exceptions",
        "total_tool_calls",
        "state_with_agents",
        "workflow_kwargs_per_agent",
        "sub_workflow_basics",
        "checkpoint_with_resume",
        "email_security",
        "repo_confidentiality",
    )
)


def served(*names: str) -> dict[str, str]:
    """The environment of a `baton serve` that registers these modules of this package, or all.

    Registering all of them costs a process some 0.8 s of its start (MAF's OpenAI client among
    what they import); a test that runs one sample in a process of its own registers that one.
    """
    root = Path(__file__).resolve().parents[2]
    unknown = [name for name in names if f"tests.samples.{name}" not in MODULES.split(",")]
    assert not unknown, f"not a sample: {unknown}"
    return {
        "BATON_WORKFLOWS": ",".join(f"tests.samples.{name}" for name in names) or MODULES,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
