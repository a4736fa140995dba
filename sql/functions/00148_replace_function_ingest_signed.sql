-- +goose Up
-- begin sql/src/ingest/ingest_signed.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.ingest_signed is ingest_webhook() for stacks with no verifier of
-- their own (PostgREST, an edge function, a cron job): it verifies the
-- signature of a raw delivery inside Postgres with the provider's secrets from
-- webhooks.provider_secrets, extracts the idempotency key and event type with
-- the runner's rules for the provider's kind, then calls ingest_webhook().
-- Timestamps are checked against now(); nobody who calls it can choose
-- another clock. The work is webhooks._ingest_signed_at's (see there for the
-- refusals, their SQLSTATEs and the bounds on the headers).
--
-- SECURITY DEFINER with a pinned search_path: a role granted EXECUTE
-- (webhooks.grant_ingest_signed) can verify with the secrets but cannot read
-- them.
--
-- trace_parent (default NULL): the caller's W3C traceparent, stored with a
-- new event like ingest_webhook's (malformed: NULL), so that pginbox serve's
-- handler runs of it join the caller's trace.
CREATE OR REPLACE FUNCTION webhooks.ingest_signed(
    provider     text,
    headers      jsonb,
    body         bytea,
    trace_parent text DEFAULT NULL
)
RETURNS TABLE (event_id bigint, outcome text)
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.event_id, i.outcome
    FROM webhooks._ingest_signed_at(ingest_signed.provider, ingest_signed.headers, ingest_signed.body,
                                    pg_catalog.now(), ingest_signed.trace_parent) AS i
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.ingest_signed(text, jsonb, bytea, text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.ingest_signed(text, jsonb, bytea, text) IS
  'Verifies a raw webhook delivery inside Postgres and stores it: the provider''s signature over the exact '
  'body bytes with its secrets from webhooks.provider_secrets (rotation: any secret), timestamps against now(), '
  'key and event type by the runner''s rules for its kind (sume, stripe, github, standardwebhooks, shopify, paddle, '
  'slack, linear, square - square signs the notification URL stored by set_provider), then '
  'webhooks.ingest_webhook() (keys from unsigned headers - github, shopify, linear, sume by X-Sume-Event-Id - with the '
  'body''s SHA-256: a signed body already stored under another key is a duplicate). headers: JSON object of header '
  'name (any case) to string or array of strings, at most 64 KiB; the signature header at most 4 KiB and 8 '
  'signatures (standardwebhooks: 2 v1a); a timestamp out of tolerance is refused before any signature is checked. Returns (event_id, outcome) like ingest_webhook; a signed slack url_verification stores nothing '
  'and returns (NULL, ''challenge''): answer 200 {"challenge": <its challenge>}. A refused delivery writes nothing and raises '
  '''pginbox: <reason>'' with SQLSTATE 28000 (the runner''s 401: signature/timestamp), 22023 (400: body, key, '
  'event id or type, headers too large) or 42704 (404: unknown provider). No pgcrypto or other extension. '
  'SECURITY DEFINER: grant it with webhooks.grant_ingest_signed(role); the role cannot read the secrets. '
  'trace_parent (default NULL): the caller''s W3C traceparent, stored with a new event (malformed: NULL).';
-- end sql/src/ingest/ingest_signed.sql
-- ingest_signed gains a last, defaulted argument, trace_parent: a new
-- signature. The roles that could execute the old one may execute the new
-- one; then the old one goes (CREATE alone would leave two overloads and
-- every three-argument call ambiguous).
-- +goose StatementBegin
DO $$
DECLARE
    v_role text;
BEGIN
    FOR v_role IN
        SELECT r.rolname
        FROM pg_catalog.pg_proc AS p
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
        JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
        WHERE p.oid = 'webhooks.ingest_signed(text, jsonb, bytea)'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner
        ORDER BY r.rolname
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION webhooks.ingest_signed(text, jsonb, bytea, text) TO %I', v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd

DROP FUNCTION webhooks.ingest_signed(text, jsonb, bytea);
