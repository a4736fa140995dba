-- +goose StatementBegin
-- webhooks._payload_time finds when the provider says an event happened, from
-- the first of the top-level fields keys (by default timestamp, occurred_at,
-- created, created_at: event times first, then created_at, which in
-- resource-shaped payloads such as Shopify's is the resource's own creation
-- time) that holds a string or a number:
--   * a number, or a string of 9 to 13 digits, is Unix time in seconds (Stripe's
--     created) or, from 10^12 on, in milliseconds; outside 2001..2286 it is
--     not a time and the answer is NULL;
--   * a string is read when it is an RFC 3339 date-time,
--     YYYY-MM-DD(T| )hh:mm:ss[.fraction][Z|+hh:mm|+hhmm|+hh], or a date
--     YYYY-MM-DD; one without a zone is read in the session's TimeZone (hence
--     STABLE).
-- Anything else gives NULL, never an error: the payload view calls it on every
-- event of the last hour, and one odd payload must not break a refresh. The
-- string is validated field by field (the day against its month, the zone
-- offset up to 15:59) with plain string functions before the cast: catching
-- the cast's error would cost a subtransaction per event and a regular
-- expression several times the cast itself.
CREATE OR REPLACE FUNCTION webhooks._payload_time(
    payload jsonb,
    keys    text[] DEFAULT ARRAY['timestamp', 'occurred_at', 'created', 'created_at']
)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
AS $$
DECLARE
    v_key   text;
    v_raw   jsonb;
    v_text  text;
    v_shape text;
    v_tail  text;
    v_num   numeric;
    v_month integer;
BEGIN
    IF payload IS NULL OR jsonb_typeof(payload) <> 'object' THEN
        RETURN NULL;
    END IF;
    FOREACH v_key IN ARRAY coalesce(keys, '{}') LOOP
        v_raw := payload -> v_key;
        CONTINUE WHEN v_raw IS NULL OR jsonb_typeof(v_raw) NOT IN ('string', 'number');
        v_text := v_raw #>> '{}';
        -- Every digit becomes 0, so the shape is compared as a plain string.
        v_shape := translate(v_text, '123456789tT', '000000000  ');

        IF jsonb_typeof(v_raw) = 'number'
           OR (length(v_text) BETWEEN 9 AND 13 AND v_shape = repeat('0', length(v_text))) THEN
            v_num := v_text::numeric;
            IF v_num >= 1e12 THEN
                v_num := v_num / 1000;
            END IF;
            IF v_num BETWEEN 1e9 AND 1e10 THEN
                RETURN to_timestamp(v_num::double precision);
            END IF;
            RETURN NULL;
        END IF;

        IF length(v_text) > 40 OR left(v_shape, 10) <> '0000-00-00' THEN
            RETURN NULL;
        END IF;
        v_month := substr(v_text, 6, 2)::integer;
        IF left(v_text, 4)::integer = 0 OR v_month NOT BETWEEN 1 AND 12
           OR substr(v_text, 9, 2)::integer NOT BETWEEN 1 AND
              extract(day FROM make_date(left(v_text, 4)::integer, v_month, 1) + interval '1 month - 1 day') THEN
            RETURN NULL; -- e.g. 2024-02-30
        END IF;
        IF length(v_text) = 10 THEN
            RETURN v_text::timestamptz;
        END IF;

        IF substr(v_shape, 11, 9) <> ' 00:00:00'
           OR substr(v_text, 12, 2)::integer > 23
           OR substr(v_text, 15, 2)::integer > 59
           OR substr(v_text, 18, 2)::integer > 60 THEN
            RETURN NULL;
        END IF;
        v_tail := substr(v_text, 20);
        IF left(v_tail, 1) = '.' THEN
            v_tail := ltrim(substr(v_tail, 2), '0123456789');
            IF v_tail = substr(v_text, 21) THEN
                RETURN NULL; -- a dot without digits
            END IF;
        END IF;
        IF v_tail IN ('', 'Z', 'z')
           OR (translate(v_tail, '123456789', '000000000') IN ('+00:00', '-00:00', '+0000', '-0000', '+00', '-00')
               AND substr(v_tail, 2, 2)::integer <= 15
               AND coalesce(nullif(right(ltrim(substr(v_tail, 4), ':'), 2), '')::integer, 0) <= 59) THEN
            RETURN v_text::timestamptz;
        END IF;
        RETURN NULL;
    END LOOP;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION webhooks._payload_time(jsonb, text[]) IS
  'Private: the time a payload states in the first of its top-level fields keys (default timestamp, occurred_at, '
  'created, created_at) holding Unix seconds or milliseconds or an RFC 3339 date-time or date; NULL when absent '
  'or not a valid, plausible time. Never raises.';
REVOKE EXECUTE ON FUNCTION webhooks._payload_time(jsonb, text[]) FROM PUBLIC;
