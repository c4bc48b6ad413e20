"""MAF's AG-UI shapes of a request: what a front end written for MAF's AG-UI endpoint reads, sends.

MAF serves a workflow over AG-UI with `agent_framework_ag_ui`
(`add_agent_framework_fastapi_endpoint`): each pending `request_info` is an interrupt whose
`metadata.agent_framework` says what MAF asked, and a `resume` entry's payload is MAF's response
itself (`{"approved": true}` for a tool call's approval, the user's reply for a handoff agent
waiting on them, the response type's value for any other request). Baton's AG-UI endpoint
(`web.agui`) serves the same front end unchanged:

- `asked(request)`: the interrupt's `metadata.agent_framework`, derived from what the adapter
  that asked recorded (the tool call, the handoff agent's words, a typed request's data);
- `answer_body(request, payload)`: a payload MAF's endpoint would take, as the body `POST
  /api/requests/{id}/respond` takes. Baton's own body (an object with `decision`) passes as it
  is; what this cannot read passes too, and the answer's own check refuses it.

Only shapes: nothing here imports MAF, and every answer still goes through `respond`.
"""

from __future__ import annotations

import json
from typing import Any, Final

from baton.errors import InvalidAnswer
from human.records import HumanRequest
from human.requests import origin_of

NO_REASON: Final = "No reason was given."
"""A rejection's reason when MAF's `{"approved": false}` gave none (Baton's reject needs one)."""


def asked(request: HumanRequest) -> dict[str, Any]:
    """What MAF asked, as MAF's AG-UI endpoint shows it (`metadata.agent_framework`).

    A tool call's approval is MAF's `function_approval_request` as the adapter kept it; any
    other request of a MAF workflow is a `workflow_request_info` with the asking executor and,
    where Baton keeps it, the request's data (a handoff agent's reply as MAF's
    `HandoffAgentUserRequest` carries it, a typed request's fields, a host tool's call).
    """
    origin = origin_of(request)
    approval = origin.get("approval_request")
    if request.kind == "approval" and isinstance(approval, dict):
        if origin.get("edited") and isinstance(approval.get("function_call"), dict):
            # asked again after an edit: about the person's arguments, not the model's
            call = {**approval["function_call"], "arguments": json.dumps(origin.get("arguments"))}
            return {**approval, "function_call": call}
        return approval
    shown: dict[str, Any] = {
        "type": "workflow_request_info",
        "request_id": str(origin.get("maf_request_id") or request.maf_request_id).partition("#")[0],
        "source_executor_id": request.executor_id or origin.get("agent"),
    }
    question = request.payload.get("question")
    if origin.get("adapter") == "user_turns" and isinstance(question, str):
        agent = origin.get("agent")
        reply = {"role": "assistant", "author_name": agent, "contents": [_text(question)]}
        shown |= {"request_type": "HandoffAgentUserRequest", "response_type": "list[Message]"}
        shown["data"] = {"agent_response": {"messages": [reply]}}
    elif "call_id" in origin and request.kind != "takeover":
        call = {
            "type": "function_call",
            "call_id": origin["call_id"],
            "name": origin.get("tool"),
            "arguments": origin.get("arguments") or {},
        }
        shown |= {"request_type": "Content", "response_type": "Content", "data": call}
    elif "data" in request.payload:
        request_type = str(request.payload.get("request_type") or "")
        shown["request_type"] = request_type.rpartition(":")[2] or None
        shown["data"] = request.payload["data"]
    return {key: value for key, value in shown.items() if value is not None}


def tool_call_id(request: HumanRequest) -> str | None:
    """The tool call a request is bound to (an approval, a host tool's call), if it is."""
    call_id = origin_of(request).get("call_id")
    return str(call_id) if call_id else None


