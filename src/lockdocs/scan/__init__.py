"""Declarations against the code: the locks the project's SQL takes, and how they compare.

`sources` turns files into SQL texts (a .sql file, or a string literal of a Python or Go file
with a map back to its line and column); `sqltext` parses each with Postgres's own parser
(pglast), PL/pgSQL bodies included; `tree` finds the locks in a parse tree and `keyshape` reads
advisory key expressions; `project` globs the files, keeps the per-file cache and resolves what
depends on other files (key columns, foreign keys); `compare` matches the result with the model
and reports findings and coverage. Nothing here is imported unless `code:` is set or `lockdocs
scan` runs.
"""
