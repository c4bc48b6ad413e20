"""MAF's `03-workflows/orchestrations/magentic_human_plan_review.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()`, its event-stream printing and its Foundry client:
a Magentic orchestration (`MagenticBuilder(enable_plan_review=True)`) whose manager's plan waits
for a person, who approves it or sends it back with feedback the manager replans on. Its agents
are built as `main()` builds them, on the model Baton is configured with. On the scripted model
the manager's final answer names the plan it followed: a person's feedback lost on the way would
leave the first plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, Content, Message
from agent_framework.orchestrations import MagenticBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays
from tests.plays import magentic_manager


class Task(BaseModel):
    task: str


@register("magentic_plan_review", input_model=Task, start_message=lambda i: i.task)
def build_workflow(services: RunServices) -> Any:
    researcher_agent = Agent(
        name="ResearcherAgent",
        description="Specialist in research and information gathering",
        instructions="You are a Researcher. You find information and gather facts.",
        client=services.chat_clients.for_persona("ResearcherAgent"),
    )

    analyst_agent = Agent(
        name="AnalystAgent",
        description="Data analyst who processes and summarizes research findings",
        instructions="You are an Analyst. You analyze findings and create summaries.",
        client=services.chat_clients.for_persona("AnalystAgent"),
    )

    manager_agent = Agent(
        name="MagenticManager",
        description="Orchestrator that coordinates the workflow",
        instructions="You coordinate a team to complete tasks efficiently.",
        client=services.chat_clients.for_persona("MagenticManager"),
    )

    # enable_plan_review=True: Request human input for plan review.
    # Mark participant responses as intermediate so the stream shows the
    # conversation as it unfolds while the manager's final answer remains the
    # terminal workflow output.
    return MagenticBuilder(
        participants=[researcher_agent, analyst_agent],
        enable_plan_review=True,
        intermediate_output_from=[researcher_agent, analyst_agent],
        manager_agent=manager_agent,
        max_round_count=10,
        max_stall_count=1,
        max_reset_count=2,
    ).build()


TEAM = ("ResearcherAgent", "AnalystAgent")
manager_play = magentic_manager(
    TEAM,
    facts="none given beyond the task.",
    plan="the researcher gathers facts; the analyst summarizes.",
    answer="Summary of the team's findings, as planned.",
)


def researcher_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text("SAF cuts lifecycle emissions by up to 80%.")]


def analyst_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text("In short: promising, but costly to scale.")]


scripted_plays(
    {
        "MagenticManager": manager_play,
        "ResearcherAgent": researcher_play,
        "AnalystAgent": analyst_play,
    }
)
