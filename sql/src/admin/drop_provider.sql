-- +goose StatementBegin
-- webhooks.drop_provider removes a provider's secrets: ingest_signed() then
-- refuses its deliveries as an unknown provider. Events already stored stay.
-- Returns whether the provider was configured.
CREATE OR REPLACE FUNCTION webhooks.drop_provider(provider text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_n bigint;
BEGIN
    PERFORM webhooks._require_text('provider', drop_provider.provider, 64);
    LOCK TABLE webhooks.provider_secrets IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM webhooks.provider_secrets AS s WHERE s.provider = drop_provider.provider;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n > 0;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks.drop_provider(text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks.drop_provider(text) IS
  'Removes a provider''s secrets, so webhooks.ingest_signed() refuses its deliveries as an unknown '
  'provider (events already stored stay). Returns whether the provider was configured.';
