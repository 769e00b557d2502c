"""lockdocs: declare database locks once, check their order, render the page."""

from __future__ import annotations

__version__ = "0.1.0"
