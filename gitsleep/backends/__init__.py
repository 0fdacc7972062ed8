"""Model backends behind one interface: `offline` (the simulator), `openai` and `command`
(an agent CLI); `select.create_backend` builds one by name."""

from __future__ import annotations

from gitsleep.core.ports import BACKENDS, Backend, ModelCall

__all__ = ["BACKENDS", "Backend", "ModelCall"]
