// Package fulfillment reconciles Stripe subscriptions.
package fulfillment

import (
	"context"
	"database/sql"
)

// ReconcileSubscription runs after the Stripe read, in a materializing transaction: the
// rendezvous is already held, then the subscription lock (hashtext of the bare Stripe
// subscription id, widened to bigint).
func ReconcileSubscription(ctx context.Context, tx *sql.Tx, subscriptionID string) error {
	if _, err := tx.ExecContext(ctx,
		"SELECT pg_advisory_xact_lock("+
			"hashtext($1)::bigint)", subscriptionID); err != nil {
		return err
	}
	return reconcileItems(ctx, tx, subscriptionID)
}

func reconcileItems(ctx context.Context, tx *sql.Tx, subscriptionID string) error {
	_, err := tx.ExecContext(ctx, "SELECT core.confer($1, $2, $3)", 0, 0, 0)
	return err
}

// supersedeReleasedDowngrades runs in a second, plain transaction after the commit.
func supersedeReleasedDowngrades(ctx context.Context, tx *sql.Tx, subscriptionID string) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1)::bigint)`, subscriptionID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `
		UPDATE core.scheduled_changes
		SET state = 'superseded'
		WHERE subscription_id = $1 AND state = 'scheduled'`, subscriptionID)
	return err
}
