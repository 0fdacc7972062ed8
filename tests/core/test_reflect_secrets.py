"""The optimizer is a model provider too: an agent answer that printed a secret must be
masked before it is quoted in the reflection prompt."""

from __future__ import annotations

import json

from gitsleep.base.redact import Redactor
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import Check, EpochSettings, Judge, Task
from gitsleep.core.ports import Answer, Backend, ModelCall

SECRET = "sk-proj-Zq8vLk9liteAs5dFg2hJk4lQw7eR"
SKILL = ("# Skill\nAnswer well.\n\n<!-- gitsleep:learned:start -->\n"
         "<!-- gitsleep:learned:end -->\n")


class LeakyAgent(Backend):
    """An agent whose every answer quotes a key from its environment; the optimizer
    proposes nothing. Records what the optimizer was shown."""

    name = "leaky"

    def __init__(self) -> None:
        self.shown: list[str] = []

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose":
            self.shown += [text for _role, text in call.messages]
            return Answer(json.dumps({"edits": []}), None, 1, 1)
        return Answer(f"Here is the key I found: {SECRET} and some more words", None, 1, 1)


def test_a_secret_in_an_agent_answer_never_reaches_the_optimizer() -> None:
    wants = Judge(kind="rule", checks=(Check("contains", "Alpha"),))
    tasks = [Task("t1", "p1", "train", wants), Task("t2", "p2", "train", wants),
             Task("v1", "p3", "val", wants)]
    backend = LeakyAgent()
    settings = EpochSettings(model="a", optimizer_model="o", judge_model="j", proposals=1,
                             rounds=1)
    run_epoch(tasks, {"skill": SKILL, "memory": None}, settings, backend, skill="s",
              redact=Redactor([SECRET]).redact)
    assert backend.shown, "the optimizer was never asked"
    prompt = "\n".join(backend.shown)
    assert "Here is the key I found:" in prompt  # the answer is quoted, the key is not
    assert not any(SECRET[i:i + 8] in prompt for i in range(len(SECRET) - 7))
