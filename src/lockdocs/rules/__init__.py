"""The rule registry and the checks, one module per family; docs live beside each check.

`registry` holds the rules, `catalog` the one list of the modules that register them, `context`
what every check reads. The lock-order family: `ordering` (LD201, LD202), `upgrades` (LD203),
`limits` (LD204, LD209) and `witnesses` (how their findings show the proof).
"""