def answer_body(request: HumanRequest, payload: Any) -> Any:
    """A resume payload as the API's answer body (module docstring).

    Read as MAF's endpoint reads them: an approval's (or a review's) `approved` (or `accepted`)
    flag, MAF's `function_approval_response` included; an approval's edit, in any form MAF's
    endpoint (`agent_framework_ag_ui` 1.7) or Baton takes (`_edited`), that differs from the
    call's arguments is an edit; and a rejection keeps its `reason` (else says none was given).
    A question's reply: a text, a message (`content` or MAF's `contents`) or a list of them (a
    handoff's `list[Message]`), whose user text is the answer. An input's answer: the value
    itself, or a host tool's `function_result`'s result.
    """
    if isinstance(payload, dict) and "decision" in payload:
        return payload
    kind = request.kind
    if kind in ("approval", "review") and isinstance(payload, dict):
        verdict = payload.get("approved", payload.get("accepted"))
        if not isinstance(verdict, bool):
            return payload
        reason = payload.get("reason")
        if not verdict:
            return {"decision": "reject", "reason": reason or NO_REASON}
        proposed = (request.proposed_action or {}).get("arguments") or {}
        arguments = _edited(payload, proposed) if kind == "approval" else None
        if kind == "approval" and "reason" in proposed:  # (an edit of it by name, as MAF's)
            reason = None
        if arguments is not None and arguments != proposed:
            return {"decision": "edit", "arguments": arguments} | _reason(reason)
        return {"decision": "approve"} | _reason(reason)
    if kind == "question":
        said = _said(payload)
        return payload if said is None else {"decision": "answer", "answer": said}
    if kind == "input":
        if isinstance(payload, dict) and payload.get("type") == "function_result":
            return {"decision": "answer", "answer": str(payload.get("result", ""))}
        return {"decision": "answer", "answer": payload}
    return payload


_FLAGS: Final = frozenset({"approved", "accepted"})
"""The flags MAF's endpoint reserves; `reason` (Baton's note) too, unless the call has an
argument of that name (MAF's by-name edit of it)."""
_WHOLE: Final = ("editedArgs", "arguments")
"""An approval's edit given whole: MAF's `editedArgs` (its endpoint's response schema), Baton's
`arguments`."""


def _edited(payload: dict[str, Any], proposed: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments an approval's payload edits the call to (None: no edit).

    Given whole (`editedArgs`, `arguments`), or as the changed arguments by name beside
    `approved` (MAF's endpoint advertises each argument so), merged onto the call's; MAF's own
    `function_approval_response` content (whose other keys are its own: `id`, `function_call`)
    only whole. Two forms at once, a whole one that is no object, or a name the call has no
    argument of is refused, naming it: an edit a front end sent is never dropped, and the call
    never runs as the model asked in its stead.
    """
    flags = _FLAGS if "reason" in proposed else _FLAGS | {"reason"}
    direct = {
        k: v
        for k, v in payload.items()
        if k not in flags
        and k not in _WHOLE
        and payload.get("type") != "function_approval_response"
    }
    given = [k for k in _WHOLE if k in payload] + (["the arguments by name"] if direct else [])
    if len(given) > 1:
        msg = f"an approval's edit is given one way, not as {' and '.join(given)}"
        raise InvalidAnswer(msg, [{"loc": [k for k in _WHOLE if k in payload][:1], "msg": msg}])
    for name in sorted(set(direct) - set(proposed)):
        msg = f"the call has no argument {name!r} to edit (its arguments: {sorted(proposed)})"
        raise InvalidAnswer(msg, [{"loc": [name], "msg": msg}])
    if direct:
        return {**proposed, **direct}
    for name in _WHOLE:
        if name in payload:
            if not isinstance(payload[name], dict):
                msg = f"{name} must be an object: the call's arguments, edited"
                raise InvalidAnswer(msg, [{"loc": [name], "msg": msg}])
            return dict(payload[name])
    return None


def _reason(reason: Any) -> dict[str, Any]:
    return {"reason": reason} if reason else {}


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _said(payload: Any) -> str | None:
    """The user's text in a reply: a string, a message, or messages (None: none of these)."""
    if isinstance(payload, str):
        return payload
    messages = payload if isinstance(payload, list) else [payload]
    texts: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role", "user") != "user":
            return None
        content = message.get("contents", message.get("content"))
        parts = content if isinstance(content, list) else [content]
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            else:
                return None
    return "\n".join(texts) if texts else None
