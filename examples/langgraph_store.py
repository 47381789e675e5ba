"""A LangGraph graph whose long-term memory is meta-memory.

Run: ``pip install -e '.[langgraph]' && python examples/langgraph_store.py``

The graph has two nodes: ``remember`` stores the user's message under ``("memories", <user>)`` and
``recall`` searches that namespace with meta-memory's recall. ``identity_segment=1`` stores each
user's items under their own meta-memory identity, so recall, the console and access control see one
identity per user. Swap the embedded handle for ``Meta.connect("http://127.0.0.1:8765")`` to use a
running gateway instead.
"""

from __future__ import annotations

import tempfile
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from meta_memory import Meta
from meta_memory.integrations.langgraph import MetaMemoryStore


class State(TypedDict):
    user: str
    message: str
    recalled: list[str]


def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    key = f"msg-{len(store.search(('memories', state['user']), limit=1000))}"
    store.put(("memories", state["user"]), key, {"text": state["message"]})
    return {}


def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
    hits = store.search(("memories", state["user"]), query=state["message"], limit=3)
    return {"recalled": [h.value["text"] for h in hits if h.value["text"] != state["message"]]}


def build_graph(store: BaseStore) -> Any:
    """The compiled two-node graph (``remember`` then ``recall``) with ``store`` as its long-term memory."""
    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    return graph.compile(store=store)


def main() -> None:
    with tempfile.TemporaryDirectory() as state_dir:
        handle = Meta.builder().persistent_state(state_dir).build()
        store = MetaMemoryStore(handle, identity_segment=1)
        app = build_graph(store)
        for user, message in [("alice", "I keep my bicycle in the garage"), ("bob", "My bicycle is red"),
                              ("alice", "Where did I leave the bicycle?")]:
            out = app.invoke({"user": user, "message": message, "recalled": []})
            print(f"{user}: {message!r} -> recalled {out['recalled']}")
        print("namespaces:", store.list_namespaces(prefix=("memories", "alice")))
        handle.close()


if __name__ == "__main__":
    main()
