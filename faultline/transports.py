"""The kombu transport each broker URL scheme loads, so preflight and tests can import them ahead of time.

A transport is imported only when the worker first connects; a dependency it needs but does not
declare (kombu's Redis transport and `packaging`) would otherwise surface as a crash minutes after
start-up, and only on the deployments that use that broker.
"""

from __future__ import annotations

import importlib

BROKER_TRANSPORT_MODULES: dict[str, str] = {
    "filesystem": "kombu.transport.filesystem",
    "redis": "kombu.transport.redis",
    "rediss": "kombu.transport.redis",
    "amqp": "kombu.transport.pyamqp",
    "amqps": "kombu.transport.pyamqp",
    "pyamqp": "kombu.transport.pyamqp",
}


def transport_module(broker_url: str) -> str:
    scheme = broker_url.split("://", 1)[0].lower()
    return BROKER_TRANSPORT_MODULES[scheme]


def import_transport(broker_url: str) -> str:
    """Imports the transport for this URL; returns its module name (ImportError when it cannot load)."""
    name = transport_module(broker_url)
    importlib.import_module(name)
    return name
