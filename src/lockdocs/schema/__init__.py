"""The JSON Schema of the two kinds of declaration file, and validation against it.

`definition` assembles the two schemas from `vocabulary` (modes, ids, constructors), `locks`,
`sections` and `steps`; `validate` runs them (through `fastcheck`) and locates the errors.
"""
