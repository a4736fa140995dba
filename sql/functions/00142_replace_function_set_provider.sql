-- +goose Up
-- begin sql/src/admin/set_provider.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.set_provider configures (or reconfigures) a provider for
-- ingest_signed(): its kind and the full list of secrets it accepts, replacing
-- the previous list. To rotate, set [new, old], switch the provider over, then
-- set [new]. Secrets kept from one call to the next keep their created_at.
-- url is the exact URL the provider was given, for the kinds whose signature
-- covers it (webhooks.provider_kinds.signs_url): required for square (it signs
-- "<notification URL><body>"), refused for the others. It replaces the previous URL too.
--
-- Every secret is checked before anything is written, as the runner's
-- verify.New checks them: none NULL or empty, and for standardwebhooks base64
-- (padded or not) after an optional "whsec_" prefix, or a "whpk_" Ed25519
-- public key (base64 of 32 bytes) for asymmetric v1a signatures. No error, notice or
-- comment ever contains a secret; errors name a secret by its position only.
-- A secret listed twice is stored once. Pass the secrets as a bind parameter
-- (not a literal in the SQL text), so a statement logged on error cannot show them.
--
-- Calls are serialised by a table lock that readers (ingest_signed) do not wait for.
CREATE OR REPLACE FUNCTION webhooks.set_provider(
    provider text,
    kind     text,
    secrets  text[],
    url      text DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    -- An absolute http(s) URL with a host, no fragment, no space or control character.
    c_url   CONSTANT text := E'^https?://[^/?#\\x01-\\x20\\x7f]+[^#\\x01-\\x20\\x7f]*$';
    v_n         integer;
    v_key       bytea;
    v_signs_url boolean;
BEGIN
    PERFORM webhooks._require_text('provider', set_provider.provider, 64);
    -- The kinds are the rows of webhooks.provider_kinds.
    SELECT k.signs_url INTO v_signs_url FROM webhooks.provider_kinds AS k WHERE k.kind = set_provider.kind;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pginbox: unknown provider kind "%" (supported: %)',
            coalesce(set_provider.kind, 'NULL'),
            (SELECT pg_catalog.string_agg(k.kind, ', ' ORDER BY k.kind COLLATE "C") FROM webhooks.provider_kinds AS k)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_n := coalesce(pg_catalog.cardinality(set_provider.secrets), 0);
    IF v_n = 0 THEN
        RAISE EXCEPTION 'pginbox: provider kind %: no secrets', set_provider.kind
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'To remove a provider, call webhooks.drop_provider(provider).';
    END IF;
    IF pg_catalog.array_ndims(set_provider.secrets) <> 1 THEN
        RAISE EXCEPTION 'pginbox: secrets must be a one-dimensional array'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR i IN 1..v_n LOOP
        IF set_provider.secrets[pg_catalog.array_lower(set_provider.secrets, 1) + i - 1] IS NULL THEN
            RAISE EXCEPTION 'pginbox: provider kind %: secret % of % is null', set_provider.kind, i, v_n
                USING ERRCODE = 'null_value_not_allowed';
        END IF;
        IF set_provider.secrets[pg_catalog.array_lower(set_provider.secrets, 1) + i - 1] = '' THEN
            RAISE EXCEPTION 'pginbox: provider kind %: secret % of % is empty', set_provider.kind, i, v_n
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF set_provider.kind = 'standardwebhooks'
           AND pg_catalog.starts_with(set_provider.secrets[pg_catalog.array_lower(set_provider.secrets, 1) + i - 1], 'whsk_') THEN
            RAISE EXCEPTION 'pginbox: provider kind standardwebhooks: secret % of %: a whsk_ signing key is the sender''s private key; configure its public key (whpk_)', i, v_n
                USING ERRCODE = 'invalid_parameter_value';
        ELSIF set_provider.kind = 'standardwebhooks'
           AND pg_catalog.starts_with(set_provider.secrets[pg_catalog.array_lower(set_provider.secrets, 1) + i - 1], 'whpk_') THEN
            IF webhooks._whpk_key(set_provider.secrets[pg_catalog.array_lower(set_provider.secrets, 1) + i - 1]) IS NULL THEN
                RAISE EXCEPTION 'pginbox: provider kind standardwebhooks: secret % of %: not the base64 of a 32-byte Ed25519 public key after the "whpk_" prefix', i, v_n
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
        ELSIF set_provider.kind = 'standardwebhooks' THEN
            v_key := webhooks._whsec_key(set_provider.secrets[pg_catalog.array_lower(set_provider.secrets, 1) + i - 1]);
            IF v_key IS NULL THEN
                RAISE EXCEPTION 'pginbox: provider kind standardwebhooks: secret % of %: not base64 after the optional "whsec_" prefix', i, v_n
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF v_key = ''::bytea THEN
                RAISE EXCEPTION 'pginbox: provider kind standardwebhooks: secret % of %: empty after the "whsec_" prefix', i, v_n
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
        END IF;
    END LOOP;

    IF v_signs_url THEN
        IF coalesce(set_provider.url, '') = '' THEN
            RAISE EXCEPTION 'pginbox: provider kind %: the notification URL is required', set_provider.kind
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'The kind signs "<notification URL><body>": pass the exact URL registered at the provider as url.';
        END IF;
        IF set_provider.url !~ c_url OR pg_catalog.octet_length(set_provider.url) > 2048 THEN
            RAISE EXCEPTION 'pginbox: provider kind %: url "%" is not an absolute http(s) URL without a fragment', set_provider.kind, set_provider.url
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF set_provider.url IS NOT NULL THEN
        RAISE EXCEPTION 'pginbox: provider kind %: its signature covers no URL; pass url NULL', set_provider.kind
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    LOCK TABLE webhooks.provider_secrets IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM webhooks.provider_secrets AS s
    WHERE s.provider = set_provider.provider
      AND NOT s.secret = ANY (set_provider.secrets);
    INSERT INTO webhooks.provider_secrets AS s (provider, kind, secret, url)
    SELECT DISTINCT set_provider.provider, set_provider.kind, x.secret, set_provider.url
    FROM pg_catalog.unnest(set_provider.secrets) AS x(secret)
    ON CONFLICT ON CONSTRAINT provider_secrets_pkey DO UPDATE
        SET kind = excluded.kind, url = excluded.url
        WHERE s.kind IS DISTINCT FROM excluded.kind OR s.url IS DISTINCT FROM excluded.url;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.set_provider(text, text, text[], text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.set_provider(text, text, text[], text) IS
  'Configures a provider for webhooks.ingest_signed(): its kind (a row of webhooks.provider_kinds) and the complete list of secrets it accepts (rotation: several), replacing the previous list. '
  'Validates every secret first (not NULL or empty; standardwebhooks: base64 after an optional whsec_ '
  'prefix, or a whpk_ Ed25519 public key); errors name a secret by position, never by value. Pass the secrets as a bind parameter. '
  'url: the exact URL the provider was given, required for square (signed with the body), NULL for the other kinds.';
-- end sql/src/admin/set_provider.sql
-- set_provider gained url (DEFAULT NULL): the roles that could execute the
-- old signature may execute the new one, then the old one goes (a call with
-- three arguments would otherwise match both).
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
        WHERE p.oid = 'webhooks.set_provider(text, text, text[])'::pg_catalog.regprocedure
          AND a.privilege_type = 'EXECUTE'
          AND a.grantee <> p.proowner
        ORDER BY r.rolname
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION webhooks.set_provider(text, text, text[], text) TO %I', v_role);
    END LOOP;
END;
$$;
-- +goose StatementEnd

DROP FUNCTION webhooks.set_provider(text, text, text[]);
