"""`python -m lockdocs.devdocs`: write the generated reference pages and shipped schemas (or `--check` them)."""

from __future__ import annotations

from lockdocs.devdocs import main

raise SystemExit(main())
