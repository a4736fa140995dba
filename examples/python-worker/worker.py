#!/usr/bin/python3
"""A pginbox worker in Python with Debian's python3-psycopg2 and nothing else.

It claims events with webhooks.claim() in a transaction of its own, then
handles each event in ONE transaction with webhooks.complete(): the
application's write (a row in app.processed_jobs) commits if and only if the
event is marked processed. complete() is fenced on (event, worker, attempt):
when it returns false the lease was lost (another worker owns the event now)
and the transaction is rolled back, so the write never happens twice. A
handler exception rolls back the write and records the failure with
webhooks.fail() (retried with backoff, dead after max_attempts).

    DATABASE_URL=postgres://app@db/app /usr/bin/python3 worker.py            # run until SIGTERM
    DATABASE_URL=postgres://app@db/app /usr/bin/python3 worker.py --once     # drain and exit

The demo handler understands two payload members, for tests and experiments:
"fail": "<message>" raises, "sleep": <seconds> sleeps after its write (a
slow handler whose lease may be taken over meanwhile).
"""

import argparse
import json
import os
import signal
import socket
import sys
import time

import psycopg2
import psycopg2.extras

SETUP_SQL = """
CREATE SCHEMA IF NOT EXISTS app;
CREATE TABLE IF NOT EXISTS app.processed_jobs (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     bigint      NOT NULL,
    provider     text        NOT NULL,
    external_id  text        NOT NULL,
    event_type   text        NOT NULL,
    status       text,
    worker       text        NOT NULL,
    attempt      integer     NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);
"""
# No unique key on purpose: fencing, not a constraint, keeps the rows unique,
# and the tests count them to prove it. A real application would add one.

CLAIM_SQL = """
SELECT id, provider, external_id, event_type, payload, attempts
FROM webhooks.claim(%s, %s, %s::interval)
ORDER BY id
"""


class Stop:
    """Set by SIGTERM/SIGINT: finish the event in hand, release the rest."""

    requested = False


def log(msg):
    print(f"worker: {msg}", file=sys.stderr, flush=True)


def handle(cur, ev, worker):
    """The application's work for one event, inside the event's transaction."""
    payload = ev["payload"] or {}
    if payload.get("fail"):
        raise RuntimeError(str(payload["fail"]))
    cur.execute(
        """INSERT INTO app.processed_jobs (event_id, provider, external_id, event_type, status, worker, attempt)
           VALUES (%s, %s, %s, %s, %s, %s, %s)""",
        (ev["id"], ev["provider"], ev["external_id"], ev["event_type"],
         payload.get("status"), worker, ev["attempts"]),
    )
    if payload.get("sleep"):
        time.sleep(float(payload["sleep"]))


def setup(conn):
    with conn, conn.cursor() as cur:
        # Several workers may start at once: CREATE ... IF NOT EXISTS is not
        # safe against itself, so take a transaction-scoped lock first.
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('pginbox-python-worker-setup'))")
        cur.execute(SETUP_SQL)


def claim(conn, worker, batch, lease):
    # Its own transaction: once this commits the claim holds, and the work
    # happens outside it.
    with conn, conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
        cur.execute(CLAIM_SQL, (worker, batch, lease))
        return cur.fetchall()


def process(conn, ev, worker):
    """Handles one claimed event; returns 'processed', 'lost' or the status fail() set."""
    try:
        with conn.cursor() as cur:  # psycopg2 opens the transaction on the first statement
            handle(cur, ev, worker)
            cur.execute("SELECT webhooks.complete(%s, %s, %s)", (ev["id"], worker, ev["attempts"]))
            completed = cur.fetchone()[0]
        if not completed:
            # The lease expired and the event was rescued or re-claimed:
            # someone else owns it now. Undo our write.
            conn.rollback()
            log(f"event {ev['id']}: lease lost (attempt {ev['attempts']}), rolled back")
            return "lost"
        conn.commit()
        return "processed"
    except Exception as exc:  # the handler failed: undo its writes, record the failure
        conn.rollback()
        error = f"{type(exc).__name__}: {exc}"
        with conn, conn.cursor() as cur:
            cur.execute("SELECT webhooks.fail(%s, %s, %s, %s)", (ev["id"], worker, ev["attempts"], error))
            status = cur.fetchone()[0]  # pending (retried later), dead, or NULL: lease lost
        log(f"event {ev['id']}: failed (attempt {ev['attempts']}): {error} -> {status or 'lease lost'}")
        return status or "lost"


def release(conn, events, worker):
    """Hands claimed but unstarted events back (fenced), so others run them now."""
    with conn, conn.cursor() as cur:
        for ev in events:
            cur.execute("SELECT webhooks.release(%s, %s, %s)", (ev["id"], worker, ev["attempts"]))


def run(args):
    counts = {"processed": 0, "failed": 0, "dead": 0, "lost": 0, "released": 0}
    conn = psycopg2.connect(args.database_url, application_name="pginbox-python-worker")
    try:
        setup(conn)
        while not Stop.requested:
            events = claim(conn, args.worker, args.batch, args.lease)
            if not events:
                if args.once:
                    break
                time.sleep(args.poll)  # a real deployment could LISTEN webhooks_events too
                continue
            for i, ev in enumerate(events):
                if Stop.requested:
                    release(conn, events[i:], args.worker)
                    counts["released"] += len(events) - i
                    break
                outcome = process(conn, ev, args.worker)
                if outcome == "pending":
                    counts["failed"] += 1
                else:
                    counts[outcome] += 1
    finally:
        conn.close()
    return counts


def main(argv=None):
    p = argparse.ArgumentParser(description="A pginbox worker: claim, handle, complete with fencing.")
    p.add_argument("--database-url", default=os.environ.get("DATABASE_URL"), help="default: $DATABASE_URL")
    p.add_argument("--worker", default=f"python:{socket.gethostname()}:{os.getpid()}",
                   help="this worker's name: the fencing identity (default python:<host>:<pid>)")
    p.add_argument("--batch", type=int, default=10, help="events claimed at once (default 10)")
    p.add_argument("--lease", default="5 minutes", help="lease of a claim, a Postgres interval (default '5 minutes')")
    p.add_argument("--poll", type=float, default=1.0, help="seconds between claims when idle (default 1)")
    p.add_argument("--once", action="store_true", help="drain what is claimable now, then exit")
    args = p.parse_args(argv)
    if not args.database_url:
        p.error("set DATABASE_URL or pass --database-url")

    def on_signal(signum, _frame):
        if Stop.requested:
            sys.exit(1)  # a second signal: now
        Stop.requested = True
        log(f"signal {signum}: finishing the event in hand")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    counts = run(args)
    print(json.dumps(counts, sort_keys=True), flush=True)  # one line: what this run did
    return 0


if __name__ == "__main__":
    sys.exit(main())
