"""Finding a run's hook by name, as only a test may: the kit holds the hook key of its engine."""

from __future__ import annotations

import json

from ..core.engine import Engine
from ..core.model.states import HookStatus
from ..core.model.tokens import TOKEN_PREFIX, derive_token
from ..errors import HookNotFound


def hook_token(engine: Engine, run_id: str, name: str) -> str:
    """The token of the run's hook called ``name`` (its latest pending one, else its latest).

    Raises:
        HookNotFound: the run has no hook of that name (the message never holds a token).
    """
    hooks = [h for h in engine.store.hooks_for_run(run_id) if h.name == name]
    if not hooks:
        raise HookNotFound(f"run {run_id} has no hook named {name!r}")
    hook = next((h for h in reversed(hooks) if h.status == HookStatus.PENDING), hooks[-1])
    event = engine.store.get_outcome(run_id, hook.pos)
    info = json.loads(event.data or "{}") if event is not None else {}
    if "token" in info:  # histories written before tokens were derived
        return str(info["token"])
    return derive_token(engine.settings.hook_secret, run_id, hook.pos, info["nonce"])


def find_token(engine: Engine, run_id: str, name_or_token: str) -> str:
    """A hook token from a hook name of the run, or the token itself."""
    if name_or_token.startswith(TOKEN_PREFIX) and not any(
            h.name == name_or_token for h in engine.store.hooks_for_run(run_id)):
        return name_or_token
    return hook_token(engine, run_id, name_or_token)
