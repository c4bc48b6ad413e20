"""The conversation a run page shows: each recorded entry in words a person reads."""

from __future__ import annotations

from web.views import messages_of


def test_a_typed_answer_shows_its_fields_not_python_s_spelling_of_them() -> None:
    """A person's answer reads as what they did, and a typed one shows its fields."""
    typed = {"approved": False, "note": "shorter"}
    entries = [
        {"type": "answer", "by": "lee", "decision": "answer", "text": typed},
        {"type": "answer", "by": "lee", "decision": "reject", "text": "not this quarter"},
        {"type": "answer", "by": "ada", "decision": "approve", "text": None},
    ]

    shown = messages_of(entries)

    assert shown[0] == {
        "role": "person",
        "speaker": "lee",
        "text": "lee answered",
        "data": typed,
        "raw": '{\n  "approved": false,\n  "note": "shorter"\n}',
    }
    assert [m["text"] for m in shown[1:]] == [
        "lee rejected: not this quarter",
        "ada approved",
    ]
