-- +goose Up
-- begin sql/src/recover/_url_origin.sql (make sql-migrations wrote what follows from that file: edit it, not this)
-- +goose StatementBegin
-- webhooks._url_origin returns the origin of an absolute http(s) URL as
-- 'scheme://host:port', normalised so that equal origins compare equal: the
-- scheme and host in lower case (ASCII), the default port made explicit
-- (http 80, https 443), leading zeros of the port dropped, any userinfo
-- ("user:pass@") removed, as a URL parser does: 'https://good@evil/' is on
-- evil. NULL for anything else: another scheme, no host, a port that is not a
-- number from 1 to 65535, a host with characters other than letters, digits
-- and ._~%- (or a bracketed IPv6 address), whitespace or control characters
-- anywhere. expect() compares status_url origins with it.
CREATE OR REPLACE FUNCTION webhooks._url_origin(url text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_m      text[];
    v_scheme text;
    v_auth   text;
    v_host   text;
    v_port   text;
BEGIN
    IF _url_origin.url IS NULL OR _url_origin.url ~ '[[:space:][:cntrl:]]' THEN
        RETURN NULL;
    END IF;
    v_m := pg_catalog.regexp_match(_url_origin.url, '^([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)');
    IF v_m IS NULL THEN
        RETURN NULL;
    END IF;
    v_scheme := pg_catalog.lower(v_m[1]);
    IF v_scheme NOT IN ('http', 'https') THEN
        RETURN NULL;
    END IF;
    v_auth := pg_catalog.regexp_replace(v_m[2], '^.*@', '');
    v_m := pg_catalog.regexp_match(v_auth, '^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~%-]+)(:([0-9]*))?$');
    IF v_m IS NULL THEN
        RETURN NULL;
    END IF;
    v_host := pg_catalog.translate(v_m[1], 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
    v_port := coalesce(v_m[3], '');
    IF v_port = '' THEN
        v_port := CASE v_scheme WHEN 'http' THEN '80' ELSE '443' END;
    ELSIF pg_catalog.length(pg_catalog.ltrim(v_port, '0')) > 5
          OR pg_catalog.ltrim(v_port, '0') = ''
          OR pg_catalog.ltrim(v_port, '0')::integer > 65535 THEN
        RETURN NULL;
    ELSE
        v_port := pg_catalog.ltrim(v_port, '0');
    END IF;
    RETURN v_scheme || '://' || v_host || ':' || v_port;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION webhooks._url_origin(text) FROM PUBLIC;

COMMENT ON FUNCTION webhooks._url_origin(text) IS
  'Private (expect): the origin of an absolute http(s) URL as scheme://host:port, lower-cased, default port '
  'explicit (80/443), userinfo dropped; NULL when url is not an absolute http(s) URL with a valid host and port.';
-- end sql/src/recover/_url_origin.sql
