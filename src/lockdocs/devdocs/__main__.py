"""`python -m lockdocs.devdocs`: write the generated reference pages (or `--check` them)."""

from __future__ import annotations

from lockdocs.devdocs import main

raise SystemExit(main())
