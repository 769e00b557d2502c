// Package catalogsync syncs products to Stripe.
package catalogsync

import (
	"context"
	"database/sql"
)

// Sync takes the product lock and leaves the transaction open when it commits nothing; the
// caller rolls it back after answering.
func Sync(ctx context.Context, tx *sql.Tx, productID string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1)::bigint)`, productID)
	return err
}
