"""Declarations against the code: the locks the project's SQL takes, and how they compare.

`files` finds and measures the files, `sources` (and `golang` for Go) turns them into SQL
texts (a .sql file, or a string literal of a Python or Go file with a map back to its line and
column); `sqltext` parses each with Postgres's own parser (pglast), statement by statement
when needed (`statements`, which survives the lexer's errors), PL/pgSQL bodies included
(`plpgsql`, with `standin`'s types for what its reader does not know, on the shared
`sqlbase`); `tree` finds the locks in a parse tree and `keyshape` reads advisory key
expressions; `collect` globs the files, keeps the per-file cache (`cache`) and resolves what
depends on other files (key columns, foreign keys); `decls` says what the declarations expect,
`compare` matches the result with the model and reports findings and coverage (what was not
read included), `waiving` applies the waivers written in the code, and `howtaken` checks that
a matched statement takes its lock the declared way. Nothing here is imported unless `code:`
is set or `lockdocs scan` runs.
"""
