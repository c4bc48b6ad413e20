# Copyright (c) Microsoft. All rights reserved.

import asyncio
from dataclasses import dataclass
from typing import Any

from agent_framework import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowExecutor,
    handler,
)
from typing_extensions import Never

"""
Sample: Sub-Workflows (Basics)

What it does:
- Shows how a parent workflow invokes a sub-workflow via `WorkflowExecutor` and collects results.
- Example: parent orchestrates multiple text processors that count words/characters.
- Demonstrates how sub-workflows complete by yielding outputs when processing is done.

Prerequisites:
- No external services required.
"""


# Message types
@dataclass
class TextProcessingRequest:
    """Request to process a text string."""

    text: str
    task_id: str


@dataclass
class TextProcessingResult:
    """Result of text processing."""

    task_id: str
    text: str
    word_count: int
    char_count: int


# Sub-workflow executor
class TextProcessor(Executor):
    """Processes text strings - counts words and characters."""

    def __init__(self):
        super().__init__(id="text_processor")

    @handler
    async def process_text(
        self, request: TextProcessingRequest, ctx: WorkflowContext[Never, TextProcessingResult]
    ) -> None:
        """Process a text string and return statistics."""
        text_preview = f"'{request.text[:50]}{'...' if len(request.text) > 50 else ''}'"
        print(f"Sub-workflow processing text (Task {request.task_id}): {text_preview}")

        # Simple text processing
        word_count = len(request.text.split()) if request.text.strip() else 0
        char_count = len(request.text)

        print(f"Task {request.task_id}: {word_count} words, {char_count} characters")

        # Create result
        result = TextProcessingResult(
            task_id=request.task_id,
            text=request.text,
            word_count=word_count,
            char_count=char_count,
        )

        print(f"Sub-workflow completed task {request.task_id}")
        # Signal completion by yielding the result
        await ctx.yield_output(result)


# Parent workflow
class TextProcessingOrchestrator(Executor):
    """Orchestrates multiple text processing tasks using sub-workflows."""

    results: list[TextProcessingResult] = []
    expected_count: int = 0

    def __init__(self):
        super().__init__(id="text_orchestrator")

    @handler
    async def start_processing(
        self, texts: list[str], ctx: WorkflowContext[TextProcessingRequest]
    ) -> None:
        """Start processing multiple text strings."""
        print(f"Starting processing of {len(texts)} text strings")
        print("=" * 60)

        self.expected_count = len(texts)

        # Send each text to a sub-workflow
        for i, text in enumerate(texts):
            task_id = f"task_{i + 1}"
            request = TextProcessingRequest(text=text, task_id=task_id)
            print(f"Dispatching {task_id} to sub-workflow")
            await ctx.send_message(request, target_id="text_processor_workflow")

    @handler
    async def collect_result(
        self,
        result: TextProcessingResult,
        ctx: WorkflowContext[Never, list[TextProcessingResult]],
    ) -> None:
        """Collect results from sub-workflows."""
        print(f"Collected result from {result.task_id}")
        self.results.append(result)

        # Check if all results are collected
        if len(self.results) == self.expected_count:
            print("\nAll tasks completed!")
            await ctx.yield_output(self.results)


def get_result_summary(results: list[TextProcessingResult]) -> dict[str, Any]:
    """Get a summary of all processing results."""
    total_words = sum(result.word_count for result in results)
    total_chars = sum(result.char_count for result in results)
    avg_words = total_words / len(results) if results else 0
    avg_chars = total_chars / len(results) if results else 0

    return {
        "total_texts": len(results),
        "total_words": total_words,
        "total_characters": total_chars,
        "average_words_per_text": round(avg_words, 2),
        "average_characters_per_text": round(avg_chars, 2),
    }


def create_sub_workflow() -> WorkflowExecutor:
    """Create the text processing sub-workflow."""
    print("Setting up sub-workflow...")

    text_processor = TextProcessor()
    processing_workflow = WorkflowBuilder(start_executor=text_processor).build()

    return WorkflowExecutor(processing_workflow, id="text_processor_workflow")


# --- Baton: the registration (the sample's `main()` is left out; its six texts are the run's ----
# --- input, and its workflow is built as `main()` builds it. One pause added: the text ---------
# --- processor asks a person for the text of an empty one, answered after a restart) ----------

from agent_framework import Workflow, response_handler  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register  # noqa: E402

TEXTS = [  # main()'s test data
    "Hello world! This is a simple test.",
    "Python is a powerful programming language used for many applications.",
    "Short text.",
    "This is a longer text with multiple sentences. It contains more words and characters. We use it to test our text processing workflow.",  # noqa: E501
    "",  # Empty string
    "   Spaces   around   text   ",
]


class AskingTextProcessor(TextProcessor):
    """The sample's processor, asking a person for the text of an empty one."""

    @handler
    async def process_text(
        self, request: TextProcessingRequest, ctx: WorkflowContext[Never, TextProcessingResult]
    ) -> None:
        if not request.text:
            await ctx.request_info(request, str)
            return
        await TextProcessor.process_text(self, request, ctx)

    @response_handler
    async def text_given(
        self,
        request: TextProcessingRequest,
        text: str,
        ctx: WorkflowContext[Never, TextProcessingResult],
    ) -> None:
        given = TextProcessingRequest(text=text, task_id=request.task_id)
        await TextProcessor.process_text(self, given, ctx)


class Texts(BaseModel):
    texts: list[str] = TEXTS


def create_asking_sub_workflow() -> WorkflowExecutor:
    """`create_sub_workflow()`, its processor asking for an empty text."""
    processing_workflow = WorkflowBuilder(start_executor=AskingTextProcessor()).build()
    # its request goes on to the person (not handled by the orchestrator)
    return WorkflowExecutor(
        processing_workflow, id="text_processor_workflow", propagate_request=True
    )


def build(asking: bool = True) -> Workflow:
    """`main()`'s parent workflow."""
    orchestrator = TextProcessingOrchestrator()
    sub_workflow_executor = create_asking_sub_workflow() if asking else create_sub_workflow()
    return (
        WorkflowBuilder(start_executor=orchestrator)
        .add_edge(orchestrator, sub_workflow_executor)
        .add_edge(sub_workflow_executor, orchestrator)
        .build()
    )


@register("sub_workflow_basics", input_model=Texts, start_message=lambda i: list(i.texts))
def build_workflow(services: RunServices) -> Workflow:
    """MAF's sub_workflow_basics: texts counted in a sub-workflow, an empty one asked for."""
    return build()
