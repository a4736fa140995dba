// Package status holds the read-only queries that the operators' surfaces
// share: the console (its overview and /api/status), the metrics (/metrics)
// and the CLI (`pginbox gaps`, `pginbox ordering`). One query per question,
// so the three answer alike:
//
//   - the queue: events pending, processing and dead, and how long the
//     oldest claimable one has waited ([ReadQueue]);
//   - the gaps: expectations past their deadline with no event and no
//     tombstone ([FindGaps], over webhooks.find_gaps);
//   - ordered processing per key: each ordered provider's settings
//     (webhooks.ordering), its blocked sequences (webhooks.blocked_sequences:
//     a head that fails, or is dead while dead_blocks, and the events
//     waiting behind it) and how many of its events were processed out of
//     order ([ReadOrdering], [ReadOrderCounts]).
//
// Nothing here writes, and nothing here knows about providers' APIs: a
// surface that reads a status imports this package, not the parts that act
// on what it shows (backfill, the metrics registry).
package status
