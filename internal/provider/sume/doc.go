// Package sume is the provider kind sume: the webhooks that report the end
// of a Sume job (job.completed, job.failed, job.canceled), signed with the
// signing secret as the v1 entries of X-Sume-Signature over
// "<X-Sume-Timestamp>.<raw body>"; and the client of Sume's job status API
// ([StatusAPI]), which backfill asks about a job whose webhook never came.
package sume
