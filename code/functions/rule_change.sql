-- A rule change's commit: for each delta, in resource-key order, the set row (again: the batch
-- already holds it through LockEntitlementSet) and then the rule row.
CREATE OR REPLACE FUNCTION core.commit_rule_change(p_change_id bigint)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    delta record;
BEGIN
    PERFORM core.assert_rendezvous();
    FOR delta IN
        SELECT set_id, resource_key_id, quantity
        FROM core.entitlement_set_change_deltas
        WHERE change_id = p_change_id
        ORDER BY resource_key_id
    LOOP
        PERFORM 1 FROM core.entitlement_sets WHERE set_id = delta.set_id FOR UPDATE;
        PERFORM 1
        FROM core.entitlement_set_rules
        WHERE set_id = delta.set_id AND resource_key_id = delta.resource_key_id
        FOR UPDATE;
        UPDATE core.entitlement_set_rules
        SET quantity = delta.quantity
        WHERE set_id = delta.set_id AND resource_key_id = delta.resource_key_id;
    END LOOP;
END
$$;
