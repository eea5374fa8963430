"""The Python examples of docs/guide.md, by section, so tests run them as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


def guide_example(heading: str) -> dict[str, Any]:
    """Run the first Python block under ``heading`` (a ``##``/``###`` title) and return its namespace."""
    text = GUIDE.read_text()
    section = text[text.index(f" {heading}\n"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, f"no example under {heading!r}"
    namespace: dict[str, Any] = {"__name__": f"guide_{abs(hash(heading))}"}
    exec(compile(code.group(1), f"guide.md: {heading}", "exec"), namespace)  # noqa: S102 - our own docs
    return namespace
