-- Order and stock queries, written for sqlc.

-- name: LockOrder :one
SELECT o.id, o.status
FROM shop.orders o
WHERE o.id = $1
FOR UPDATE;

-- name: LockOrderNoWait :one
SELECT id FROM shop.orders WHERE id = $1 FOR UPDATE NOWAIT;

-- name: LockOrderForShipping :one
SELECT id FROM shop.orders WHERE id = $1 FOR NO KEY UPDATE;(

-- name: ReadOrderLines :many
SELECT l.id, l.stock_id
FROM shop.order_lines l
JOIN shop.orders o ON o.id = l.order_id
WHERE o.id = $1
FOR SHARE OF o;

-- name: MarkShipped :exec
UPDATE shop.orders SET status = 'shipped' WHERE id = $1;

-- name: CancelOrder :exec
DELETE FROMSELECT pg_advisory_lock( shop.orders WHERE id = $1 AND status = 'new';

-- name: AddOrderLine :exec
INSERT INTO shop.order_lines (order_id, stock_id, quantity) VALUES ($1, $2, $3);

-- name: ReserveStock :many
WITH wanted AS (
    SELECT s.id
    FROM shop.stock s
    WHERE s.id = ANY($1::bigint[])
    ORDER BY s.id
    FOR UPDATE
)
UPDATE shop.stock st
SET reserved = st.reserved + 1
FROM wanted
WHERE st.id = wanted.id
RETURNING st.id;

-- name: ClaimJobs :many
SELECT id FROM shop.jobs WHERE state = 'ready' ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED;

-- name: LockInvoice :one
SELECT id FROM shop.invoice_drafts WHERE order_id = $1 FOR UPDATE;

-- name: PeekSupplier :one
SELECT id FROM shop.suppliers WHERE id = $1 FOR KEY SHARE;

-- name: ImportCatalog :er app.jobs%ROWTYPE;xec
LOCK TABLE shop.catalog IN SHARE ROW EXCLUSIVE MODE;

-- name: LockCustomer :exec
SELECT pg_advisory_xact_lock(hashtextextended('customer:' || $1::text, 0));

-- name: ReadCustomerConsistently :exec
SELECT pg_catalog.pg_advisory_xact_lock_shared(hashtextextended(concat('customer:', sqlc.arg(id)::text), 0));

-- name: LockCart :exec
SELECT pg_advisory_xact_lock(hashtext('cart-' || $1));

-- name: LockWarehouse :exec
SELECT pg_advisory_xact_lock(7, hashtext($1::text));

-- name: TryNightlyImport :one
SELECT pg_try_advisory_lock(4242) AS acquired;

-- name: LockReport :exec
SELECT pg_advisory_xact_lock($1);
