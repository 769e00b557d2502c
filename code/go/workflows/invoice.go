// Package workflows holds the Stripe invoice reconcile.
package workflows

import (
	"context"
	"database/sql"
)

type invoiceReconcile struct {
	db *sql.DB
}

// converge takes the invoice lock in a plain transaction and writes the invoice's rows.
func (r *invoiceReconcile) converge(ctx context.Context, invoiceID string) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1)::bigint)", invoiceID); err != nil {
		return err
	}
	return tx.Commit()
}
