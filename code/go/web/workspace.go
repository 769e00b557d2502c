// Package web serves the FedWiki handlers.
package web

import (
	"context"
	"database/sql"
)

// withWorkspaceTx takes the workspace lock first, then runs the handler's statements.
func withWorkspaceTx(ctx context.Context, db *sql.DB, workspaceID string, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1::text)::bigint)", workspaceID); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
