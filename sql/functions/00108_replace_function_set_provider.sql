-- +goose Up
-- begin sql/src/admin/set_provider.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks.set_provider configures (or reconfigures) a provider for
-- ingest_signed(): its kind and the full list of secrets it accepts, replacing
-- the previous list. To rotate, set [new, old], switch the provider over, then
-- set [new]. Secrets kept from one call to the next keep their created_at.
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
    secrets  text[]
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    c_kinds CONSTANT text[] := ARRAY['github', 'paddle', 'shopify', 'standardwebhooks', 'stripe', 'sume'];
    v_n     integer;
    v_key   bytea;
BEGIN
    PERFORM webhooks._require_text('provider', set_provider.provider, 64);
    IF set_provider.kind IS NULL OR NOT set_provider.kind = ANY (c_kinds) THEN
        RAISE EXCEPTION 'pginbox: unknown provider kind "%" (supported: %)',
            coalesce(set_provider.kind, 'NULL'), pg_catalog.array_to_string(c_kinds, ', ')
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

    LOCK TABLE webhooks.provider_secrets IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM webhooks.provider_secrets AS s
    WHERE s.provider = set_provider.provider
      AND NOT s.secret = ANY (set_provider.secrets);
    INSERT INTO webhooks.provider_secrets AS s (provider, kind, secret)
    SELECT DISTINCT set_provider.provider, set_provider.kind, x.secret
    FROM pg_catalog.unnest(set_provider.secrets) AS x(secret)
    ON CONFLICT ON CONSTRAINT provider_secrets_pkey DO UPDATE
        SET kind = excluded.kind
        WHERE s.kind IS DISTINCT FROM excluded.kind;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.set_provider(text, text, text[]) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.set_provider(text, text, text[]) IS
  'Configures a provider for webhooks.ingest_signed(): its kind (sume, stripe, github, standardwebhooks, '
  'shopify, paddle) and the complete list of secrets it accepts (rotation: several), replacing the previous list. '
  'Validates every secret first (not NULL or empty; standardwebhooks: base64 after an optional whsec_ '
  'prefix, or a whpk_ Ed25519 public key); errors name a secret by position, never by value. Pass the secrets as a bind parameter.';
-- end sql/src/admin/set_provider.sql
