"""The PostgreSQL test DSN keeps every setting the tests add to it (``pgsupport.with_options``), in each form
libpq reads: a URL, and key=value with the options value quoted or as one bare word. A setting dropped there
is a schema every gateway of a module would share with every other test."""

from __future__ import annotations

import pytest

from .pgsupport import with_options


@pytest.mark.parametrize(("dsn", "expected"), [
    ("host=db dbname=test", "host=db dbname=test options='-c search_path=s1'"),
    ("host=db options='-c a=1' dbname=test", "host=db options='-c a=1 -c search_path=s1' dbname=test"),
    ("host=db options=-ca=1 dbname=test", "host=db options='-ca=1 -c search_path=s1' dbname=test"),
    ("postgresql://u@db/test", "postgresql://u@db/test?options=-c%20search_path%3Ds1"),
    ("postgresql://u@db/test?options=-c%20a%3D1", "postgresql://u@db/test?options=-c%20a%3D1%20-c%20search_path%3Ds1"),
])
def test_a_setting_is_added_after_those_the_dsn_has(dsn: str, expected: str) -> None:
    assert with_options(dsn, "-c search_path=s1") == expected
