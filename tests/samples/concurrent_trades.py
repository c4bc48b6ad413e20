"""MAF's `03-workflows/tool-approval/concurrent_builder_tool_approval.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()`, its event-stream printing and its Foundry client:
two agents in a `ConcurrentBuilder`, each with the same tools, two of them needing approval. Its
agents are built as `main()` builds them, on the model Baton is configured with; on the scripted
model each looks its stock up, then asks for a trade and a stop-loss in one turn, so that four
approvals wait at once, two from each agent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from agent_framework import Agent, Content, Message, tool
from agent_framework.orchestrations import ConcurrentBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

CARRIED_OUT: list[str] = []
"""The trades and stop-losses that really ran (in this process): each approved call runs once."""


# 1. Define market data tools (no approval required)
# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production;
# See:
# samples/02-agents/tools/function_tool_with_approval.py
# samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def get_stock_price(symbol: Annotated[str, "The stock ticker symbol"]) -> str:
    """Get the current stock price for a given symbol."""
    # Mock data for demonstration
    prices = {"AAPL": 175.50, "GOOGL": 140.25, "MSFT": 378.90, "AMZN": 178.75}
    price = prices.get(symbol.upper(), 100.00)
    return f"{symbol.upper()}: ${price:.2f}"


@tool(approval_mode="never_require")
def get_market_sentiment(symbol: Annotated[str, "The stock ticker symbol"]) -> str:
    """Get market sentiment analysis for a stock."""
    # Mock sentiment data
    mock_data = {
        "AAPL": "Market sentiment for AAPL: Bullish (68% positive mentions in last 24h)",
        "GOOGL": "Market sentiment for GOOGL: Neutral (50% positive mentions in last 24h)",
        "MSFT": "Market sentiment for MSFT: Bullish (72% positive mentions in last 24h)",
        "AMZN": "Market sentiment for AMZN: Bearish (40% positive mentions in last 24h)",
    }
    return mock_data.get(symbol.upper(), f"Market sentiment for {symbol.upper()}: Unknown")


# 2. Define trading tools (approval required)
@tool(approval_mode="always_require")
def execute_trade(
    symbol: Annotated[str, "The stock ticker symbol"],
    action: Annotated[str, "Either 'buy' or 'sell'"],
    quantity: Annotated[int, "Number of shares to trade"],
) -> str:
    """Execute a stock trade. Requires human approval due to financial impact."""
    CARRIED_OUT.append(f"trade {symbol} {action} {quantity}")
    return f"Trade executed: {action.upper()} {quantity} shares of {symbol.upper()}"


@tool(approval_mode="always_require")
def set_stop_loss(
    symbol: Annotated[str, "The stock ticker symbol"],
    stop_price: Annotated[float, "The stop-loss price"],
) -> str:
    """Set a stop-loss order for a stock. Requires human approval due to financial impact."""
    CARRIED_OUT.append(f"stop-loss {symbol} {stop_price}")
    return f"Stop-loss set for {symbol.upper()} at ${stop_price:.2f}"


@tool(approval_mode="never_require")
def get_portfolio_balance() -> str:
    """Get current portfolio balance and available funds."""
    return "Portfolio: $50,000 invested, $10,000 cash available. Holdings: AAPL, GOOGL, MSFT."


# --- Baton --------------------------------------------------------------------------------------


class TaskInput(BaseModel):
    task: str


@register("concurrent_trades", input_model=TaskInput, start_message=lambda i: i.task)
def build_workflow(services: RunServices) -> Any:
    microsoft_agent = Agent(
        client=services.chat_clients.for_persona("MicrosoftAgent"),
        name="MicrosoftAgent",
        instructions=(
            "You are a personal trading assistant focused on Microsoft (MSFT). "
            "You manage my portfolio and take actions based on market data. "
            "Use stop-loss orders to manage risk."
        ),
        tools=[
            get_stock_price,
            get_market_sentiment,
            get_portfolio_balance,
            execute_trade,
            set_stop_loss,
        ],
    )

    google_agent = Agent(
        client=services.chat_clients.for_persona("GoogleAgent"),
        name="GoogleAgent",
        instructions=(
            "You are a personal trading assistant focused on Google (GOOGL). "
            "You manage my trades and portfolio based on market conditions. "
            "Use stop-loss orders to manage risk."
        ),
        tools=[
            get_stock_price,
            get_market_sentiment,
            get_portfolio_balance,
            execute_trade,
            set_stop_loss,
        ],
    )
    return ConcurrentBuilder(participants=[microsoft_agent, google_agent]).build()


def trader(symbol: str, quantity: int, stop: float) -> Any:
    """A trading assistant's turns: look its stock up, then trade and set a stop-loss at once."""

    def play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
        results = [c for m in messages for c in m.contents if c.type == "function_result"]
        if not results:
            return [
                Content.from_function_call(
                    f"price-{symbol}", "get_stock_price", arguments=json.dumps({"symbol": symbol})
                ),
                Content.from_function_call(
                    f"mood-{symbol}",
                    "get_market_sentiment",
                    arguments=json.dumps({"symbol": symbol}),
                ),
            ]
        if len(results) == 2:
            trade = {"symbol": symbol, "action": "buy", "quantity": quantity}
            return [
                Content.from_function_call(
                    f"trade-{symbol}", "execute_trade", arguments=json.dumps(trade)
                ),
                Content.from_function_call(
                    f"stop-{symbol}",
                    "set_stop_loss",
                    arguments=json.dumps({"symbol": symbol, "stop_price": stop}),
                ),
            ]
        return [Content.from_text("; ".join(str(r.result) for r in results[2:]))]

    return play


scripted_plays(
    {"MicrosoftAgent": trader("MSFT", 13, 340.0), "GoogleAgent": trader("GOOGL", 35, 126.0)}
)
