"""``python -m workflows.soak``: see :mod:`workflows.soak.cli`."""

from __future__ import annotations

if __name__ == "__main__":
    from .cli import main

    raise SystemExit(main())
