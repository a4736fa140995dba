package sig

// IdentifyBody is the rule of the kinds whose key and event type are
// top-level members of the signed body (stripe: id and type; paddle:
// event_id and event_type; square: event_id and type): a body without the
// key member is a 400 (idempotency key missing), a key or type that cannot
// be stored is a 400 with its reason, and the key is signed.
func IdentifyBody(body []byte, keyMember, typeMember string) (Delivery, error) {
	env, err := ReadEnvelope(body)
	if err != nil {
		return Delivery{}, err
	}
	if !env.Has(keyMember) {
		return Delivery{}, BadRequest(ReasonKeyMissing)
	}
	key, err := env.Key(keyMember)
	if err != nil {
		return Delivery{}, err
	}
	t, _ := env.Str(typeMember)
	if t, err = EventType(t); err != nil {
		return Delivery{}, err
	}
	return Delivery{ExternalID: key, EventType: t, Payload: body, KeySigned: true}, nil
}
