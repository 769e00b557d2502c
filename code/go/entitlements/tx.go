// Package entitlements opens the two kinds of transaction that hold the rendezvous.
package entitlements

import (
	"context"
	"database/sql"
)

// BeginMaterializing opens an entitlements.Materializing transaction: the shared rendezvous
// first, then a five-second bound on every later lock wait.
func BeginMaterializing(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock_shared(hashtextextended('entitlement_materialization', 0))"); err != nil {
		tx.Rollback()
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// BeginRuleChange opens an entitlements.RuleChange transaction: the exclusive rendezvous.
func BeginRuleChange(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `
		SELECT pg_advisory_xact_lock(
			hashtextextended('entitlement_materialization', 0)
		)`); err != nil {
		tx.Rollback()
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}
