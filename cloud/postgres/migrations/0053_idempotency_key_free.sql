-- A write's reply, events, feed appends and COMMIT go to the server in one
-- batch (issue 20; docs/decisions.md, "PostgreSQL: BEGIN and COMMIT in the
-- statements' round trips"), so the reply's insert cannot report, for the client to
-- roll back, that a reply to the same key is stored already: it has to
-- fail the transaction itself. The insert's CTE passes whether it stored
-- a row; this raises SQLSTATE SV409 when it did not. VOLATILE, so the
-- planner never evaluates it ahead of the insert.
CREATE FUNCTION idempotency_key_free(stored boolean) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT stored THEN
        RAISE EXCEPTION 'a reply to this idempotency key is stored already' USING ERRCODE = 'SV409';
    END IF;
    RETURN true;
END
$$;
