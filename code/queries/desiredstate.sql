-- The desired-state relay (sqlc).

-- name: LockDesiredStateAddress :exec
SELECT pg_advisory_xact_lock(
    hashtextextended(
        'desired-state:' || sqlc.arg(connection_id)::text
            || ':' || sqlc.arg(recipient_kind)::text
            || ':' || sqlc.arg(recipient_id)::text,
        0
    )
);

-- name: LockDesiredStateRecord :one
SELECT record_id, generation
FROM core.desired_state_records
WHERE connection_id = $1 AND recipient_kind = $2 AND recipient_id = $3
FOR UPDATE;

-- name: StampDesiredStateRecordsDispatched :exec
WITH locked AS (
    SELECT record_id
    FROM core.desired_state_records
    WHERE record_id = ANY(sqlc.arg(record_ids)::bigint[])
    ORDER BY record_id
    FOR UPDATE
)
UPDATE core.desired_state_records r
SET dispatched_at = now()
FROM locked
WHERE r.record_id = locked.record_id;

-- name: ClaimDesiredStateOutbox :many
WITH claimed AS (
    SELECT notice_id
    FROM core.desired_state_outbox
    WHERE leased_until IS NULL OR leased_until < now()
    ORDER BY notice_id
    LIMIT sqlc.arg(batch)
    FOR UPDATE SKIP LOCKED
)
UPDATE core.desired_state_outbox o
SET leased_until = now() + interval '1 minute'
FROM claimed
WHERE o.notice_id = claimed.notice_id
RETURNING o.notice_id, o.record_id;
