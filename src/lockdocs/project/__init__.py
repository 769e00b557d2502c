"""Find the declaration files, load and validate them, and resolve them into one `Model`.

Everything here returns diagnostics instead of raising: a run reports every problem in every
file at once, sorted, and builds no model when any of them is an error.

- `root`: find_root, the project's folder (light: no YAML).
- `files`: the paths folder walk, load_documents and the project's limits.
- `state`: the Resolver every section shares (documents, diagnostics, reference checks).
- `locks`: the locks, their parents and replicas.
- `steps`: a path's steps, sets and the foreign-key takes of writes.
- `paths`: transaction kinds, groups and paths, and `run:` loops.
- `rules`: rules and exceptions (the rule catalog only when there are exceptions).
- `assemble`: assemble_model, the model assembled from the sections.
"""
