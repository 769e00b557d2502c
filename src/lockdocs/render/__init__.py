"""Rendering: the model and its findings -> the lock page (Markdown), DOT diagrams and SVGs.

The pipeline is view (`view.py`: every sort, group and join, in Python) -> templates
(`lockdocs/templates/*.j2`, dumb loops, every user string escaped by `escape.py` where it lands)
and `dot.py` (DOT text written by hand, deterministic) -> `build.py` (atomic writes, drift).
"""
