"""Through the real gateway: a dialogue written in one remember_batch recalls the answer to a question
turn, and a dated question prefers the turn of that day."""

from __future__ import annotations

from typing import Any

ME = "chat:nate"

DIALOGUE = [
    ("Joanna — 8:10 pm on 7 November, 2022", "That makes sense! So what's your favorite game?"),
    ("Nate — 8:10 pm on 7 November, 2022", "Xenoblade Chronicles, the fantasy RPG. I highly recommend it!"),
    ("Joanna — 8:10 pm on 7 November, 2022", "Nice. I went for a walk by the river."),
    ("Nate — 8:10 pm on 7 November, 2022", "Sounds relaxing."),
    ("Joanna — 2:00 pm on 20 May, 2022", "I watched a great movie last night, so gripping."),
    ("Joanna — 2:00 pm on 12 May, 2022", "I watched a great movie last night, so gripping!"),
]


def _recall(gateway: Any, query: str) -> list[str]:
    got = gateway.result("meta/agent_memory/recall", {"identity": ME, "query_text": query, "max_entries": 8})
    return [r["memory_id"] for r in got["records"]]


def test_a_dialogue_written_in_one_batch_recalls_the_answer_and_the_dated_turn(gateway: Any) -> None:
    out = gateway.result(
        "meta/agent_memory/remember_batch",
        {"identity": ME, "records": [{"title": t, "body": b} for t, b in DIALOGUE]},
    )
    ids = [r["memory_id"] for r in out["results"]]
    question, answer = ids[0], ids[1]
    found = _recall(gateway, "What is Nate's favorite game?")
    # The answer shares no word but the speaker's name with the query; it follows the question.
    assert found[:2] in ([question, answer], [answer, question]), found
    dated = _recall(gateway, "What movie did Joanna watch on 11 May, 2022?")
    assert dated[0] == ids[5], dated  # "last night" on 12 May is 11 May
    assert _recall(gateway, "What movie did Joanna watch on 19 May, 2022?")[0] == ids[4]
