"""Rendering: the model and its findings -> the lock page (Markdown), DOT diagrams and SVGs.

The pipeline is view (`view/`: every sort, group and join, in Python) -> templates
(`lockdocs/templates/*.j2`, dumb loops, every user string escaped by `escape.py` where it lands)
and `dot.py` (DOT text written by hand, deterministic), assembled by `pages.py` -> `write.py`
(atomic writes through `atomic.py`) or `drift.py` (the comparison with the committed files).
"""
