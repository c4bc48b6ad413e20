"""One request/answer model pair per kind of human request.

The answer model is at once MAF's `response_type`, the stored `response_schema`, the validator of
`POST /respond` and the `@response_handler`'s type. Models are concrete classes (never `Optional`
or unions as a whole: MAF cannot allow-list those for checkpoint decoding).
"""

from __future__ import annotations

import functools
import json
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

SYSTEM_OUTCOMES = ("expired", "cancelled")


class ProposedAction(BaseModel):
    """A tool call a person is asked to allow, with the schema its arguments must fit."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any]
    arguments_schema: dict[str, Any] = Field(default_factory=dict)


Priority = Literal["low", "normal", "high", "urgent"]


class Escalation(BaseModel):
    """One rung of an escalation ladder, counted from the request's creation.

    `after_s` seconds after the request was created, if still open, it moves to `team` (and
    `priority`), and with `expires_in_s` gets a new deadline counted from that moment.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    after_s: float = Field(gt=0)
    team: str | None = None
    priority: Priority | None = None
    expires_in_s: float | None = Field(None, gt=0)


class CheckpointedModel(BaseModel):
    """A pydantic model whose instances in checkpoints made before a field was added still read.

    MAF keeps a checkpoint's messages and executor state pickled, and unpickling a pydantic model
    restores the fields it was saved with: a field added since, default or not, is missing, and
    reading it raises `AttributeError` in a run that paused before the deploy. This model gives
    such a field its default as the instance is unpickled (a field with no default stays missing:
    give a new field a default). Baton's answer kinds are such models; derive a model a workflow
    sends between executors or keeps in its state from it.
    """

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        missing = {
            name: info.get_default(call_default_factory=True)
            for name, info in type(self).model_fields.items()
            if name not in self.__dict__ and not info.is_required()
        }
        if missing:
            self.__dict__.update(missing)


class Routing(CheckpointedModel):
    """Who sees a request and how urgently; shared by every request kind.

    A checkpointed model: a run paused before a field was added still reads its request.
    """

    title: str
    reason: str = Field(description="Why the agent stopped.")
    context: dict[str, Any] = Field(default_factory=dict)
    team: str
    priority: Priority = "normal"
    approvals_required: int = Field(1, ge=1, le=5)
    expires_in_s: float | None = Field(None, gt=0, description="Deadline, from creation.")
    escalation: list[Escalation] = Field(default_factory=list)
    policy_rule: str | None = None
    outcomes: dict[str, str] = Field(
        default_factory=dict,
        description="What a decision leads to, in words, where the workflow knows better than "
        'Baton\'s sentence for it (`{"approve": "Records your approval; legal decides next."}`): '
        "shown beside that decision to the person who decides.",
    )

    def stored(self) -> dict[str, Any]:
        """The request as JSON to keep (an adapter's origin), `outcomes` left out when none.

        A request is as many bytes as before the field came, unless a workflow gave some.
        """
        return self.model_dump(mode="json", exclude=set() if self.outcomes else {"outcomes"})


