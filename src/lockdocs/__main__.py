"""Allow `python -m lockdocs`."""

from __future__ import annotations

from lockdocs.entry import main

if __name__ == "__main__":
    main()
