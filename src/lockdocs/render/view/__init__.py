"""The page as data: every sort, group, join and derived sentence, done here in Python.

Templates only loop over these objects and escape what they print, so a team that overrides a
template cannot get the order or the facts wrong, and the golden tests pin the facts in one place.
Strings here are raw (unescaped) user text unless a field says otherwise; `Link` carries text and
a target that the `link` filter escapes and checks.

One module per section of the page (locks, keys, transactions, paths and their steps, the lock
order and, in `bothways`, the pairs taken in both orders, rules and exceptions), all built from
one shared `base.PageContext`; `page.build_page` assembles them.
"""

from __future__ import annotations

from lockdocs.render.view.base import group_key, group_slugs
from lockdocs.render.view.page import PageView, build_page

__all__ = ["PageView", "build_page", "group_key", "group_slugs"]