class _Answer(CheckpointedModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    requires: ClassVar[dict[str, tuple[str, ...]]] = {}
    optional: ClassVar[dict[str, tuple[str, ...]]] = {}
    unticked: ClassVar[frozenset[str]] = frozenset()
    """Fields a choice left at `false` gives no value (a form's No sends it with any decision)."""

    answered_by: SkipJsonSchema[list[str]] = Field(
        default_factory=list,
        exclude=True,
        description="Who gave this decision, first to last (both approvers of a "
        "request that needs two): set by Baton as it delivers the answer to the workflow, from "
        "the recorded answers; empty for an outcome no person gave (expired, cancelled). Never "
        "sent by a person (an answer that holds it is refused), never stored with the answer.",
    )

    def delivered(self, by: list[str]) -> Self:
        """This answer as the workflow receives it: with who gave it."""
        return self.model_copy(update={"answered_by": list(by)})

    @classmethod
    def field_problems(cls, decision: str, values: dict[str, Any]) -> list[tuple[str, str]]:
        """`(field, message)` for each field missing from, or foreign to, this decision.

        `answered_by` is Baton's to set (`delivered`): an answer sent with it is refused.
        """
        required = cls.requires.get(decision, ())
        allowed = {"decision", *required, *cls.optional.get(decision, ())}
        problems = (
            [("answered_by", "is set by Baton from who answered, never sent")]
            if "answered_by" in values
            else []
        )
        problems += [
            (name, f"required when decision is '{decision}'")
            for name in required
            if _blank(values.get(name))
        ]
        problems += [
            (name, f"not allowed when decision is '{decision}'")
            for name in cls.model_fields
            if name not in allowed
            and name != "answered_by"
            and values.get(name) not in (None, "", {}, [])
            and not (name in cls.unticked and values.get(name) is False)
        ]
        return problems

    @model_validator(mode="after")
    def _fields_of_decision(self) -> _Answer:
        decision = getattr(self, "decision")  # noqa: B009 - every subclass declares it
        problems = self.field_problems(
            decision, {name: value for name, value in self if name != "answered_by"}
        )
        if problems:
            raise ValueError("; ".join(f"{name}: {msg}" for name, msg in problems))
        return self


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


class ApprovalRequest(Routing):
    """Allow, change or refuse a proposed tool call."""

    proposed_action: ProposedAction
    standing: bool = Field(
        False,
        description="Whether an approval may stand for the run's later calls of the tool that "
        "the same policy rule decides (the rule's `standing`): the answer's `standing`.",
    )


class ApprovalAnswer(_Answer):
    """`approve`, `edit` with the full changed arguments, or `reject` with a reason."""

    requires: ClassVar[dict[str, tuple[str, ...]]] = {"edit": ("arguments",), "reject": ("reason",)}
    optional: ClassVar[dict[str, tuple[str, ...]]] = {
        "approve": ("reason", "standing"),
        "edit": ("reason",),
    }
    unticked: ClassVar[frozenset[str]] = frozenset({"standing"})

    decision: Literal["approve", "edit", "reject", "expired", "cancelled"] = Field(title="Decision")
    arguments: dict[str, Any] | None = Field(None, title="Changed arguments")
    reason: str | None = Field(
        None,
        title="Reason",
        description="Given to whoever asked, with your answer.",
    )
    standing: SkipJsonSchema[bool | None] = Field(
        None,
        title="Approve the run's later calls too",
        description="Let the rest of this run's calls of the tool that the same policy rule "
        "decides run without asking again. Only where the request offers it (its `standing`): "
        "its answer schema has the field then, and not otherwise.",
    )


class QuestionRequest(Routing):
    """The agent needs information or a choice."""

    question: str
    options: list[str] = Field(default_factory=list)
    other: bool = Field(
        True, description="With options: whether an answer other than them is taken (free text)."
    )


class QuestionAnswer(_Answer):
    """`answer` with free text, or one of the options (only them, if the request takes no other)."""

    requires: ClassVar[dict[str, tuple[str, ...]]] = {"answer": ("answer",)}

    decision: Literal["answer", "expired", "cancelled"] = Field(title="Decision")
    answer: str | None = Field(None, title="Answer")


class ReviewRequest(Routing):
    """A person approves, edits or rejects a draft."""

    draft: Any
    what: str = "draft"
    """What the draft is, in a word the pages say: `draft`, an agent's `reply`, a `plan`."""


class ReviewAnswer(_Answer):
    """`approve`, `edit` with the new content, or `reject` with a reason."""

    requires: ClassVar[dict[str, tuple[str, ...]]] = {"edit": ("content",), "reject": ("reason",)}
    optional: ClassVar[dict[str, tuple[str, ...]]] = {"approve": ("reason",), "edit": ("reason",)}

    decision: Literal["approve", "edit", "reject", "expired", "cancelled"] = Field(title="Decision")
    content: Any = Field(None, title="Edited content")
    reason: str | None = Field(None, title="Reason")


class TakeoverRequest(Routing):
    """A person takes the case over from the agent."""

    conversation: list[dict[str, Any]] = Field(default_factory=list)
    outcome_schema: dict[str, Any] = Field(
        default_factory=dict,
        description="The JSON Schema of the outcome a resolution records ({}: any object).",
    )


class TakeoverAnswer(_Answer):
    """`resolve` with a resolution, or `return` the case to the agent with guidance."""

    requires: ClassVar[dict[str, tuple[str, ...]]] = {
        "resolve": ("resolution",),
        "return": ("guidance",),
    }
    optional: ClassVar[dict[str, tuple[str, ...]]] = {"resolve": ("outcome",)}

    decision: Literal["resolve", "return", "expired", "cancelled"] = Field(title="Decision")
    resolution: str | None = Field(None, title="Resolution")
    outcome: dict[str, Any] | None = Field(None, title="Outcome")
    guidance: str | None = Field(None, title="Guidance")


class InputRequest(Routing):
    """Any other typed request of a workflow: its data shown, its answer of the workflow's type.

    `answer_schema` is the JSON Schema of the answer's type and `answer_type` that type written
    down (`human.typed.describe`), so the answer is checked as that type when it is posted and
    delivered as it after any restart.
    """

    data: Any = None
    request_type: str = Field("", description="The request data's type, as the workflow names it.")
    answer_schema: dict[str, Any] = Field(default_factory=dict)
    answer_type: Any = None


class InputAnswer(_Answer):
    """An answer of the type the workflow asked for."""

    requires: ClassVar[dict[str, tuple[str, ...]]] = {"answer": ("answer",)}

    decision: Literal["answer", "expired", "cancelled"] = Field(title="Decision")
    answer: Any = Field(None, title="Answer")


class Kind(BaseModel):
    """What Baton knows of one kind: its models and the decisions a person may take."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    request_model: type[Routing]
    answer_model: type[_Answer]
    decisions: tuple[str, ...]

    def response_schema(self, typed: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        """The answer's JSON Schema, offering only a person's decisions.

        `typed` gives fields their own schemas: an approval's `arguments` (the tool's, which an
        edit must fit), an input's `answer` (the workflow's answer type). Their `$defs` join the
        answer's own, so their references resolve from the root.
        """
        schema: dict[str, Any] = json.loads(_base_schema(self.answer_model, self.decisions))
        for name, sub in (typed or {}).items():
            if not sub:
                continue
            own = {k: v for k, v in sub.items() if k != "$defs"}
            schema["properties"][name] = {**own, "title": schema["properties"][name]["title"]}
            if sub.get("$defs"):
                schema.setdefault("$defs", {}).update(sub["$defs"])
        return schema


@functools.cache
def _base_schema(answer_model: type[BaseModel], decisions: tuple[str, ...]) -> str:
    schema = answer_model.model_json_schema()
    schema["properties"]["decision"]["enum"] = list(decisions)
    return json.dumps(schema)


@functools.cache
def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON Schema, computed once per model (treat the result as read-only)."""
    return model.model_json_schema()


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            name="approval",
            request_model=ApprovalRequest,
            answer_model=ApprovalAnswer,
            decisions=("approve", "edit", "reject"),
        ),
        Kind(
            name="question",
            request_model=QuestionRequest,
            answer_model=QuestionAnswer,
            decisions=("answer",),
        ),
        Kind(
            name="review",
            request_model=ReviewRequest,
            answer_model=ReviewAnswer,
            decisions=("approve", "edit", "reject"),
        ),
        Kind(
            name="takeover",
            request_model=TakeoverRequest,
            answer_model=TakeoverAnswer,
            decisions=("resolve", "return"),
        ),
        Kind(
            name="input",
            request_model=InputRequest,
            answer_model=InputAnswer,
            decisions=("answer",),
        ),
    )
}

CHECKPOINT_TYPES: tuple[type[BaseModel], ...] = (
    ProposedAction,
    Escalation,
    *(kind.request_model for kind in KINDS.values()),
    *(kind.answer_model for kind in KINDS.values()),
)


def kind_of(request: object) -> Kind | None:
    """The kind whose request model `request` is an instance of, if any."""
    return next((k for k in KINDS.values() if isinstance(request, k.request_model)), None)
