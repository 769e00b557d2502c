"""Proof on a real PostgreSQL: a throwaway server, replay of a finding, explain of a server log.

- server: a private cluster (initdb + pg_ctl, Unix socket only) and scratch databases;
- stopping: a signal raised as an exception, so the server and databases are cleaned up;
- statements: declared locks -> the SQL that takes them, with their real keys;
- scenario, driver, replay, present, isolation, run: `lockdocs replay` (a finding's proof ->
  sessions and steps, run step by step on the server, judged, printed, or written as an
  isolation-tester spec);
- logs, serverlog, sqlread, cases, explain, explain_output: `lockdocs explain` (Postgres's lock
  words and log formats, statements read with pglast, the waits decoded to declared locks and
  paths).
"""
