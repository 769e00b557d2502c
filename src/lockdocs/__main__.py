"""Allow `python -m lockdocs`."""

from __future__ import annotations

from lockdocs.entry import console

if __name__ == "__main__":
    console()
