"""Allow `python -m lockdocs`."""

from __future__ import annotations

from lockdocs.cli import main

if __name__ == "__main__":
    main()
