"""`lockdocs observe`: the transactions a running application made, read from the server log
with `log_statement = 'all'`, checked against the declarations.

The stages, in the order a log flows through them: `logged` tells the statements in the log's
entries (simple and extended protocol, with their parameters), `shapes` reads each statement
once per shape (its normalized text) into transaction control and lock specs, `locks` turns
a spec into the declared lock it takes (or an undeclared one), `sessions` rebuilds every
backend's transactions (blocks, savepoints, errors, a log cut in the middle), `paths` names
the declared path of each transaction, `orders` collects the observed lock orders and finds
the cycles they close, `findings` words the LD8xx findings, `coverage` counts what ran, and
`propose` drafts declarations for what the log showed. `run` composes them in one pass;
memory holds the open transactions and one entry per distinct shape, never the log.
"""
