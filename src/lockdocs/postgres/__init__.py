"""Proof on a real PostgreSQL: a throwaway server, replay of a finding, explain of a server log.

`server` starts and removes a private cluster (or checks an existing one), `scenario` turns a
finding's proof into sessions and steps, `driver` runs them on the server, `isolation` writes
them as an isolation-tester spec, `logs` reads server logs and `explain` maps what they report
back to the declarations.
"""
