"""Baton's developer API: everything a workflow author imports, from one place.

A workflow is MAF executors plus one registration (`register`); Baton does persistence, routing,
audit and resume. Ask people with `ctx.request_info(<Kind>Request, <Kind>Answer)`; put risky tools
behind policy with `GatedTool` and `ToolGateAgent`, or map MAF's own request types to people with
request adapters; `invariant` registers a check an approver's edit must pass (a policies file's
`invariants:`). `check_workflow` (in a test of your own) finds executors that lose state across
a restart. The shipped workflows (`workflows.shipped`) import only this module: what they
need, any workflow may use. Everything else in Baton is its own business and may change.
"""

from __future__ import annotations

from baton.check import check_workflow
from executors.platform.adapters import Ask, Finish, Outcome, Reply, RequestAdapter, Scene
from executors.platform.builtin_adapters import Kinds, UserTurns
from executors.platform.chat_clients import Play, scripted_plays
from executors.platform.run_end import end_run
from executors.platform.services import CaseContext, Resource, Resources, RunServices
from executors.platform.tool_adapters import (
    AskHuman,
    CloseCase,
    Draft,
    HostCalls,
    HostTool,
    PolicyGate,
    ReviewDraft,
    ToolApprovals,
    ToolCall,
)
from executors.platform.tool_gate import GatedTool, ToolGateAgent
from human.effects import idempotency_key
from human.kinds import (
    ApprovalAnswer,
    ApprovalRequest,
    CheckpointedModel,
    Escalation,
    ProposedAction,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    ReviewRequest,
    Routing,
    TakeoverAnswer,
    TakeoverRequest,
    schema_of,
)
from human.policy import Decision, EditedCall, Route
from workflows.platform.check import CheckReport
from workflows.platform.registry import invariant, register

__all__ = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "Ask",
    "AskHuman",
    "CaseContext",
    "CheckReport",
    "CheckpointedModel",
    "CloseCase",
    "Decision",
    "Draft",
    "EditedCall",
    "Escalation",
    "Finish",
    "GatedTool",
    "HostCalls",
    "HostTool",
    "Kinds",
    "Outcome",
    "Play",
    "PolicyGate",
    "ProposedAction",
    "QuestionAnswer",
    "QuestionRequest",
    "Reply",
    "RequestAdapter",
    "Resource",
    "Resources",
    "ReviewAnswer",
    "ReviewDraft",
    "ReviewRequest",
    "Route",
    "Routing",
    "RunServices",
    "Scene",
    "TakeoverAnswer",
    "TakeoverRequest",
    "ToolApprovals",
    "ToolCall",
    "ToolGateAgent",
    "UserTurns",
    "check_workflow",
    "end_run",
    "idempotency_key",
    "invariant",
    "register",
    "schema_of",
    "scripted_plays",
]
