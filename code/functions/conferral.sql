-- Conferral and settlement. Each of these functions locks the pool row itself, so a caller
-- that goes straight to one of them still holds the row before any position changes.

CREATE OR REPLACE FUNCTION core.confer(p_pool_id bigint, p_grant_id bigint, p_rank integer)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM core.assert_rendezvous();
    PERFORM 1 FROM core.resource_pools WHERE pool_id = p_pool_id FOR UPDATE;
    INSERT INTO core.pool_positions (pool_id, grant_id, tier_rank, quantity)
    VALUES (p_pool_id, p_grant_id, p_rank, 1)
    ON CONFLICT (pool_id, grant_id) DO UPDATE SET tier_rank = excluded.tier_rank;
END
$$;

CREATE OR REPLACE FUNCTION core.end_conferral(p_pool_id bigint, p_grant_id bigint)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM core.assert_rendezvous();
    PERFORM 1 FROM core.resource_pools WHERE pool_id = p_pool_id FOR UPDATE;
    DELETE FROM core.pool_positions WHERE pool_id = p_pool_id AND grant_id = p_grant_id;
END
$$;

CREATE OR REPLACE FUNCTION core.align_conferral_shape(p_pool_id bigint)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    position record;
BEGIN
    PERFORM core.assert_rendezvous();
    PERFORM 1 FROM core.resource_pools WHERE pool_id = p_pool_id FOR UPDATE;
    FOR position IN
        SELECT grant_id, tier_rank FROM core.pool_positions WHERE pool_id = p_pool_id
        ORDER BY tier_rank
    LOOP
        UPDATE core.pool_positions
        SET quantity = 1
        WHERE pool_id = p_pool_id AND grant_id = position.grant_id;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION core.update_conferral_bounds(
    p_pool_id bigint, p_grant_id bigint, p_quantity bigint
)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM core.assert_rendezvous();
    PERFORM 1 FROM core.resource_pools WHERE pool_id = p_pool_id FOR UPDATE;
    UPDATE core.pool_positions
    SET quantity = p_quantity
    WHERE pool_id = p_pool_id AND grant_id = p_grant_id;
END
$$;

-- One owed pool of a rule change: the obligation row first, then the pool row (again, when
-- settlePool already holds it).
CREATE OR REPLACE FUNCTION core.settle_obligation(p_change_id bigint, p_pool_id bigint)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM core.assert_rendezvous();
    PERFORM 1
    FROM core.entitlement_set_change_obligations
    WHERE change_id = p_change_id AND pool_id = p_pool_id
    FOR UPDATE;
    PERFORM 1 FROM core.resource_pools WHERE pool_id = p_pool_id FOR UPDATE;
    UPDATE core.entitlement_set_change_obligations
    SET settled_at = now()
    WHERE change_id = p_change_id AND pool_id = p_pool_id;
END
$$;

-- The Suspended branch of the subscription reconcile: it locks no pool.
CREATE OR REPLACE FUNCTION core.sync_source_status(p_source text, p_status text)
RETURNS void
LANGUAGE sql AS $$
    UPDATE core.provisions SET status = p_status WHERE source = p_source;
$$;
