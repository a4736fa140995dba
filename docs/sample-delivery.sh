# A correctly signed sample Sume delivery for `make run` (secret demo-secret-change-me).
# Paste into a shell, or run: bash docs/sample-delivery.sh [job_id]
job="${1:-job_$RANDOM}"; ts=$(date +%s); body="{\"job_id\":\"$job\",\"event\":\"job.completed\",\"status\":\"COMPLETED\"}"; sig=$(printf '%s.%s' "$ts" "$body" | openssl dgst -sha256 -hmac "${PGINBOX_SECRET_SUME:-demo-secret-change-me}" -hex | sed 's/^.* //'); curl -sS -X POST "http://${PGINBOX_ADDR:-127.0.0.1:8080}/webhooks/sume" -H 'Content-Type: application/json' -H "X-Sume-Timestamp: $ts" -H "X-Sume-Signature: v1=$sig" -d "$body"; echo
