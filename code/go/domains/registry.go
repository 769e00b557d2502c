// Package domains allocates names in the domains registry.
package domains

import (
	"context"
	"database/sql"
)

// registryAllocationLock is the ASCII bytes of "domains" read as a bigint. A transaction that
// needs both the registry and a usage row must take the registry lock first.
const registryAllocationLock = 0x646f6d61696e73

type Registry struct {
	db *sql.DB
}

// WithLock opens a plain transaction and takes the registry lock before anything else.
func (r *Registry) WithLock(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The key is registryAllocationLock, written out so the SQL says which lock it is.
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(28270013247483507)"); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
