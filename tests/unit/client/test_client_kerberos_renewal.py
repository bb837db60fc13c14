"""When a kinit ticket cache is renewed (Java's KerberosLogin schedule), and the ticket times read from klist."""

from __future__ import annotations

from datetime import datetime, timezone

from kafka_spark.client.auth.gssapi.renewal import TicketTimes, renewal_time, tgt_times

KLIST = """Ticket cache: FILE:/tmp/cc
Default principal: alice@EXAMPLE.COM

Valid starting     Expires            Service principal
11/26/26 00:33:36  11/26/26 10:33:36  krbtgt/OTHER.COM@EXAMPLE.COM
11/26/26 00:33:38  11/26/26 10:33:38  krbtgt/EXAMPLE.COM@EXAMPLE.COM
\trenew until 12/03/26 00:33:36
11/26/26 00:33:40  11/26/26 10:33:38  kafka/localhost@EXAMPLE.COM
"""


def _at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def test_the_realms_own_ticket_granting_ticket_is_read():
    assert tgt_times(KLIST) == TicketTimes(_at("2026-11-26 00:33:38"), _at("2026-11-26 10:33:38"),
                                           _at("2026-12-03 00:33:36"))


def test_a_ticket_that_is_not_renewable_and_a_cache_without_one():
    plain = "Valid starting     Expires            Service principal\n" \
            "01/02/27 03:04:05  01/02/27 04:04:05  krbtgt/R@R\n"
    assert tgt_times(plain) == TicketTimes(_at("2027-01-02 03:04:05"), _at("2027-01-02 04:04:05"), None)
    assert tgt_times("klist: No credentials cache found (filename: /tmp/none)\n") is None
    assert tgt_times(KLIST.replace("krbtgt/EXAMPLE.COM@", "krbtgt/ELSEWHERE@")) is None


def test_renewal_at_the_window_of_the_tickets_life():
    ticket = TicketTimes(1000.0, 11000.0, 100000.0)
    assert renewal_time(ticket, 0.8, 60.0, None, 1000.0) == 9000.0
    assert renewal_time(ticket, 0.85, 60.0, None, 1000.0) == 9500.0


def test_not_within_the_minimum_wait_of_the_last_try_unless_the_ticket_ends_first():
    ticket = TicketTimes(1000.0, 11000.0, 100000.0)
    assert renewal_time(ticket, 0.8, 60.0, 8990.0, 9000.0) == 9050.0
    assert renewal_time(ticket, 0.8, 3000.0, 8990.0, 9000.0) == 9000.0  # waiting would let it expire
    # a window past the end (a factor near 1 with jitter) renews now
    assert renewal_time(TicketTimes(0.0, 10.0, None), 1.05, 60.0, None, 5.0) == 5.0
