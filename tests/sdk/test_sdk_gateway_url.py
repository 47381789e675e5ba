"""``Meta.connect`` with a URL that cannot name a gateway is refused at once, naming the rule."""

from __future__ import annotations

import pytest

from meta_memory import Meta
from meta_memory.errors import ConfigError


@pytest.mark.parametrize("url", ["localhost:8765", "127.0.0.1:8765", "ftp://127.0.0.1:8765", "http://", ""])
def test_a_url_without_http_scheme_and_host_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="must start with http:// or https:// and name a host"):
        Meta.connect(url)
    with pytest.raises(ConfigError, match="must start with http:// or https://"):
        Meta.connect_async(url)


def test_a_well_formed_url_is_accepted_without_a_call() -> None:
    Meta.connect(" http://127.0.0.1:1/ ").close()  # nothing is sent until a method is called
